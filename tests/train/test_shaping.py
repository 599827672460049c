"""The trainer's terms on owned programs: potential-based shaping and the kept bonus.

Each term is checked for its value on a real step, its sum over an episode, and for leaving the
game's rewards and returns canonical.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from builders import make_state
from hackmatrix_env import EnvParams, HackMatrix
from hackmatrix_env.constants import NUM_REWARD_COMPONENTS, Action, Program
from hackmatrix_train.cli.train import build_parser, config_from_args
from hackmatrix_train.config import validate
from hackmatrix_train.ppo import sample_actor
from hackmatrix_train.rollout import collect_rollout
from hackmatrix_train.schedules import make_schedule, program_bonus_coef
from hackmatrix_train.stats import (
    init_episode_acc,
    program_potential,
    shaping_term,
    track_episodes,
)
from hackmatrix_train.trainer import make_train
from hypothesis import given, settings
from hypothesis import strategies as st
from train.recipes import plain_ppo
from train.train_probes import ProbeParams, ProbeSuite

ENV = HackMatrix()
PARAMS = EnvParams()


def test_siphoning_a_program_block_earns_gamma_times_the_new_potential():
    state = make_state((2, 2), siphons=1, owned=["wait"], blocks=[("program", (3, 2), "push")])
    obs = ENV.get_obs(state, PARAMS)
    _, _, _, terminated, _, info = ENV.step(
        jax.random.key(0), state, jnp.int32(Action.SIPHON), PARAMS
    )
    final = info["final_observation"]
    assert int(obs.programs.sum()) == 1 and int(final.programs.sum()) == 2  # PUSH acquired
    phi = program_potential(2.0)
    got = shaping_term(phi, 0.99, obs, final, terminated)
    assert float(got) == pytest.approx(0.99 * 2.0 * 2 - 2.0 * 1)
    assert shaping_term(None, 0.99, obs, final, terminated) == 0.0
    assert program_potential(0.0) is None


def test_a_death_step_gives_back_the_potential():
    state = make_state((0, 0), hp=1, owned=["wait", "push"], enemies=[("virus", (1, 1))])
    obs = ENV.get_obs(state, PARAMS)
    _, _, _, terminated, _, info = ENV.step(
        jax.random.key(0), state, jnp.int32(Action.RIGHT), PARAMS
    )  # the virus steps next to the player and hits: hp 1 -> 0
    assert bool(terminated)
    got = shaping_term(program_potential(1.5), 0.99, obs, info["final_observation"], terminated)
    assert float(got) == pytest.approx(-1.5 * 2)


# an episode: the programs owned at each step, whether it ends by termination, and gamma
EPISODES = given(
    owned=st.lists(st.integers(0, 23), min_size=2, max_size=30),
    terminated=st.booleans(),
    gamma=st.sampled_from([1.0, 0.99, 0.5]),
)


class Owning:
    """An observation with only what the program terms read: ``n`` programs owned."""

    def __init__(self, n):
        self.programs = jnp.asarray([[1] * n + [0] * (23 - n)], jnp.int32)


@settings(max_examples=50, deadline=None)
@EPISODES
def test_an_episode_of_shaping_terms_telescopes(owned, terminated, gamma):
    """sum_t gamma^t F_t = gamma^T phi(s_T) [0 if terminated] - phi(s_0): no cycle can be farmed."""

    phi = program_potential(0.7)
    steps = len(owned) - 1
    total = 0.0
    for t in range(steps):
        last = t == steps - 1
        term = jnp.asarray([terminated and last])
        f = shaping_term(phi, gamma, Owning(owned[t]), Owning(owned[t + 1]), term)
        total += gamma**t * float(f[0])
    end = 0.0 if terminated else gamma**steps * 0.7 * owned[-1]
    assert total == pytest.approx(end - 0.7 * owned[0], abs=1e-4)


@settings(max_examples=50, deadline=None)
@EPISODES
def test_an_episode_of_bonus_terms_sums_to_what_it_ends_with(owned, terminated, gamma):
    """sum_t F_t = C (owned_T - owned_0), death or not: programs given back (UNDO) earn back
    nothing, and the programs an episode ends with are paid even when it ends by death."""

    bonus = program_potential(0.7)
    total = 0.0
    for t in range(len(owned) - 1):
        term = jnp.asarray([terminated and t == len(owned) - 2])
        total += float(
            shaping_term(None, gamma, Owning(owned[t]), Owning(owned[t + 1]), term, bonus)[0]
        )
    assert total == pytest.approx(0.7 * (owned[-1] - owned[0]), abs=1e-4)


def test_the_bonus_of_a_siphoned_program_is_kept_through_a_death():
    state = make_state((2, 2), siphons=1, owned=["wait"], blocks=[("program", (3, 2), "push")])
    obs = ENV.get_obs(state, PARAMS)
    _, _, _, terminated, _, info = ENV.step(
        jax.random.key(0), state, jnp.int32(Action.SIPHON), PARAMS
    )
    bonus = program_potential(3.0)
    got = shaping_term(None, 0.99, obs, info["final_observation"], terminated, bonus)
    assert float(got) == pytest.approx(3.0)  # PUSH acquired: one program more
    dying = make_state((0, 0), hp=1, owned=["wait", "push"], enemies=[("virus", (1, 1))])
    obs = ENV.get_obs(dying, PARAMS)
    _, _, _, terminated, _, info = ENV.step(
        jax.random.key(0), dying, jnp.int32(Action.RIGHT), PARAMS
    )
    assert bool(terminated)
    assert float(shaping_term(None, 0.99, obs, info["final_observation"], terminated, bonus)) == 0
    both = shaping_term(
        program_potential(1.5), 0.99, obs, info["final_observation"], terminated, bonus
    )
    assert float(both) == pytest.approx(-1.5 * 2)  # the potential alone is given back


@pytest.mark.parametrize("program, paid", [("undo", 0.0), ("push", 3.0)])
def test_the_bonus_that_skips_undo_pays_for_every_program_but_undo(program, paid):
    state = make_state((2, 2), siphons=1, owned=["wait"], blocks=[("program", (3, 2), program)])
    obs = ENV.get_obs(state, PARAMS)
    _, _, _, terminated, _, info = ENV.step(
        jax.random.key(0), state, jnp.int32(Action.SIPHON), PARAMS
    )
    final = info["final_observation"]
    assert int(final.programs.sum()) == 2  # the program was acquired
    got = shaping_term(None, 0.99, obs, final, terminated, program_potential(3.0, skip_undo=True))
    assert float(got) == pytest.approx(paid)
    counted = shaping_term(None, 0.99, obs, final, terminated, program_potential(3.0))
    assert float(counted) == pytest.approx(3.0)  # without skip_undo, UNDO is paid like any other


@settings(max_examples=50, deadline=None)
@given(owned=st.lists(st.booleans(), min_size=23, max_size=23), coef=st.floats(0.1, 5.0))
def test_the_potential_that_skips_undo_counts_the_other_programs(owned, coef):
    class Flags:
        programs = jnp.asarray([owned], jnp.int32)

    undo = owned[Program.UNDO]
    got = float(program_potential(coef, skip_undo=True)(Flags)[0])
    assert got == pytest.approx(coef * (sum(owned) - undo), rel=1e-5)
    assert float(program_potential(coef)(Flags)[0]) == pytest.approx(coef * sum(owned), rel=1e-5)


def test_skip_undo_is_a_flag_that_needs_a_program_term():
    cfg, explicit = config_from_args(
        build_parser().parse_args(["--program-bonus", "2", "--program-terms-skip-undo"])
    )
    assert cfg.program_terms_skip_undo and "program_terms_skip_undo" in explicit
    # the default recipe skips UNDO; without a program term there is nothing to skip in, so
    # --program-bonus 0 turns the flag off with it, and --no-program-terms-skip-undo counts UNDO
    assert config_from_args(build_parser().parse_args([]))[0].program_terms_skip_undo
    off, _ = config_from_args(build_parser().parse_args(["--program-bonus", "0"]))
    assert off.program_bonus == 0 and not off.program_terms_skip_undo
    validate(off)
    counted, _ = config_from_args(build_parser().parse_args(["--no-program-terms-skip-undo"]))
    assert counted.program_bonus == 5 and not counted.program_terms_skip_undo
    with pytest.raises(ValueError, match="--program-terms-skip-undo changes nothing"):
        validate(plain_ppo(program_terms_skip_undo=True))
    validate(plain_ppo(program_terms_skip_undo=True, program_potential=1.0))


def test_rollouts_with_shaping_play_the_same_games_with_the_same_rewards():
    """Shaping touches no reward, action or state; each term is gamma phi(s') - phi(s)."""
    n, steps, gamma = 16, 48, 0.9
    params = EnvParams(max_steps_in_episode=20)  # truncations and resets inside the rollout
    row = lambda obs: obs.player[..., 0] * 5.0  # noqa: E731  a potential that moves every step

    def uniform(_, obs):
        return jnp.zeros(obs.action_mask.shape, jnp.float32), jnp.zeros(obs.action_mask.shape[0])

    @partial(jax.jit, static_argnums=0)
    def run(potential_on):
        obs, state = jax.vmap(ENV.reset, in_axes=(0, None))(
            jax.random.split(jax.random.key(1), n), params
        )
        acc = init_episode_acc(n, NUM_REWARD_COMPONENTS)
        pot = row if potential_on else None
        return collect_rollout(
            sample_actor(None, uniform), lambda p, o: uniform(p, o)[1], jax.random.key(2), None,
            ENV, params, state, obs, acc, steps, track=track_episodes,
            shaping=lambda o, fo, term, *_: shaping_term(pot, gamma, o, fo, term),
        )  # fmt: skip

    on, off = jax.device_get(run(True)), jax.device_get(run(False))
    traj, plain = on[3], off[3]
    np.testing.assert_array_equal(traj.action, plain.action)
    np.testing.assert_array_equal(traj.reward, plain.reward)
    np.testing.assert_array_equal(on[2].ret, off[2].ret)  # episode returns stay canonical
    assert not plain.shaping.any()
    assert on[5]["shaping"] == pytest.approx(traj.shaping.sum(), rel=1e-5)
    # on steps that do not end an episode, s' is the next transition's observation
    phi = np.asarray(traj.obs.player[..., 0]) * 5.0
    done = np.asarray(traj.terminated | traj.truncated)
    expected = gamma * phi[1:] - phi[:-1]
    inner = ~done[:-1]
    np.testing.assert_allclose(traj.shaping[:-1][inner], expected[inner], atol=1e-5)
    assert inner.sum() > 100 and np.abs(traj.shaping[:-1][inner]).max() > 0.5
    term = np.asarray(traj.terminated)
    np.testing.assert_allclose(traj.shaping[term], -phi[term], atol=1e-5)
    assert traj.truncated.any()


@pytest.mark.parametrize("field", ["program_potential", "program_bonus"])
def test_program_terms_config_is_checked_and_reaches_the_trainer(field):
    flag = "--" + field.replace("_", "-")
    with pytest.raises(ValueError, match=flag):
        validate(plain_ppo(**{field: -1.0}))
    cfg, explicit = config_from_args(build_parser().parse_args([flag, "2"]))
    assert getattr(cfg, field) == 2.0 and field in explicit
    assert getattr(plain_ppo(), field) == 0.0  # off in plain PPO
    default = config_from_args(build_parser().parse_args([]))[0]
    assert getattr(default, field) == {"program_potential": 0.0, "program_bonus": 5.0}[field]
    probe = plain_ppo(num_envs=4, num_steps=4, total_timesteps=16, **{field: 1.0})
    with pytest.raises(ValueError, match=f"{flag} needs .*programs"):
        make_train(probe, ProbeSuite(), ProbeParams())


def test_the_bonus_end_flag_is_checked_and_reaches_the_trainer():
    cfg, explicit = config_from_args(
        build_parser().parse_args(["--program-bonus", "4", "--program-bonus-end", "0"])
    )
    assert (cfg.program_bonus, cfg.program_bonus_end) == (4.0, 0.0)
    assert "program_bonus_end" in explicit
    assert config_from_args(build_parser().parse_args([]))[0].program_bonus_end is None
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="--program-bonus-end must be >= 0"):
            validate(plain_ppo(program_bonus=1.0, program_bonus_end=bad))
    with pytest.raises(ValueError, match="--program-bonus-end changes nothing"):
        validate(plain_ppo(program_bonus_end=0.0))
    # a bonus that rises from 0 is a bonus: UNDO may be left out of it
    validate(plain_ppo(program_bonus_end=2.0, program_terms_skip_undo=True))


