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
from hackmatrix_train.evaluate import new_tally, on_restored_board, summarize, tally_step

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
    json.dumps(s)  # JSON-ready
