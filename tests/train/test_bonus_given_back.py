"""The program bonus given back at a death (``--no-program-bonus-kept-at-death``).

Kept, the bonus pays a siphon's program at once whatever its spawns do next, and a death in
stage 1 costs the game's reward nothing (interface §4.4). Given back, an episode's bonus sums to
what it ends with when it lives and to minus its start's when it dies. Checked on real death,
victory and siphon steps, over random episodes, in the rollout's shaping and in the search's tree.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import pytest
from builders import make_state
from hackmatrix_env import EnvParams, HackMatrix
from hackmatrix_env.constants import NUM_ACTIONS, Action
from hackmatrix_train.cli.train import build_parser, config_from_args
from hackmatrix_train.config import validate
from hackmatrix_train.search import (
    Node,
    SearchConfig,
    describe,
    make_recurrent_fn,
    search_config_from_train,
)
from hackmatrix_train.stats import died_of, make_shaping, program_potential, shaping_term
from hackmatrix_train.tables import column_name
from hypothesis import given, settings
from hypothesis import strategies as st
from train.recipes import plain_ppo

ENV = HackMatrix()
PARAMS = EnvParams()


def stepped(state, action):
    """(observation before, observation after, terminated) of one real step, batched by one."""
    obs = ENV.get_obs(state, PARAMS)
    _, _, _, terminated, _, info = ENV.step(jax.random.key(0), state, jnp.int32(action), PARAMS)
    batch = lambda tree: jax.tree.map(lambda x: x[None], tree)  # noqa: E731
    return batch(obs), batch(info["final_observation"]), jnp.asarray(terminated)[None]


def death():  # the virus steps next to the player and hits: hp 1 -> 0, three programs held
    state = make_state((0, 0), hp=1, owned=["wait", "push", "undo"], enemies=[("virus", (1, 1))])
    return state, Action.RIGHT


def victory():  # stage 8's exit reached with two programs
    return make_state((5, 4), stage=8, hp=3, owned=["wait", "push"]), Action.RIGHT


def siphon():  # a program block siphoned: PUSH acquired, nobody near
    state = make_state((2, 2), siphons=1, owned=["wait"], blocks=[("program", (3, 2), "push")])
    return state, Action.SIPHON


def test_a_death_is_told_from_a_win_and_from_a_step_that_goes_on():
    for make, ends, dies in ((death, True, True), (victory, True, False), (siphon, False, False)):
        _, final, terminated = stepped(*make())
        assert bool(terminated[0]) == ends
        assert bool(died_of(final, terminated)[0]) == dies


@pytest.mark.parametrize(
    "make, kept, given_back",
    # death: WAIT and PUSH count (UNDO skipped), 2 x 3.0 given back; a win and a siphon keep
    [(death, 0.0, -6.0), (victory, 0.0, 0.0), (siphon, 3.0, 3.0)],
)
def test_the_rollouts_shaping_gives_the_bonus_back_only_at_a_death(make, kept, given_back):
    obs, final, terminated = stepped(*make())
    for keep, want in ((True, kept), (False, given_back)):
        cfg = plain_ppo(program_bonus=3.0, program_terms_skip_undo=True,
                        program_bonus_kept_at_death=keep)  # fmt: skip
        shaping = make_shaping(cfg)(jnp.float32(3.0))
        got = shaping(obs, final, terminated, None, None, terminated)
        assert float(got[0]) == pytest.approx(want)


class Owning:
    """An observation with only what the bonus reads: ``n`` programs owned, alive or dead."""

    def __init__(self, n, hp):
        self.programs = jnp.asarray([[1] * n + [0] * (23 - n)], jnp.int32)
        self.player = jnp.zeros((1, 10), jnp.float32).at[0, 2].set(hp / 3)


@settings(max_examples=50, deadline=None)
@given(
    owned=st.lists(st.integers(0, 23), min_size=2, max_size=30),
    end=st.sampled_from(["death", "win", "on"]),
    gamma=st.sampled_from([1.0, 0.99]),
)
def test_an_episode_of_given_back_bonus_sums_to_what_a_living_game_ends_with(owned, end, gamma):
    """sum_t F_t = C (owned_T - owned_0) when the game lives (a win, or not over yet), and
    -C owned_0 when it dies: what it earned comes back, whatever the programs did between."""
    bonus = program_potential(0.7)
    total = 0.0
    for t in range(len(owned) - 1):
        last = t == len(owned) - 2
        terminated = jnp.asarray([last and end != "on"])
        hp = 0 if last and end == "death" else 2
        before, after = Owning(owned[t], 2), Owning(owned[t + 1], hp)
        died = died_of(after, terminated)
        total += float(shaping_term(None, gamma, before, after, terminated, bonus, died)[0])
    want = -0.7 * owned[0] if end == "death" else 0.7 * (owned[-1] - owned[0])
    assert total == pytest.approx(want, abs=1e-4)


def tree_reward(make, bonus: float, kept: bool) -> float:
    """The tree's reward for the scenario's action from its state."""
    state, action = make()

    def prior(params, obs):
        lead = obs.action_mask.shape[:-1]
        return jnp.zeros((*lead, NUM_ACTIONS)), jnp.zeros(lead)

    cfg = SearchConfig(num_simulations=8, program_bonus=bonus, program_bonus_kept_at_death=kept)
    out, _ = make_recurrent_fn(prior, cfg)(
        None, jax.random.key(0), jnp.asarray([action], jnp.int32),
        Node(jax.tree.map(lambda x: x[None], state), jnp.zeros(1, bool)),
    )  # fmt: skip
    return float(out.reward[0])


@pytest.mark.parametrize("make, given_back", [(death, -20.0), (victory, 0.0), (siphon, 0.0)])
def test_the_search_tree_gives_back_what_the_value_learned(make, given_back):
    """Only a death moves the tree's reward: 10 for each program held but UNDO."""
    assert tree_reward(make, 10.0, False) - tree_reward(make, 10.0, True) == pytest.approx(
        given_back
    )
    assert tree_reward(make, 0.0, False) == tree_reward(make, 0.0, True)  # no bonus, no charge


def test_the_flag_is_checked_and_reaches_the_trainer_and_the_runs_searches():
    args = ["--program-bonus", "5", "--no-program-bonus-kept-at-death"]
    cfg, explicit = config_from_args(build_parser().parse_args(args))
    assert not cfg.program_bonus_kept_at_death and "program_bonus_kept_at_death" in explicit
    assert config_from_args(build_parser().parse_args([]))[0].program_bonus_kept_at_death
    search = search_config_from_train(cfg)  # hm-eval's, the teacher's
    assert not search.program_bonus_kept_at_death
    with pytest.raises(ValueError, match="--no-program-bonus-kept-at-death changes nothing"):
        validate(plain_ppo(program_bonus_kept_at_death=False))
    with pytest.raises(ValueError, match="program_bonus_from_stage > 1 needs"):
        dataclasses.replace(search, program_bonus=5.0, program_bonus_from_stage=3)
    row = {"search": describe(dataclasses.replace(search, program_bonus=12.0))}
    assert column_name(row).endswith(", tree bonus 12 given back at death")
