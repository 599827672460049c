"""episodes.py: a recorded episode is the game a plain gymnax step loop plays with its keys.

The recorder (``Stepper`` + ``play``) steps jitted batches on the host; these tests replay its
episodes with ``HackMatrix.step`` one step at a time, keys drawn as the module doc says, and
compare every frame. The returns equal ``evaluate.make_evaluate``'s with the same seed.
"""

from __future__ import annotations

import io

import jax
import numpy as np
import pytest
from hackmatrix_env import EnvParams, HackMatrix
from hackmatrix_env.viewer import scene
from hackmatrix_train import episodes as E
from hackmatrix_train import progress
from hackmatrix_train.evaluate import make_evaluate

SEED, BATCH, MAX_STEPS = 3, 4, 30
PARAMS = EnvParams(max_steps_in_episode=MAX_STEPS)
ENV = HackMatrix()
STEP = jax.jit(ENV.step)


@pytest.fixture(scope="module")
def batch():
    """The whole batch recorded at once by the random policy, with its states."""
    return E.play(E.Stepper(PARAMS), None, SEED, BATCH, keep_states=True)


def manual_episode(index: int, actions: list[int]):
    """``[(reward, breakdown, done, scene after)]`` of ``actions`` from episode ``index``'s
    reset, stepped by ``HackMatrix.step`` (gymnax's, with its auto-reset) one by one."""
    k_reset, k_run = jax.random.split(jax.random.key(SEED))
    _, state = ENV.reset(jax.random.split(k_reset, BATCH)[index], PARAMS)
    run_keys = jax.random.split(k_run, MAX_STEPS)
    start, steps = scene(state), []
    for t, action in enumerate(actions):
        _, k_env = jax.random.split(run_keys[t])
        env_key = jax.random.split(k_env, BATCH)[index]
        _, state, reward, terminated, truncated, info = STEP(env_key, state, action, PARAMS)
        done = terminated | truncated
        breakdown = np.asarray(info["reward_breakdown"])
        steps.append((float(reward), breakdown, bool(done), scene(state, action)))
    return start, steps


def test_each_frame_is_the_manual_loops_step(batch):
    for ep in batch:
        start, steps = manual_episode(ep.index, ep.actions)
        assert ep.frames[0]["scene"] == start
        assert len(ep.frames) == len(ep.actions) + 1 == len(steps) + 1
        for t, (frame, (reward, breakdown, done, after)) in enumerate(
            zip(ep.frames[1:], steps, strict=True)
        ):
            assert frame["action"] == ep.actions[t]
            assert frame["reward"] == pytest.approx(reward, abs=1e-5)
            np.testing.assert_allclose(frame["breakdown"], breakdown, atol=1e-5)
            last = t == len(steps) - 1
            assert done == (last and ep.end != "unfinished"), (ep.index, t)
            if not done:  # gymnax's step returns the next episode's reset on the last one
                assert frame["scene"] == after, (ep.index, t)
        assert ep.ret == pytest.approx(sum(r for r, *_ in steps), abs=1e-3)


def test_returns_are_make_evaluates(batch):
    """The recorder plays hm-eval's episodes: same seed, same batch, same returns and lengths."""
    result = make_evaluate(ENV, PARAMS, None, BATCH, MAX_STEPS, greedy=False)(
        None, jax.random.key(SEED)
    )
    np.testing.assert_allclose([ep.ret for ep in batch], np.asarray(result["ret"]), atol=1e-4)
    assert [len(ep.actions) for ep in batch] == np.asarray(result["length"]).tolist()


def test_one_row_is_the_same_episode_as_in_the_batch(batch):
    """A row recorded alone (hm-play, action logs) is the batch's episode of that index."""
    stepper = E.Stepper(PARAMS)
    log = E.action_log(batch, SEED, BATCH, PARAMS)
    again = E.replay_log(log, stepper)
    assert [ep.summary() for ep in again] == [ep.summary() for ep in batch]
    assert [ep.frames for ep in again] == [ep.frames for ep in batch]


def test_a_log_that_stops_early_ends_the_episode_there(batch):
    longest = max(batch, key=lambda ep: len(ep.actions))
    cut = len(longest.actions) // 2
    assert cut >= 1
    forced = {longest.index: longest.actions[:cut]}
    (ep,) = E.play(E.Stepper(PARAMS), None, SEED, BATCH, [longest.index], forced)
    assert ep.end == "end of log"
    assert ep.actions == longest.actions[:cut]
    assert ep.frames == longest.frames[: cut + 1]


def test_play_reports_its_compile_once_and_every_episode():
    out = io.StringIO()
    stepper = E.Stepper(PARAMS, report=progress.Reporter(out))
    E.play(stepper, None, SEED, BATCH, [0, 2], report=progress.Reporter(out))
    first = out.getvalue().splitlines()
    assert first[0].startswith("compiling the policy and the env step: about ")
    assert first[1].startswith("compiled the policy and the env step in ")
    assert first[-1].startswith("recording: 2/2 episodes (")
    out.seek(0), out.truncate()
    E.play(stepper, None, SEED, BATCH, [1], report=progress.Reporter(out))
    lines = out.getvalue().splitlines()
    assert not any(line.startswith("compil") for line in lines)  # compiled already
    assert lines[-1].startswith("recording: 1/1 episode (")


@pytest.mark.parametrize("rows", [[], [BATCH], [-1]])
def test_rows_outside_the_batch_are_refused(rows):
    with pytest.raises(ValueError, match=r"no episodes|must be in"):
        E.episode_rows(BATCH, rows)
