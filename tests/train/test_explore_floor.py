"""The exploration floor (``--explore-floor``): a loss penalty that keeps the siphon and the
program actions sampled at a minimum rate wherever they are valid (ppo.floor_penalty)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hackmatrix_env.constants import NUM_ACTIONS, Action
from hackmatrix_train.cli.train import build_parser, config_from_args
from hackmatrix_train.config import validate
from hackmatrix_train.ppo import floor_penalty
from hackmatrix_train.schedules import (
    entropy_coef,
    explore_floor,
    explore_weight,
    make_schedule,
    update_learning_rate,
)
from hackmatrix_train.trainer import make_train
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from train.recipes import plain_ppo
from train.train_probes import ProbeParams, ProbeSuite

SIPHON = int(Action.SIPHON)
FIRST_PROGRAM = int(Action.PUSH)


def _reference(logits: np.ndarray, mask: np.ndarray, floor: float) -> float:
    """The penalty from its definition, in float64 numpy, one sample at a time."""
    total = 0.0
    for row, valid in zip(logits.astype(np.float64), mask, strict=True):
        if not valid.any():
            continue  # no valid action at all: neither group is valid
        p = np.where(valid, np.exp(row - row[valid].max()), 0.0)
        p /= p.sum()
        for group in ((SIPHON,), tuple(range(FIRST_PROGRAM, NUM_ACTIONS))):
            idx = list(group)
            if valid[idx].any():
                total += max(np.log(floor) - np.log(p[idx].sum()), 0.0)
    return total / len(logits)


@settings(max_examples=60, deadline=None)
@given(
    logits=arrays(np.float32, (6, NUM_ACTIONS), elements=st.floats(-8, 8, width=32)),
    mask=arrays(np.bool_, (6, NUM_ACTIONS)),
    floor=st.floats(0.001, 0.5),
)
def test_floor_penalty_matches_its_definition(logits, mask, floor):
    got = float(floor_penalty(jnp.asarray(logits), jnp.asarray(mask), floor))
    np.testing.assert_allclose(got, _reference(logits, mask, floor), rtol=1e-4, atol=1e-4)
    assert got >= 0.0


def test_penalty_is_zero_above_the_floor_and_positive_below():
    logits = jnp.zeros((1, NUM_ACTIONS))  # uniform: P(siphon) = 1/28, P(programs) = 23/28
    mask = jnp.ones((1, NUM_ACTIONS), bool)
    assert float(floor_penalty(logits, mask, 0.03)) == 0.0
    np.testing.assert_allclose(
        float(floor_penalty(logits, mask, 0.05)), np.log(0.05 * 28), rtol=1e-5
    )
    # an invalid group never counts, however improbable it is
    no_siphon = mask.at[0, SIPHON].set(False)
    low = logits.at[0, SIPHON].set(-50.0)
    assert float(floor_penalty(low, no_siphon, 0.03)) == 0.0
    assert float(floor_penalty(low, mask, 0.03)) > 40.0


def test_gradient_has_unit_slope_on_an_unlearned_action_and_stays_finite():
    """Unlike an entropy bonus, the push does not vanish with the action's probability."""
    mask = jnp.ones((2, NUM_ACTIONS), bool).at[1].set(False)  # row 1: nothing valid
    logits = jnp.zeros((2, NUM_ACTIONS)).at[0, SIPHON].set(-30.0)
    grad = jax.grad(floor_penalty)(logits, mask, 0.01)
    assert np.isfinite(np.asarray(grad)).all()
    np.testing.assert_allclose(float(grad[0, SIPHON]), -0.5, rtol=1e-4)  # -(1 - q) / batch
    assert (np.asarray(grad[1]) == 0).all()

    def entropy(lg):
        p = jax.nn.softmax(lg[0])
        return -(p * jnp.log(p)).sum()

    assert abs(float(jax.grad(entropy)(logits)[0, SIPHON])) < 1e-9