@pytest.mark.parametrize("start, end", [(4.0, 0.0), (1.0, None), (0.0, 3.0)])
def test_the_bonus_coefficient_moves_linearly_over_the_run(start, end):
    cfg = plain_ppo(program_bonus=start, program_bonus_end=end)
    sched = make_schedule(cfg, 10)
    got = [float(program_bonus_coef(cfg, sched, jnp.int32(u))) for u in (0, 5, 10, 20)]
    final = start if end is None else end
    assert got == pytest.approx([start, (start + final) / 2, final, final])


def test_an_update_pays_the_bonus_at_the_scheduled_coefficient():
    """The same rollout (same key, params and envs) at updates 0, 2 and 4 of a 4-update run
    whose bonus falls from 4 to 0: its terms are 4, 2 and 0 x the same program count changes."""
    cfg = plain_ppo(
        num_envs=64, num_steps=32, total_timesteps=4 * 64 * 32, hidden_dim=16,
        program_bonus=4.0, program_bonus_end=0.0, log_interval=1,
    )  # fmt: skip
    trainer = make_train(cfg)
    runner = trainer.init()
    metrics = {}
    for update in (0, 2, 4):
        at = jax.device_get(runner).replace(update=np.int32(update))
        _, m = trainer.run_chunk(trainer.place(at), 1)
        metrics[update] = jax.device_get(m)
    paid = {u: float(m["train/shaping_per_step"]) for u, m in metrics.items()}
    assert [float(metrics[u]["train/program_bonus"]) for u in (0, 2, 4)] == [4.0, 2.0, 0.0]
    assert paid[0] != 0.0  # the random policy's rollout takes program blocks
    assert paid[2] == pytest.approx(paid[0] / 2, rel=1e-6)
    assert paid[4] == 0.0
    rewards = [float(metrics[u]["train/episode_return"]) for u in (0, 2, 4)]
    assert rewards[0] == rewards[1] == rewards[2]  # the game's returns do not change with it
