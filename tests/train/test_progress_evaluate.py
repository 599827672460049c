"""The evaluations played in chunks (for their progress bars) are the one-program evaluations.

``run_in_chunks`` and ``refill_in_chunks`` return exactly what ``make_evaluate`` and
``make_refill_evaluate`` return, and their bars count every ended episode once.
"""

from __future__ import annotations

import io

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_env import EnvParams, HackMatrix
from hackmatrix_train import progress
from hackmatrix_train.evaluate import chunk_length, make_evaluate, run_in_chunks
from hackmatrix_train.network import MLP, masked_categorical
from hackmatrix_train.search_evaluate import make_refill_evaluate, refill_in_chunks, refill_parts

EPISODES, MAX_STEPS = 6, 40


@pytest.fixture(scope="module")
def policy():
    env = HackMatrix()
    env_params = EnvParams(max_steps_in_episode=MAX_STEPS)
    net = MLP(28, hidden_dim=16, num_layers=1)
    obs, _ = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(jax.random.key(0), 1), env_params
    )
    return env, env_params, net, net.init(jax.random.key(1), obs)


def assert_same(got: dict, want: dict):
    got, want = jax.device_get(got), jax.device_get(want)
    assert set(got) == set(want)
    for name in want:
        np.testing.assert_array_equal(np.asarray(got[name]), np.asarray(want[name]), err_msg=name)


def plain_reporter() -> tuple[progress.Reporter, io.StringIO]:
    out = io.StringIO()
    return progress.Reporter(out), out


def bar_counts(text: str) -> list[str]:
    return [
        line.split(": ")[1].split(" ")[0]
        for line in text.splitlines()
        if line.startswith("episodes: ")
    ]


def test_chunk_length_divides_the_steps():
    assert chunk_length(1000) == 100
    assert chunk_length(40) in (4, 5)
    assert chunk_length(997) == 997  # a prime: one call plays every step
    assert 1000 % chunk_length(1000, chunks=7) == 0


@pytest.mark.parametrize("greedy", [True, False])
def test_run_in_chunks_is_make_evaluate(policy, greedy):
    env, env_params, net, params = policy
    key = jax.random.key(7)
    want = make_evaluate(env, env_params, net.apply, EPISODES, MAX_STEPS, greedy)(params, key)
    report, out = plain_reporter()
    got = run_in_chunks(
        env, env_params, net.apply, params, EPISODES, MAX_STEPS, greedy, key, report
    )
    assert_same(got, want)
    text = out.getvalue()
    assert text.startswith("compiling the evaluation: about ")
    assert "compiled the evaluation in " in text
    # every episode ends within MAX_STEPS (truncation), so the bar ends at the total
    assert bar_counts(text)[-1] == f"{EPISODES}/{EPISODES}"


def test_random_policy_in_chunks_is_make_evaluate(policy):
    env, env_params, _, _ = policy
    key = jax.random.key(3)
    want = make_evaluate(env, env_params, None, EPISODES, MAX_STEPS, greedy=False)(None, key)
    got = run_in_chunks(env, env_params, None, None, EPISODES, MAX_STEPS, False, key)
    assert_same(got, want)


def greedy_actor(net):
    def act(params, state, obs, key):
        del state, key
        logits, _ = net.apply(params, obs)
        pi = masked_categorical(logits, obs.action_mask)
        return jnp.argmax(pi.logits, axis=-1).astype(jnp.int32)

    return act


def test_refill_in_chunks_is_make_refill_evaluate(policy):
    env, env_params, net, params = policy
    act, key = greedy_actor(net), jax.random.key(5)
    want = make_refill_evaluate(env, env_params, act, EPISODES, MAX_STEPS, 2)(params, key)
    parts = refill_parts(env, env_params, act, EPISODES, MAX_STEPS, 2)
    report, out = plain_reporter()
    got, compile_s = refill_in_chunks(
        parts, params, key, EPISODES, MAX_STEPS, report, "the refill", iterations=3
    )
    assert_same(got, want)
    assert compile_s > 0
    counts = bar_counts(out.getvalue())
    assert counts[-1] == f"{EPISODES}/{EPISODES}"
    assert out.getvalue().startswith("compiling the refill: about ")


def test_quiet_reporter_prints_nothing(policy, capsys):
    env, env_params, net, params = policy
    run_in_chunks(env, env_params, net.apply, params, 2, MAX_STEPS, True, jax.random.key(0))
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_in_background_runs_in_order_and_reraises():
    from hackmatrix_train.search_evaluate import in_background

    seen = []
    jobs = [lambda: seen.append(1) or "a", lambda: 1 / 0, lambda: seen.append(3) or "c"]
    a, b, c = in_background(jobs)
    assert (a.result(timeout=10), c.result(timeout=10)) == ("a", "c")
    assert seen == [1, 3]  # one thread, the jobs in order; a failure does not stop the next
    with pytest.raises(ZeroDivisionError):
        b.result(timeout=10)


def test_search_rows_on_a_shared_step_are_the_whole_programs_rows(tmp_path):
    """``hm-eval --search``'s layouts play the same games: every row on one shared game step
    (``play_shared``, the default) gives the summary of whole programs compiled beside each
    other (``compile_beside``); the progress lines say what compiles when."""
    from hackmatrix_train.policy import evaluate_checkpoint
    from hackmatrix_train.progress import COLD_COMPILE_S
    from train.tiny_policy import write_tiny_policy

    path = write_tiny_policy(tmp_path / "run", MAX_STEPS)
    # a search row with a memory (the cryptog belief), which the greedy row's step carries too
    rows = [{"num_simulations": 2, "mode": "honest", "track_cryptogs": True}]
    timing = {"compile_seconds", "seconds", "seconds_per_decision"}
    summaries, texts = {}, {}
    for layout in ("shared", "beside"):
        report, out = plain_reporter()
        s = evaluate_checkpoint(path, EPISODES, seed=3, search=rows, report=report, layout=layout)
        s["search"] = [{k: v for k, v in r.items() if k not in timing} for r in s["search"]]
        summaries[layout], texts[layout] = s, out.getvalue().splitlines()
    assert summaries["shared"] == summaries["beside"]
    assert [r["search"]["track_cryptogs"] for r in summaries["shared"]["search"]] == [True]
    for layout, (moves, greedy_s) in {
        # a few episodes: the shared step compiles quick (hackmatrix_env.eager.FEW_GAMES)
        "shared": ("search moves beside", "evaluation sharing its quick step"),
        "beside": ("search evaluation beside", "evaluation beside a search"),
    }.items():
        lines = texts[layout]
        beside = [i for i, s in enumerate(lines) if s.endswith("cached after...") and "beside" in s]
        greedy = next(i for i, s in enumerate(lines) if s.startswith("compiling the evaluation ("))
        done = [i for i, s in enumerate(lines) if s.startswith("compiled the search evaluation")]
        assert len(beside) == 1 and beside[0] < greedy  # announced before the greedy compile
        assert len(done) == 1 and done[0] > greedy
        assert all(f"about {COLD_COMPILE_S[moves]} s" in lines[i] for i in beside)
        assert f"about {COLD_COMPILE_S[greedy_s]} s" in lines[greedy]
    # one game step for both rows: no second step compiles in the search row's turn
    assert not any(s.startswith("compiling the game's step for") for s in texts["shared"])


def test_an_unknown_layout_is_refused_before_anything_loads():
    from hackmatrix_train.policy import evaluate_checkpoint

    with pytest.raises(ValueError, match="layout must be shared, beside or sequential"):
        evaluate_checkpoint("no/such/policy", 1, search=[{}], layout="parallel")
