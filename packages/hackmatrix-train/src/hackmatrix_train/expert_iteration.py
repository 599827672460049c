"""Anchored, gated expert iteration: the honest search distilled into the network, held near
the policy it starts from, kept only when an evaluation says it plays better (issue 62).

The search trainer (``experiments/search_trainer.py``) learns from targets built on the network it is training,
so the network's own generalisation errors become the next target and compound
(``experiments/search.md``). This learner keeps the teacher fixed between gate decisions:

1. **anchor**: a frozen copy of the params (at first the starting policy);
2. **teacher**: the search with the *anchor* as prior and value (honest by default, every legal
   action considered at the root), which plays ``num_steps`` moves in each of ``num_envs``
   games; its improved policy at each visited state is the policy target (``teacher_actor``,
   with the trainer's actor signature);
3. **distillation** (``distill_loss``): cross-entropy to the target, plus ``kl_coef`` x
   KL(anchor's policy || network's policy) and ``vf_coef`` x the squared distance of the value
   to the anchor's value (the leaf values the search trusts stay where they were); **one pass**
   over each batch in minibatches of ``minibatch_size`` rows (``update.run_epochs`` with one
   epoch), not PPO's four epochs of small minibatches;
4. **the gate** (``gate``): every ``updates_per_round`` updates the candidate is scored by an
   evaluator passed in (``evaluate(params) -> float``, higher is better; with
   ``rescore_anchor`` ``evaluate(params, decision)``, the anchor scored again on each
   decision's games); it becomes the anchor
   only when it beats the anchor's score by more than ``margin``; a dropped candidate
   restarts from the anchor (``reset_on_drop``), so no round trains on from a policy the gate
   refused. ``train`` returns the last anchor: never a policy the evaluator scored below the
   start.

Figures: ``experiments/long_game.md``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from hackmatrix_train.rollout import collect_rollout
from hackmatrix_train.search import MASKED_LOGIT, SearchConfig, run_search
from hackmatrix_train.update import flatten_steps, gradient_step, mean_metrics, run_epochs


@dataclasses.dataclass(frozen=True)
class ExpertConfig:
    """The learner's settings (the search's are a ``SearchConfig``)."""

    num_envs: int = 64  # games the teacher plays at once
    num_steps: int = 16  # moves per game per update: a batch of num_envs x num_steps rows
    minibatch_size: int = 1024  # rows per gradient step; one pass over the batch per update
    lr: float = 3e-5
    max_grad_norm: float = 0.5
    kl_coef: float = 1.0  # KL(anchor || network): how hard the network is held at the anchor
    vf_coef: float = 0.125  # the value held at the anchor's value (squared distance)
    updates_per_round: int = 20  # updates between two gate decisions
    margin: float = 0.0  # the candidate replaces the anchor when its score > anchor's + margin
    # a dropped candidate restarts from the anchor with a fresh optimizer; False: it trains on
    # from where it was (long_game.md: trained on, four dropped candidates in a row drifted
    # further from the anchor, KL 0.003 -> 0.014, and scored lower round by round)
    reset_on_drop: bool = True
    # each decision scores the anchor again beside the candidate, both with ``evaluate(params,
    # decision)``: an evaluator that plays fresh games per decision then compares the two on
    # the same fresh games, and the anchor's score carries no selection bias (with one fixed
    # game set the anchor is the best of the candidates scored on it; long_game.md, run 3)
    rescore_anchor: bool = False

    def __post_init__(self):
        batch = self.num_envs * self.num_steps
        if min(self.num_envs, self.num_steps, self.minibatch_size, self.updates_per_round) < 1:
            raise ValueError("num_envs, num_steps, minibatch_size, updates_per_round must be >= 1")
        if batch % self.minibatch_size:
            raise ValueError(
                f"minibatch_size ({self.minibatch_size}) must divide the batch "
                f"(num_envs x num_steps = {batch})"
            )
        if not self.lr > 0 or self.kl_coef < 0 or self.vf_coef < 0:
            raise ValueError("lr must be > 0, kl_coef and vf_coef >= 0")

    @property
    def num_minibatches(self) -> int:
        return self.num_envs * self.num_steps // self.minibatch_size


class ExpertState(NamedTuple):
    """What the learner carries from update to update (the anchor is passed apart)."""

    params: Any
    opt_state: Any
    env_state: Any  # leaves [num_envs, ...]
    obs: Any  # the games' last observations, leaves [num_envs, ...]
    key: jax.Array


def teacher_actor(apply_fn, search_cfg: SearchConfig, search=run_search):
    """``act(params, obs, env_state, key) -> (action, log_prob, value, policy_target)``: the
    search's move and its improved policy (the trainer's actor signature; ``params`` are the
    teacher's, the anchor's). ``search`` is ``run_search``-shaped."""

    def act(params, obs, env_state, key):
        del obs
        out = search(apply_fn, search_cfg, params, key, env_state)
        log_prob = jnp.zeros(out.action.shape, jnp.float32)  # no importance ratio here
        return out.action, log_prob, out.root_value, out.policy_target

    return act


def masked_log_policy(logits, mask):
    """f32[..., A]: log-probabilities of the masked softmax, 0 on masked actions."""
    log_p = jax.nn.log_softmax(jnp.where(mask, logits, MASKED_LOGIT), axis=-1)
    return jnp.where(mask, log_p, 0.0)


def anchor_kl(logits, anchor_logits, mask):
    """f32[...]: KL(anchor's masked policy || the masked policy of ``logits``). Its gradient
    in ``logits`` is ``p - p_anchor``: a step against it moves each logit toward the anchor."""
    log_p = masked_log_policy(logits, mask)
    log_a = masked_log_policy(anchor_logits, mask)
    return jnp.sum(jnp.where(mask, jnp.exp(log_a) * (log_a - log_p), 0.0), axis=-1)


def distill_loss(params, apply_fn, obs, policy_target, anchor_logits, anchor_value, kl_coef,
                 vf_coef):  # fmt: skip
    """Cross-entropy to the teacher's target + ``kl_coef`` x ``anchor_kl`` + ``vf_coef`` x
    half the squared distance of the value to the anchor's; ``(loss, aux)``."""
    logits, value = apply_fn(params, obs)
    mask = obs.action_mask
    log_p = masked_log_policy(logits, mask)
    ce = -jnp.sum(policy_target * log_p, axis=-1).mean()
    kl = anchor_kl(logits, anchor_logits, mask).mean()
    vf = 0.5 * jnp.square(value - anchor_value).mean()
    entropy = -jnp.sum(jnp.exp(log_p) * log_p, axis=-1).mean()
    aux = {"policy_ce": ce, "anchor_kl": kl, "value_drift": vf, "entropy": entropy}
    return ce + kl_coef * kl + vf_coef * vf, aux


def make_optimizer(xcfg: ExpertConfig) -> optax.GradientTransformation:
    return optax.chain(optax.clip_by_global_norm(xcfg.max_grad_norm), optax.adam(xcfg.lr, eps=1e-5))


def init_state(env, env_params, params, xcfg: ExpertConfig, key: jax.Array) -> ExpertState:
    """Fresh games, a fresh optimizer for ``params``."""
    k_env, k_run = jax.random.split(key)
    obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(k_env, xcfg.num_envs), env_params
    )
    return ExpertState(params, make_optimizer(xcfg).init(params), env_state, obs, k_run)


