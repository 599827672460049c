"""Anchored, gated expert iteration (``expert_iteration.py``): the KL term pulls toward the
anchor, the gate keeps or replaces the anchor as the evaluator says, and a tiny run flows."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_train.evaluate import make_evaluate
from hackmatrix_train.expert_iteration import (
    ExpertConfig,
    ExpertState,
    anchor_kl,
    distill_loss,
    fresh_games,
    gate,
    init_state,
    make_update,
    train,
)
from hackmatrix_train.policy import load_policy, search_config
from hackmatrix_train.trainer import make_env
from train.tiny_policy import write_tiny_policy


class Obs(NamedTuple):
    action_mask: jax.Array


def _batch():
    """Three states: hand-built logits, anchor logits and masks (28 actions)."""
    mask = np.zeros((3, 28), bool)
    mask[0, [0, 1, 2, 4]] = True
    mask[1, [1, 3, 5, 9, 20]] = True
    mask[2, :] = True
    rng = np.random.default_rng(0)
    logits = jnp.asarray(rng.normal(size=(3, 28)), jnp.float32)
    anchor = jnp.asarray(rng.normal(size=(3, 28)) * 2.0, jnp.float32)
    return logits, anchor, jnp.asarray(mask)


def _probs(logits, mask):
    return np.asarray(jax.nn.softmax(jnp.where(mask, logits, -1e9), -1))


def test_kl_gradient_moves_the_logits_toward_the_anchor():
    logits, anchor, mask = _batch()
    grad = np.asarray(jax.grad(lambda z: anchor_kl(z, anchor, mask).sum())(logits))
    p, pa = _probs(logits, mask), _probs(anchor, mask)
    m = np.asarray(mask)
    np.testing.assert_allclose(grad[m], (p - pa)[m], atol=1e-5)  # d KL / d logits = p - p_a
    assert (grad[~m] == 0).all()  # masked actions are not touched
    # a step against the gradient raises the logits where the anchor has more mass
    moved = np.sign(-grad[m])
    wanted = np.sign(pa - p)[m]
    assert (moved == wanted)[np.abs(pa - p)[m] > 1e-4].all()
    after = logits - 0.5 * grad
    assert float(anchor_kl(after, anchor, mask).sum()) < float(
        anchor_kl(logits, anchor, mask).sum()
    )
    dist = lambda z: np.abs(_probs(z, mask) - pa).sum()  # noqa: E731
    assert dist(after) < dist(logits)


def test_distill_loss_kl_term_pulls_toward_the_anchor():
    """With the target equal to the network's own policy the cross-entropy's gradient is 0:
    what moves the logits is the KL term, toward the anchor, scaled by kl_coef."""
    logits, anchor, mask = _batch()
    params = {"logits": logits, "value": jnp.zeros(3)}
    apply_fn = lambda prm, obs: (prm["logits"], prm["value"])  # noqa: E731
    target = jnp.asarray(_probs(logits, mask))

    def grad_of(kl_coef):
        loss = lambda prm: distill_loss(prm, apply_fn, Obs(mask), target, anchor, jnp.zeros(3),  # noqa: E731
                                        kl_coef, 1.0)[0]  # fmt: skip
        return np.asarray(jax.grad(loss)(params)["logits"])

    np.testing.assert_allclose(grad_of(0.0), 0.0, atol=1e-6)
    g = grad_of(2.0)
    p, pa = _probs(logits, mask), _probs(anchor, mask)
    np.testing.assert_allclose(g, 2.0 * (p - pa) / 3, atol=1e-5)  # the mean over 3 rows


def test_distill_loss_value_term_pulls_toward_the_anchor_value():
    logits, anchor, mask = _batch()
    apply_fn = lambda prm, obs: (logits, prm)  # noqa: E731
    value, anchor_value = jnp.asarray([1.0, -2.0, 0.5]), jnp.asarray([0.0, 0.0, 1.0])
    target = jnp.asarray(_probs(logits, mask))
    g = jax.grad(lambda v: distill_loss(v, apply_fn, Obs(mask), target, anchor, anchor_value,
                                        1.0, 0.5)[0])(value)  # fmt: skip
    np.testing.assert_allclose(np.asarray(g), 0.5 * (value - anchor_value) / 3, atol=1e-6)


def test_gate_keeps_the_anchor_unless_the_candidate_scores_better():
    assert gate("anchor", 1.0, "cand", 0.5) == ("anchor", 1.0, False)
    assert gate("anchor", 1.0, "cand", 1.0) == ("anchor", 1.0, False)  # a tie keeps it
    assert gate("anchor", 1.0, "cand", 1.5) == ("cand", 1.5, True)
    assert gate("anchor", 1.0, "cand", 1.5, margin=0.6) == ("anchor", 1.0, False)


def _fake_run(scores, reset_on_drop=True, rounds=2):
    """``train`` with a fake update (params + 1 each update) and a fake evaluator that reads
    its score for the params from ``scores``; returns (anchor, history, anchors the teacher
    got, the params each update started from, the final state, the last candidate)."""
    xcfg = ExpertConfig(num_envs=1, num_steps=1, minibatch_size=1, updates_per_round=2,
                        reset_on_drop=reset_on_drop)  # fmt: skip
    seen, starts = [], []

    def update(state, anchor):
        seen.append(int(anchor))
        starts.append(int(state.params))
        metrics = {k: jnp.float32(0) for k in ("anchor_kl", "policy_ce", "override_frac")}
        return state._replace(params=state.params + 1), metrics

    state = ExpertState(jnp.int32(0), None, None, None, None)
    anchor, history, last, candidate = train(
        update, state, lambda p: scores[int(p)], xcfg, rounds=rounds, log=lambda s: None
    )
    return int(anchor), history, seen, starts, last, int(candidate)


def test_train_keeps_the_anchor_when_the_fake_evaluator_says_worse():
    anchor, history, seen, starts, last, candidate = _fake_run({0: 1.0, 2: 0.5})
    assert anchor == 0 and [h["accepted"] for h in history] == [True, False, False]
    assert seen == [0, 0, 0, 0]  # the teacher searched with the anchor all along
    # each dropped candidate restarted from the anchor: both rounds trained from 0
    assert starts == [0, 1, 0, 1] and candidate == 2 and int(last.params) == 0


def test_a_dropped_candidate_restarts_with_a_fresh_optimizer():
    _, _, _, _, last, _ = _fake_run({0: 1.0, 2: 0.5}, rounds=1)
    adam = last.opt_state[1][0]  # chain(clip, adam): adam's count and moments
    assert int(adam.count) == 0 and int(adam.mu) == 0


def test_without_reset_a_dropped_candidate_trains_on():
    anchor, history, seen, starts, last, candidate = _fake_run(
        {0: 1.0, 2: 0.5, 4: 0.9}, reset_on_drop=False
    )
    assert anchor == 0 and [h["accepted"] for h in history] == [True, False, False]
    assert seen == [0, 0, 0, 0] and starts == [0, 1, 2, 3]
    assert candidate == 4 and int(last.params) == 4 and last.opt_state is None


def test_train_replaces_the_anchor_when_the_fake_evaluator_says_better():
    anchor, history, seen, starts, last, candidate = _fake_run({0: 1.0, 2: 1.5, 4: 1.2})
    assert anchor == 2 and [h["accepted"] for h in history] == [True, True, False]
    assert seen == [0, 0, 2, 2]  # the second round's teacher is the new anchor
    assert starts == [0, 1, 2, 3] and candidate == 4
    assert int(last.params) == 2  # the dropped second round restarted from the new anchor


def test_rescore_anchor_compares_both_on_each_decision_games():
    """With ``rescore_anchor`` the evaluator gets the decision and scores the anchor again on
    it: a candidate that only beat the anchor's lucky first score is refused, and one that
    beats the anchor on the same fresh games is kept."""
    xcfg = ExpertConfig(num_envs=1, num_steps=1, minibatch_size=1, updates_per_round=1,
                        rescore_anchor=True)  # fmt: skip
    # decision -> {params: score}; the anchor (0) scored 9 on decision 0's games only
    table = {0: {0: 9.0}, 1: {0: 1.0, 1: 2.0}, 2: {1: 3.0, 2: 2.5}}
    calls = []

    def evaluate(params, decision):
        calls.append((int(params), decision))
        return table[decision][int(params)]

    def update(state, anchor):
        metrics = {k: jnp.float32(0) for k in ("anchor_kl", "policy_ce", "override_frac")}
        return state._replace(params=state.params + 1), metrics

    state = ExpertState(jnp.int32(0), None, None, None, None)
    anchor, history, _, _ = train(update, state, evaluate, xcfg, rounds=2, log=lambda s: None)
    # decision 1: the anchor scores 1 on its games, the candidate 2 > 1 (not > 9): kept
    # decision 2: the new anchor (1) scores 3, the candidate (2) 2.5: dropped
    assert calls == [(0, 0), (0, 1), (1, 1), (1, 2), (2, 2)]
    assert int(anchor) == 1 and [h["accepted"] for h in history] == [True, True, False]
    assert [h.get("anchor_score") for h in history[1:]] == [1.0, 3.0]


MAX_STEPS = 24


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = write_tiny_policy(tmp_path_factory.mktemp("policy") / "run", MAX_STEPS)
    return load_policy(path, max_steps=MAX_STEPS)


def test_a_tiny_run_does_not_lower_its_start_greedy_score(tiny):
    env, env_params = make_env(tiny.cfg), tiny.env_params
    xcfg = ExpertConfig(num_envs=4, num_steps=4, minibatch_size=8, updates_per_round=2, lr=1e-3)
    teacher = search_config(tiny, num_simulations=4, max_num_considered_actions=28)
    update = make_update(tiny.apply_fn, env, env_params, xcfg, teacher)
    # the short fixed scenario set: 8 greedy games from one key
    run = make_evaluate(env, env_params, tiny.apply_fn, 8, MAX_STEPS, greedy=True)

    def score(params):
        return float(np.asarray(run(params, jax.random.key(3))["ret"]).mean())

    state = init_state(env, env_params, tiny.params, xcfg, jax.random.key(0))
    candidates = []

    def evaluate(params):
        candidates.append(params)
        return score(params)

    anchor, history, _, last = train(update, state, evaluate, xcfg, rounds=2, log=lambda s: None)
    assert len(history) == 3 and len(candidates) == 3
    assert candidates[-1] is last
    for h in history[1:]:
        assert np.isfinite([h["policy_ce"], h["anchor_kl"], h["value_drift"]]).all()
    # the learner moved the network, and what it returns scores no lower than the start
    moved = jax.tree.map(lambda a, b: float(jnp.abs(a - b).max()), candidates[-1], tiny.params)
    assert max(jax.tree.leaves(moved)) > 0
    assert score(anchor) >= score(tiny.params)


def test_fresh_games_restart_every_round_after_the_first(tiny):
    """With ``new_games`` each round after the first starts from newly reset games (step 0,
    stage 1), drawn from the learner's key, and params and optimizer pass through."""
    env, env_params = make_env(tiny.cfg), tiny.env_params
    xcfg = ExpertConfig(num_envs=2, num_steps=1, minibatch_size=1, updates_per_round=3)
    state = init_state(env, env_params, tiny.params, xcfg, jax.random.key(0))
    new_games = fresh_games(env, env_params, xcfg)
    steps_seen = []

    def update(state, anchor):  # one move of every game, through the env itself
        steps_seen.append(np.asarray(state.env_state.time).tolist())
        keys = jax.random.split(jax.random.fold_in(state.key, len(steps_seen)), xcfg.num_envs)
        actions = jnp.argmax(state.obs.action_mask, -1)
        obs, env_state, *_ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
            keys, state.env_state, actions, env_params
        )
        metrics = {k: jnp.float32(0) for k in ("anchor_kl", "policy_ce", "override_frac")}
        return state._replace(env_state=env_state, obs=obs), metrics

    train(update, state, lambda p: 0.0, xcfg, rounds=2, log=lambda s: None,
          new_games=new_games)  # fmt: skip
    assert steps_seen == [[0, 0], [1, 1], [2, 2], [0, 0], [1, 1], [2, 2]]
    again = new_games(state)
    assert again.params is state.params and again.opt_state is state.opt_state
    assert not np.array_equal(jax.random.key_data(again.key), jax.random.key_data(state.key))
    assert int(jax.tree.leaves(again.env_state)[0].shape[0]) == xcfg.num_envs
