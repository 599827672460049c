"""gymnax 1.0 conformance of ``HackMatrix`` (reproduction-matrix style checks).

One env object and its jitted ``reset``/``step`` are shared by every test, so
the step compiles once for this module.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from builders import make_state
from gymnax.environments import environment, spaces
from hackmatrix_env import EnvParams, HackMatrix, Observation, flatten_observation
from hackmatrix_env.constants import NUM_REWARD_COMPONENTS, REWARD_COMPONENTS, ActionKind
from hackmatrix_env.history import without_snapshots
from hackmatrix_env.observation import observe
from hackmatrix_env.scenario import state_from_json

ENV = HackMatrix()
PARAMS = ENV.default_params
INFO_KEYS = {
    "reward_breakdown",
    "action_kind",
    "invalid_action",
    "terminated",
    "truncated",
    "final_observation",
    "history_overflow",
}


def _eq(a, b) -> bool:
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(la) == len(lb) and all(
        np.asarray(x).dtype == np.asarray(y).dtype and np.array_equal(x, y)
        for x, y in zip(la, lb, strict=True)
    )


def test_api_surface():
    assert isinstance(ENV, environment.Environment)
    assert ENV.num_actions == 28 and ENV.name == "HackMatrix"
    assert PARAMS.max_steps_in_episode == 1000 and PARAMS.start_stage == 1
    a = ENV.action_space(PARAMS)
    assert isinstance(a, spaces.Discrete) and a.n == 28
    sample = a.sample(jax.random.key(0))
    assert 0 <= int(sample) < 28 and bool(a.contains(sample))
    assert not bool(a.contains(jnp.int32(28)))
    assert set(ENV.observation_space(PARAMS).spaces) == set(Observation._fields)
    assert "time" in ENV.state_space(PARAMS).spaces


def test_reset_shapes_and_spaces():
    obs, state = ENV.reset(jax.random.key(0), PARAMS)
    assert isinstance(obs, Observation)
    assert obs.player.shape == (10,) and obs.player.dtype == jnp.float32
    assert obs.programs.shape == (23,) and obs.programs.dtype == jnp.float32
    assert obs.grid.shape == (6, 6, 42) and obs.grid.dtype == jnp.float32
    assert obs.action_mask.shape == (28,) and obs.action_mask.dtype == jnp.bool_
    assert bool(ENV.observation_space(PARAMS).contains(obs))
    assert int(state.time) == 0 and int(state.game.stage) == 1
    assert int(state.history.size) == 0  # a fresh game has nothing to UNDO
    assert _eq(obs, observe(state))
    assert flatten_observation(obs).shape == (1545,)


def test_e1_plain_move():
    # interface §4.8 E1: setState {"player":{"row":0,"col":0}}, action 0 -> 0.04.
    state = state_from_json({"player": {"row": 0, "col": 0}})
    obs, nxt, reward, term, trunc, info = ENV.step(jax.random.key(1), state, 0, PARAMS)
    assert set(info) == INFO_KEYS
    assert not bool(term) and not bool(trunc)
    assert nxt.game.player.pos.tolist() == [1, 0] and int(nxt.game.turn) == 1
    assert int(nxt.time) == 1
    assert int(nxt.history.size) == 1  # the real enemy phase's snapshot
    bd = np.asarray(info["reward_breakdown"])
    assert bd.shape == (NUM_REWARD_COMPONENTS,) and bd.dtype == np.float32
    expected = np.zeros(15, np.float32)
    expected[REWARD_COMPONENTS.index("step_penalty")] = -0.01
    expected[REWARD_COMPONENTS.index("distance_shaping")] = 0.05
    np.testing.assert_allclose(bd, expected, atol=1e-7)
    assert float(reward) == pytest.approx(0.04, abs=1e-6)
    acc = np.float32(0)
    for v in bd:  # the reward is the left-to-right sum in table order
        acc = np.float32(acc + v)
    assert np.float32(reward) == acc
    assert int(info["action_kind"]) == ActionKind.MOVE and not bool(info["invalid_action"])
    assert _eq(obs, observe(nxt)) and _eq(info["final_observation"], obs)


def test_invalid_action_terminates_and_autoresets():
    state = make_state((0, 0), credits=5)
    before = observe(state)
    obs, nxt, reward, term, trunc, info = ENV.step(jax.random.key(2), state, 1, PARAMS)  # off-board
    assert bool(term) and not bool(trunc) and bool(info["invalid_action"])
    assert float(reward) == 0.0 and not np.asarray(info["reward_breakdown"]).any()
    assert int(info["action_kind"]) == ActionKind.INVALID
    assert _eq(info["final_observation"], before)  # the failed step changed nothing
    # auto-reset: a fresh game and its observation
    assert int(nxt.time) == 0 and int(nxt.game.stage) == 1
    assert int(nxt.game.player.credits) in (0, 10)
    assert _eq(obs, observe(nxt))
    assert int(nxt.history.size) == 0 and int(nxt.history.top) == 0


def test_truncation_at_max_steps():
    params = EnvParams(max_steps_in_episode=2)
    state = state_from_json({"player": {"row": 0, "col": 0}})
    _, s1, _, term, trunc, _ = ENV.step(jax.random.key(3), state, 0, params)
    assert not bool(term | trunc) and int(s1.time) == 1
    _, s2, _, term, trunc, info = ENV.step(jax.random.key(4), s1, 0, params)
    assert bool(trunc) and not bool(term)
    assert int(s2.time) == 0  # reset
    assert float(info["final_observation"].player[0]) == pytest.approx(2 / 5)  # row 2 before reset


@pytest.mark.slow
def test_step_override_matches_base_class():
    """Our ``step`` equals gymnax's base ``step`` except for the unread snapshot buffer."""
    cases = [
        (state_from_json({"player": {"row": 0, "col": 0}}), 0),  # plain move
        (make_state((0, 0)), 1),  # invalid -> reset
        (make_state((5, 4), stage=8, hp=2), 3),  # victory -> reset
        (make_state((5, 4), stage=2, hp=2), 3),  # stage completed: a new stage is generated
        (make_state((4, 5), stage=1, hp=3), 0),  # completed, and truncated when max_steps = 1
    ]
    base_step = jax.jit(environment.Environment.step, static_argnums=0)
    truncating = EnvParams(max_steps_in_episode=1)
    for params in (PARAMS, truncating):
        for k, (state, action) in enumerate(cases):
            key = jax.random.key(10 + k)
            ours = ENV.step(key, state, action, params)
            theirs = base_step(ENV, key, state, action, params)
            assert _eq(ours[0], theirs[0]) and _eq(ours[2:], theirs[2:])
            assert _eq(without_snapshots(ours[1]), without_snapshots(theirs[1]))
        # Batched (the sparse jobs of compute_where, the two-pass stage/reset job).
        states = jax.tree.map(lambda *x: jnp.stack(x), *[c[0] for c in cases])
        actions = jnp.array([c[1] for c in cases], jnp.int32)
        keys = jax.random.split(jax.random.key(7), len(cases))
        ours = jax.vmap(ENV.step, in_axes=(0, 0, 0, None))(keys, states, actions, params)
        theirs = jax.vmap(lambda k, s, a, p: base_step(ENV, k, s, a, p), in_axes=(0, 0, 0, None))(
            keys, states, actions, params
        )
        assert _eq(ours[0], theirs[0]) and _eq(ours[2:], theirs[2:])
        assert _eq(without_snapshots(ours[1]), without_snapshots(theirs[1]))