def fresh_games(env, env_params, xcfg: ExpertConfig):
    """``new_games(state) -> state`` with the teacher's games reset to stage 1 (keys from
    ``state.key``); params and optimizer kept. Passed to ``train`` it starts every round's
    games afresh, so every round distils the same early-stage distribution of states instead
    of games spread over all eight stages (``long_game.md``, run 6: with it the rounds still
    got worse from the third anchor on, so that drift is the anchors', not the states')."""

    @jax.jit
    def reset(key):
        k_env, k_run = jax.random.split(key)
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(
            jax.random.split(k_env, xcfg.num_envs), env_params
        )
        return obs, env_state, k_run

    def new_games(state: ExpertState) -> ExpertState:
        obs, env_state, key = reset(state.key)
        return state._replace(env_state=env_state, obs=obs, key=key)

    return new_games


def make_update(apply_fn, env, env_params, xcfg: ExpertConfig, search_cfg: SearchConfig,
                actor=None, loss=None):  # fmt: skip
    """Jitted ``update(state, anchor) -> (state, metrics)``: the teacher plays, one pass of
    distillation. ``actor`` (``teacher_actor``'s shape, built from ``(apply_fn, search_cfg)``)
    and ``loss`` (``distill_loss``'s signature) replace the defaults."""
    act = (actor or teacher_actor)(apply_fn, search_cfg)
    loss = loss or distill_loss
    tx = make_optimizer(xcfg)

    def value_fn(params, obs):
        return apply_fn(params, obs)[1]

    @jax.jit
    def update(state: ExpertState, anchor):
        k_roll, k_pass, k_next = jax.random.split(state.key, 3)
        # 1. the teacher (the search on the anchor) plays num_steps moves of every game
        env_state, obs, _, traj, targets, _ = collect_rollout(
            act, value_fn, k_roll, anchor, env, env_params, state.env_state, state.obs, None,
            xcfg.num_steps,
        )  # fmt: skip
        # 2. the anchor's policy and value at the same states
        batch_obs, batch_targets = flatten_steps((traj.obs, targets))
        anchor_logits, anchor_value = apply_fn(anchor, batch_obs)
        batch = (batch_obs, batch_targets, anchor_logits, anchor_value)

        # 3. one pass over the batch in large minibatches
        def step(params, opt_state, mb):
            def loss_fn(p, mb):
                return loss(p, apply_fn, *mb, xcfg.kl_coef, xcfg.vf_coef)

            return gradient_step(loss_fn, params, opt_state, mb, tx)

        params, opt_state, aux = run_epochs(
            k_pass, state.params, state.opt_state, batch, step, 1, xcfg.num_minibatches
        )
        mask = batch_obs.action_mask
        anchor_top = jnp.argmax(jnp.where(mask, anchor_logits, MASKED_LOGIT), -1)
        metrics = {
            **mean_metrics(aux),
            # the share of states where the teacher's target moves the anchor's argmax
            "override_frac": (jnp.argmax(batch_targets, -1) != anchor_top).mean(),
            "reward_per_move": traj.reward.mean(),
            "episodes_ended": (traj.terminated | traj.truncated).sum().astype(jnp.float32),
        }
        return ExpertState(params, opt_state, env_state, obs, k_next), metrics

    return update


