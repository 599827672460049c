"""The end-of-run evaluation: stage completions by the exit vs the cross-stage UNDO quirk.

A hand-built episode (rules §11.4): the player walks onto the exit (stage 1 -> 2), runs UNDO,
which restores the stage-1 board while ``exit_pos`` keeps the stage-2 exit, and steps onto the old
exit cell again (stage 2 -> 3). The tally must count one completion of each kind. The summary's
JSON schema and the ``hm-train`` end-of-run file are checked on a tiny real run.
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from builders import make_state
from hackmatrix_env import HackMatrix
from hackmatrix_env.constants import Action
from hackmatrix_train.evaluate import (
    SIPHON_BLOCK_KEYS,
    new_tally,
    on_restored_board,
    siphon_blocks,
    summarize,
    tally_step,
)

ENV = HackMatrix()
STEP = jax.jit(ENV.step)
RIGHT, UNDO = int(Action.RIGHT), int(Action.UNDO)


def _play(state, actions, key=0):
    """Step a batch of one through ``actions``; returns the tally and the per-step restored flag."""
    acc = new_tally(jax.tree.map(lambda x: x[None], state), 1, 28)
    restored_before = []
    keys = jax.random.split(jax.random.key(key), len(actions))
    for k, a in zip(keys, actions, strict=True):
        before = jax.tree.map(lambda x: x[None], state)
        restored_before.append(bool(on_restored_board(before)[0]))
        obs, state, reward, term, trunc, info = STEP(k, state, jnp.int32(a), ENV.default_params)
        assert bool(obs.action_mask.any())
        batched = jax.tree.map(lambda x: jnp.asarray(x)[None], (reward, term, trunc, info))
        acc = tally_step(acc, before, jnp.array([a]), *batched)
    return jax.device_get(acc), restored_before, state


def test_undo_across_a_stage_change_is_counted_as_a_quirk_completion():
    start = make_state((5, 3), owned=["undo"], credits=5, energy=5, stage=1)
    # RIGHT (the turn ends with the player at (5,4): snapshot) -> RIGHT onto the exit: stage 2
    # (no snapshot) -> UNDO: the stage-1 board is back with the player at (5,4) while exit_pos
    # is stage 2's -> RIGHT onto the old exit cell completes stage 2
    acc, restored, end = _play(start, [RIGHT, RIGHT, UNDO, RIGHT])
    assert restored == [False, False, False, True]
    assert int(end.game.stage) == 3
    assert int(acc["exit_completions"][0]) == 1
    assert int(acc["quirk_completions"][0]) == 1
    assert int(acc["stage"][0]) == 3
    s = summarize(acc)
    assert s["programs_owned_mean"] == 1.0  # UNDO, owned from the start
    assert s["stage_completions_by_exit"] == 1 and s["stage_completions_by_undo_quirk"] == 1
    assert s["programs_per_episode"] == 1.0 and s["non_undo_programs_per_episode"] == 0.0


def test_ordinary_exits_are_not_quirk_completions():
    start = make_state((5, 3), stage=1)
    acc, restored, end = _play(start, [RIGHT, RIGHT])
    assert restored == [False, False]
    assert int(end.game.stage) == 2
    assert (int(acc["exit_completions"][0]), int(acc["quirk_completions"][0])) == (1, 0)


def test_programs_owned_counts_a_program_siphoned_during_the_episode():
    start = make_state((2, 2), siphons=1, owned=["wait"], blocks=[("program", (3, 2), "push")])
    acc, _, end = _play(start, [int(Action.SIPHON), RIGHT])
    assert int(end.game.num_owned) == 2
    assert int(acc["programs_owned"][0]) == 2
    plain, _, _ = _play(make_state((2, 2), owned=["wait"]), [RIGHT, RIGHT])
    assert int(plain["programs_owned"][0]) == 1


def test_summary_schema_counts_programs_without_undo():
    n = 4
    actions = np.zeros((n, 28), np.int32)
    actions[:, 4] = 3  # siphons
    actions[0, UNDO] = 5
    actions[1, int(Action.PUSH)] = 2
    actions[2, int(Action.WARP)] = 1
    result = {
        "alive": np.zeros(n, bool), "ret": np.arange(n, dtype=np.float32),
        "length": np.full(n, 10), "stage": np.array([1, 5, 6, 8]), "won": np.array([0, 0, 0, 1], bool),
        "actions": actions, "exit_completions": np.array([0, 4, 5, 8]),
        "quirk_completions": np.array([0, 0, 0, 1]), "programs_owned": np.array([0, 1, 2, 5]),
    }  # fmt: skip
    s = summarize(result)
    assert s["siphons_per_episode"] == 3.0
    assert s["non_undo_programs_per_episode"] == pytest.approx(3 / 4)
    assert s["programs_per_episode"] == pytest.approx(8 / 4)
    assert s["distinct_programs_used"] == 3
    assert s["programs_owned_mean"] == 2.0
    assert s["stage_5plus_frac"] == 0.75 and s["win_rate"] == 0.25
    assert (s["stage_completions_by_exit"], s["stage_completions_by_undo_quirk"]) == (17, 1)
    # the one win used the quirk: no quirk-free win
    assert s["episodes_using_the_quirk"] == 1 and s["win_rate_without_quirk"] == 0.0
    json.dumps(s)  # JSON-ready


@pytest.mark.parametrize("seed", range(5))
def test_quirk_free_wins_are_the_wins_of_episodes_without_quirk_completions(seed):
    rng = np.random.default_rng(seed)
    n = 64
    won = rng.random(n) < 0.3
    quirk = np.where(rng.random(n) < 0.4, rng.integers(1, 7, n), 0)
    result = {
        "alive": np.zeros(n, bool), "ret": rng.normal(size=n).astype(np.float32),
        "length": np.full(n, 10), "stage": np.where(won, 8, rng.integers(1, 8, n)), "won": won,
        "actions": np.zeros((n, 28), np.int32), "exit_completions": rng.integers(0, 8, n),
        "quirk_completions": quirk,
    }  # fmt: skip
    s = summarize(result)
    by_hand = sum(1 for w, q in zip(won, quirk, strict=True) if w and q == 0) / n
    assert s["win_rate_without_quirk"] == pytest.approx(by_hand)
    assert s["win_rate_without_quirk"] <= s["win_rate"]
    assert s["episodes_using_the_quirk"] == int((quirk > 0).sum())


def test_siphons_are_split_into_block_siphons_and_resource_pickups():
    blocks = [("data", (3, 2), 4), ("program", (2, 1), "push"), ("program", (1, 2), "wait")]
    start = make_state((2, 2), siphons=2, owned=["wait"], blocks=blocks, calm=True)
    siphon = int(Action.SIPHON)
    # the first siphon takes all three blocks (WAIT already owned: nothing acquired from it);
    # the second finds its whole cross siphoned
    acc, _, end = _play(start, [siphon, siphon])
    assert int(end.game.num_owned) == 2 and int(end.game.player.siphons) == 0
    # a third has no siphon left: invalid (it ends the episode, env.py) and counts nothing
    three, _, _ = _play(start, [siphon] * 3)
    for k in ("block_siphons", *SIPHON_BLOCK_KEYS):
        assert int(three[k][0]) == int(acc[k][0]), k
    got = {k: int(acc[k][0]) for k in ("block_siphons", "data_blocks", "program_blocks")}
    assert got == {"block_siphons": 1, "data_blocks": 1, "program_blocks": 2}
    assert int(acc["programs_acquired"][0]) == 1
    s = summarize(acc)
    assert s["block_siphons_per_episode"] == 1.0 and s["programs_acquired_per_episode"] == 1.0
    assert s["data_blocks_siphoned_per_episode"] == 1.0
    assert s["program_blocks_siphoned_per_episode"] == 2.0


def test_siphon_block_counts_agree_with_the_game_on_random_play():
    """Differential: on every successful siphon of random masked play, the counts read from the
    state before agree with what the step did to the score and the owned programs."""
    n, steps = 64, 300
    step = jax.vmap(ENV.step, in_axes=(0, 0, 0, None))

    @jax.jit
    def run(key):
        k0, k1 = jax.random.split(key)
        obs, state = jax.vmap(ENV.reset, in_axes=(0, None))(
            jax.random.split(k0, n), ENV.default_params
        )

        def body(carry, key):
            obs, state = carry
            k_act, k_env = jax.random.split(key)
            mask = obs.action_mask
            # siphon whenever it is legal, so that many siphons reach blocks
            logits = jnp.where(mask, 0.0, -jnp.inf).at[:, int(Action.SIPHON)].add(2.0)
            action = jax.random.categorical(k_act, logits).astype(jnp.int32)
            obs, after, _, term, trunc, info = step(
                jax.random.split(k_env, n), state, action, ENV.default_params
            )
            ok = (action == int(Action.SIPHON)) & ~info["invalid_action"] & ~(term | trunc)
            taken = siphon_blocks(state, ok)
            g0, g1 = state.game, after.game
            out = {
                "ok": ok,
                "acquired": g1.num_owned.astype(jnp.int32) - g0.num_owned.astype(jnp.int32),
                "scored": g1.player.score > g0.player.score,
                **taken,
            }
            return (obs, after), out

        return jax.lax.scan(body, (obs, state), jax.random.split(k1, steps))[1]

    o = jax.device_get(run(jax.random.key(3)))
    ok = o["ok"]
    # key 3 gives 279 siphons, 47 of them on data blocks, 68 acquiring a program
    assert ok.sum() > 150 and (o["data_blocks"][ok] > 0).sum() > 20
    assert (o["programs_acquired"][ok] > 0).sum() > 30
    np.testing.assert_array_equal(o["programs_acquired"][ok], o["acquired"][ok])
    np.testing.assert_array_equal(o["data_blocks"][ok] > 0, o["scored"][ok])
    for k in SIPHON_BLOCK_KEYS:
        assert not o[k][~ok].any()


def test_episodes_at_the_step_limit_are_those_the_limit_cut(limit=6):
    """Random masked play under ``max_steps_in_episode = limit``: an episode counts as cut by
    the limit exactly when it lasted ``limit`` steps and did not end the game (death or win)."""
    from hackmatrix_env import EnvParams
    from hackmatrix_train.evaluate import make_evaluate

    n = 64
    params = EnvParams(max_steps_in_episode=limit)
    run = make_evaluate(ENV, params, None, n, limit + 4, greedy=False)
    r = jax.device_get(run(None, jax.random.key(limit)))
    cut = np.asarray(r["at_step_limit"])
    assert (np.asarray(r["length"])[cut] == limit).all()
    assert not np.asarray(r["won"])[cut].any() and not np.asarray(r["alive"]).any()
    shorter = np.asarray(r["length"]) < limit  # ended by the game itself
    assert not cut[shorter].any() and cut.sum() + shorter.sum() <= n
    assert cut.sum() >= 1
    s = summarize(r)
    assert s["episodes_at_step_limit"] == int(cut.sum())
    unlimited = make_evaluate(ENV, EnvParams(), None, n, limit, greedy=False)
    assert not np.asarray(
        jax.device_get(unlimited(None, jax.random.key(limit)))["at_step_limit"]
    ).any()


def test_a_move_the_mask_refuses_ends_the_episode_and_is_counted():
    from hackmatrix_train.tables import format_summaries

    start = make_state((2, 2), siphons=0)
    obs = ENV.get_obs(start, ENV.default_params)
    assert not bool(obs.action_mask[int(Action.SIPHON)])
    acc, _, _ = _play(start, [RIGHT, int(Action.SIPHON), RIGHT])
    assert bool(acc["illegal_end"][0]) and not bool(acc["alive"][0])
    assert int(acc["length"][0]) == 2  # the refused move ended it; the next one is not counted
    legal, _, _ = _play(start, [RIGHT, RIGHT])
    assert not bool(legal["illegal_end"][0])
    both = jax.tree.map(lambda a, b: np.concatenate([a, b]), acc, legal)
    s = summarize(both)
    assert s["episodes_ended_by_an_illegal_move"] == 1
    row = next(ln for ln in format_summaries([s]).splitlines() if "illegal move" in ln)
    assert row.split()[-1] == "1"