def test_victory_terminates():
    state = make_state((5, 4), stage=8, hp=3, score=10)
    _, _, reward, term, _, info = ENV.step(jax.random.key(5), state, 3, PARAMS)
    assert bool(term) and not bool(info["invalid_action"])
    assert float(reward) == pytest.approx(1564.04, abs=1e-2)  # interface §4.8 E5(b)
    fin = info["final_observation"]
    assert float(fin.player[5]) == 1.0  # stage stays 8


def test_is_terminated():
    assert bool(ENV.is_terminated(make_state((1, 1), hp=0), PARAMS))
    assert not bool(ENV.is_terminated(make_state((1, 1), hp=1), PARAMS))
    assert bool(ENV.is_terminated(make_state((5, 5), stage=8), PARAMS))
    assert not bool(ENV.is_terminated(make_state((5, 5), stage=7), PARAMS))


def test_info_structure_identical_across_step_kinds():
    """Same keys, shapes and dtypes whatever the step does (move, shot, siphon, invalid)."""
    cases = [
        (state_from_json({"player": {"row": 0, "col": 0}}), 0),
        (make_state((0, 0), enemies=[("virus", (3, 0))]), 0),
        (make_state((2, 2), siphons=1), 4),
        (make_state((2, 2)), 4),
    ]
    shapes = None
    for k, (state, action) in enumerate(cases):
        out = ENV.step(jax.random.key(20 + k), state, action, PARAMS)
        struct = jax.tree.map(lambda x: (x.shape, x.dtype), out[-1])
        shapes = struct if shapes is None else shapes
        assert struct == shapes