def gate(anchor, anchor_score: float, candidate, candidate_score: float, margin: float = 0.0):
    """``(anchor, score, accepted)``: the candidate replaces the anchor only when its score
    beats the anchor's by more than ``margin``."""
    if candidate_score > anchor_score + margin:
        return candidate, candidate_score, True
    return anchor, anchor_score, False


def restart_from(state: ExpertState, anchor, xcfg: ExpertConfig) -> ExpertState:
    """``state`` with the anchor's params and a fresh optimizer (the games go on): a dropped
    candidate's Adam moments belong to the direction the gate refused."""
    return state._replace(params=anchor, opt_state=make_optimizer(xcfg).init(anchor))


def train(
    update, state: ExpertState, evaluate: Callable[..., float], xcfg: ExpertConfig,
    rounds: int | None = None, time_budget_s: float | None = None, log=print,
    new_games: Callable[[ExpertState], ExpertState] | None = None,
) -> tuple[Any, list[dict], ExpertState, Any]:  # fmt: skip
    """Rounds of ``updates_per_round`` updates, each ended by the gate; ``(anchor, history,
    state, candidate)``: ``state`` the learner's last (restarted from the anchor if the last
    round was dropped and ``reset_on_drop``), ``candidate`` the last round's params, kept or not.

    The anchor starts as ``state.params``, scored by ``evaluate(params)``, or with
    ``xcfg.rescore_anchor`` by ``evaluate(params, decision)`` (0 for the start, then the
    round), the anchor scored again at every decision. ``new_games`` (``fresh_games``'s),
    when given, replaces the teacher's games before every round after the first. Runs
    ``rounds`` rounds, or until ``time_budget_s`` has passed (checked at a round's end),
    whichever comes first.
    ``history`` holds one dict per round: score, accepted, the round's mean metrics, seconds.
    """
    if rounds is None and time_budget_s is None:
        raise ValueError("give rounds or time_budget_s")
    t0 = time.perf_counter()
    anchor = state.params

    def score_of(params, decision: int) -> float:
        return float(evaluate(params, decision) if xcfg.rescore_anchor else evaluate(params))

    best = score_of(anchor, 0)
    history = [{"round": 0, "score": best, "accepted": True, "seconds": 0.0}]
    log(f"round 0: anchor score {best:.4f}")
    r, candidate = 0, anchor
    while rounds is None or r < rounds:
        r += 1
        if new_games is not None and r > 1:
            state = new_games(state)
        sums = None
        for _ in range(xcfg.updates_per_round):
            state, m = update(state, anchor)
            sums = m if sums is None else jax.tree.map(jnp.add, sums, m)
        means = {k: float(v) / xcfg.updates_per_round for k, v in sums.items()}
        if xcfg.rescore_anchor:  # the anchor on this decision's games
            best = score_of(anchor, r)
        score = score_of(state.params, r)
        anchor_score = best
        anchor, best, accepted = gate(anchor, best, state.params, score, xcfg.margin)
        candidate = state.params
        if not accepted and xcfg.reset_on_drop:
            state = restart_from(state, anchor, xcfg)
        seconds = time.perf_counter() - t0
        history.append(dict(round=r, score=score, anchor_score=anchor_score, accepted=accepted,
                            seconds=seconds, **means))  # fmt: skip
        log(f"round {r}: candidate {score:.4f} ({'kept' if accepted else 'dropped'}; anchor "
            f"{anchor_score:.4f}) kl {means['anchor_kl']:.4f} ce {means['policy_ce']:.4f} "
            f"override {means['override_frac']:.3f} {seconds:.0f}s")  # fmt: skip
        if time_budget_s is not None and seconds >= time_budget_s:
            break
    return anchor, history, state, candidate