def _train_siphon_prob(coef: float, steps: int = 400) -> float:
    """Adam on free logits: a policy-gradient-like push drives the siphon logit down; the floor
    (weight ``coef``) resists. Returns the final P(siphon)."""
    mask = jnp.ones((16, NUM_ACTIONS), bool)
    logits = jax.random.normal(jax.random.key(0), (16, NUM_ACTIONS))
    tx = optax.adam(0.05)

    def loss(lg):
        return lg[:, SIPHON].mean() + coef * floor_penalty(lg, mask, 0.05)

    def step(carry, _):
        lg, opt = carry
        updates, opt = tx.update(jax.grad(loss)(lg), opt, lg)
        return (optax.apply_updates(lg, updates), opt), None

    (logits, _), _ = jax.lax.scan(step, (logits, tx.init(logits)), None, steps)
    return float(jax.nn.softmax(logits)[:, SIPHON].mean())


def test_floor_holds_an_action_the_loss_pushes_out():
    assert _train_siphon_prob(coef=0.0) < 1e-4
    assert 0.03 < _train_siphon_prob(coef=2.0) < 0.08  # held near the 0.05 floor


def test_floor_schedule():
    off = plain_ppo(explore_floor=0.0, explore_floor_end=None)
    assert explore_floor(off, make_schedule(off, 10), jnp.int32(3)) is None
    const = plain_ppo(explore_floor=0.02, explore_floor_end=None, explore_floor_start=0.0)
    assert float(explore_floor(const, make_schedule(const, 10), jnp.int32(7))) == pytest.approx(
        0.02
    )
    ramp = plain_ppo(explore_floor=0.02, explore_floor_end=0.0, explore_floor_start=0.0)
    assert float(explore_floor(ramp, make_schedule(ramp, 10), jnp.int32(5))) == pytest.approx(0.01)
    assert float(explore_floor(ramp, make_schedule(ramp, 10), jnp.int32(10))) == pytest.approx(0.0)


def test_floor_starts_after_its_fraction_of_the_run_then_anneals_over_the_rest():
    cfg = plain_ppo(explore_floor=0.02, explore_floor_end=0.0, explore_floor_start=0.6)
    values = [float(explore_floor(cfg, make_schedule(cfg, 10), jnp.int32(u))) for u in range(11)]
    assert values[:6] == [0.0] * 6  # updates 0..5: off
    assert values[6] == pytest.approx(0.02)  # switched on at 60 % of the run
    assert values[8] == pytest.approx(0.01)  # halfway through the remaining 4 updates
    assert values[10] == pytest.approx(0.0)


def test_penalty_weight_is_a_step_by_default_and_ramps_in_when_asked():
    step = plain_ppo(explore_floor=0.02, explore_floor_start=0.6, explore_coef=0.3)
    ramp = step.replace(explore_floor_ramp=0.2)  # 2 of 10 updates

    def weights(cfg):
        return [
            float(explore_weight(cfg, sched, jnp.int32(u), explore_floor(cfg, sched, jnp.int32(u))))
            for sched in [make_schedule(cfg, 10)]
            for u in range(10)
        ]

    assert weights(step) == pytest.approx([0.0] * 6 + [0.3] * 4)
    assert weights(ramp) == pytest.approx([0.0] * 6 + [0.15, 0.3, 0.3, 0.3])
    # the weight never exceeds --explore-coef and never precedes the floor
    long_ramp = step.replace(explore_floor_ramp=0.4, explore_floor_start=0.2)
    w = weights(long_ramp)
    assert w[:2] == [0.0, 0.0] and w == sorted(w) and max(w) == pytest.approx(0.3)


def test_a_zero_floor_adds_no_loss_and_no_gradient():
    logits = jnp.array([[0.0, -50.0, 3.0] + [-80.0] * 25])
    mask = jnp.ones((1, 28), bool)
    grad = jax.grad(lambda lg: floor_penalty(lg, mask, jnp.float32(0.0)))(logits)
    assert float(floor_penalty(logits, mask, jnp.float32(0.0))) == 0.0
    assert not np.any(np.asarray(grad)) and np.all(np.isfinite(np.asarray(grad)))