def test_start_stage_param():
    obs, state = ENV.reset(jax.random.key(6), EnvParams(start_stage=5))
    assert int(state.game.stage) == 5 and int(state.game.task_interval) == 8
    assert float(obs.player[5]) == pytest.approx(4 / 7)


@pytest.mark.slow
def test_vmapped_rollout_with_autoreset():
    """A jitted vmap rollout of random masked actions: finite, dtypes stable, episodes restart."""
    n_envs, n_steps = 8, 12

    @jax.jit
    def rollout(key):
        keys = jax.random.split(key, n_envs)
        obs, state = jax.vmap(ENV.reset, in_axes=(0, None))(keys, PARAMS)

        def body(carry, k):
            obs, state = carry
            ka, ks = jax.random.split(k)
            logits = jnp.where(obs.action_mask, 0.0, -jnp.inf)
            actions = jax.random.categorical(ka, logits)
            obs, state, r, term, _, info = jax.vmap(ENV.step, in_axes=(0, 0, 0, None))(
                jax.random.split(ks, n_envs), state, actions, PARAMS
            )
            return (obs, state), (r, term, info["invalid_action"], state.time)

        _, out = jax.lax.scan(body, (obs, state), jax.random.split(key, n_steps))
        return out

    rewards, term, invalid, time = rollout(jax.random.key(7))
    assert np.isfinite(np.asarray(rewards)).all()
    assert not np.asarray(invalid).any()  # masked actions never fail
    time = np.asarray(time)
    # time counts up by one per step and restarts at 0 after a terminal step
    prev = np.zeros(n_envs, int)
    for t in range(n_steps):
        expect = np.where(np.asarray(term[t]), 0, prev + 1)
        assert (time[t] == expect).all()
        prev = time[t]


@pytest.mark.parametrize("impl", ["rbg", None])
def test_other_key_kinds_play_and_repeat(impl):
    """rbg keys (4 data words) and legacy ``PRNGKey`` arrays drive reset and step.

    The game's seeds are mixed from the key's data (``rng.rng_seed``), so
    any key kind works; the same key replays the same game, another key differs.
    """

    def make_key(seed):
        return jax.random.PRNGKey(seed) if impl is None else jax.random.key(seed, impl=impl)

    def play(seed):
        key = make_key(seed)
        obs, state = ENV.reset(key, PARAMS)
        grids = [obs.grid]
        for _ in range(6):
            key, k_act, k_step = jax.random.split(key, 3)
            logits = jnp.where(obs.action_mask, 0.0, -jnp.inf)
            action = jax.random.categorical(k_act, logits)
            obs, state, _, _, _, info = ENV.step(k_step, state, action, PARAMS)
            assert not bool(info["invalid_action"])
            grids.append(obs.grid)
        return np.stack([np.asarray(g) for g in grids])

    a, b, c = play(1), play(1), play(2)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_subclass_overriding_reset_env_is_refused():
    """step's auto-reset does not call reset_env: overriding it would be silently ignored."""

    class OwnReset(HackMatrix):
        def reset_env(self, key, params):
            return super().reset_env(key, params)

    env = OwnReset()
    _, state = HackMatrix().reset(jax.random.key(0), PARAMS)
    with pytest.raises(TypeError, match="overrides reset_env"):
        env.step(jax.random.key(1), state, 0, PARAMS)