@pytest.mark.parametrize(
    ("kw", "msg"),
    [
        ({"explore_floor": 1.0}, "--explore-floor"),
        ({"explore_floor": -0.1}, "--explore-floor"),
        ({"explore_floor": 0.02, "explore_floor_end": 1.5}, "--explore-floor-end"),
        ({"explore_floor": 0.0, "explore_floor_end": 0.01}, "needs --explore-floor"),
        ({"explore_floor_start": 1.0}, "--explore-floor-start"),
        ({"explore_floor": 0.02, "explore_coef": -1.0}, "--explore-coef"),
        ({"explore_floor": 0.02, "explore_floor_ramp": -0.1}, "--explore-floor-ramp"),
        (
            {"explore_floor": 0.02, "explore_floor_start": 0.6, "explore_floor_ramp": 0.5},
            "--explore-floor-ramp",
        ),
        ({"explore_floor": 0.0, "explore_floor_ramp": 0.1}, "ramp needs --explore-floor"),
    ],
)
def test_validate_rejects_bad_floors(kw, msg):
    with pytest.raises(ValueError, match=msg):
        validate(plain_ppo(**kw))


def test_cli_flags_reach_the_config():
    args = build_parser().parse_args(
        ["--explore-floor", "0.02", "--explore-floor-end", "0.001", "--explore-coef", "0.3",
         "--explore-floor-ramp", "0.1"]
    )  # fmt: skip
    cfg, explicit = config_from_args(args)
    assert (cfg.explore_floor, cfg.explore_floor_end, cfg.explore_coef) == (0.02, 0.001, 0.3)
    assert cfg.explore_floor_ramp == 0.1
    assert {"explore_floor", "explore_floor_end", "explore_coef", "explore_floor_ramp"} <= explicit
    assert plain_ppo().explore_floor == 0.0  # off by default: the reference PPO


def test_floor_needs_the_hackmatrix_action_space():
    cfg = plain_ppo(num_envs=4, num_steps=4, total_timesteps=64, explore_floor=0.02)
    with pytest.raises(ValueError, match="HackMatrix action space"):
        make_train(cfg, ProbeSuite(), ProbeParams(max_steps_in_episode=4))


@settings(max_examples=25, deadline=None)
@given(
    num_updates=st.integers(1, 5000),
    start=st.floats(0.0, 0.95),
    ramp=st.floats(0.0, 0.05),
    update=st.integers(0, 5000),
)
def test_schedule_given_as_traced_data_equals_the_host_schedule(num_updates, start, ramp, update):
    """The jitted chunk takes the Schedule as int32 data (one compilation for every run length):
    each schedule value equals the one with the host's Python ints compiled in (to float
    rounding: XLA may fuse a multiply-add or divide by a reciprocal either way)."""
    cfg = plain_ppo(
        explore_floor=0.02, explore_floor_end=0.001, explore_floor_start=start,
        explore_floor_ramp=ramp, ent_coef=0.02, ent_coef_end=0.002, anneal_lr=True,
    )  # fmt: skip
    host = make_schedule(cfg, num_updates)
    u = jnp.int32(min(update, num_updates))

    def values(sched, u):
        floor = explore_floor(cfg, sched, u)
        return (entropy_coef(cfg, sched, u), floor, explore_weight(cfg, sched, u, floor),
                update_learning_rate(cfg, sched, u))  # fmt: skip

    traced = jax.jit(values)(jax.tree.map(jnp.int32, host), u)
    baked = jax.jit(lambda u: values(host, u))(u)  # the run's length as compiled-in constants
    np.testing.assert_allclose(np.asarray(traced), np.asarray(baked), rtol=1e-5, atol=1e-9)
