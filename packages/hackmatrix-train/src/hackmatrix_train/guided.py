"""PPO guided by the search: PPO's own update plus a KL term toward the search's improved
policy on PPO's own states (``hm-train --guide-kl K``).

Learners that copy the search's moves from the states the search plays (the search trainer in
``experiments/search_trainer.py``, ``expert_iteration.py``) leave the greedy network within noise
of its start or worse: the teacher's corrections do not generalise, and nothing pulls the rare
actions back. This learner keeps PPO whole (its sampled moves, its clipped advantage, its
entropy and exploration floor on the rare actions) and adds one term: on the states PPO's own
rollout visits, the search proposes its improved policy, and the loss adds ``guide_kl`` x a
KL between it and the network's policy, averaged over the searched rows: the forward
KL(target || policy), or with ``--guide-divergence reverse`` KL(policy || target). Over states
the network cannot tell apart, the forward KL fits the arithmetic mean of their targets, mass on
every action one of them favours, and the network flattens round after round; the reverse KL
(soft actor-critic's policy-improvement step, the target as its Boltzmann policy) fits their
normalised geometric mean, which takes mass off an action any of them rules out. The search is
``hm-eval``'s (the run's ``--search-*`` flags, honest by default, the canonical reward in the
tree unless ``--guide-bonus`` adds the program bonus the teacher's value learned); its prior
and value are the run's start, frozen (``--guide-teacher start``: the targets do not follow the
network they train, the loop that drove the search trainer's collapse), or the network being
trained (``online``). The search only advises; the game's reward, through PPO's
advantage, still decides.

It is ``ppo.make_update`` with its two injection points filled: the actor samples PPO's move
and searches the first ``guide_envs`` games of each device's share at every step (the search
is most of the cost); the actor's ``extra`` ``(target, weight)`` rides with the rows to the
loss (weight 1 on the searched rows, 0 elsewhere). Logged beside PPO's figures (``train/...``):
``search_kl`` (the forward KL, whichever pulls), ``reverse_kl``, ``override_frac`` (searched
states whose target's argmax is not the network's) and ``target_entropy``. specs/train.md §11
gives the measured reason for each default.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

from hackmatrix_train import ppo
from hackmatrix_train.expert_iteration import masked_log_policy
from hackmatrix_train.guide_config import check_guide
from hackmatrix_train.update import Learner

# a target's log where its mass underflowed to 0 on a legal action (reverse_kl): a large finite
# penalty, not an infinite one
LOG_FLOOR = -30.0


def guided_actor(
    cfg, apply_fn, searched_envs: int, search=None, teacher_params=None, tree_bonus: float = 0.0,
    teacher_apply=None,
):  # fmt: skip
    """``act(params, obs, env_state, key) -> (action, log_prob, value, (target, weight))``:
    PPO's sampled move (``ppo.sample_actor``), and the search's improved policy on the first
    ``searched_envs`` games of the device's share (``target`` f32[N, A], 0 on the rest;
    ``weight`` f32[N], 1 on the searched rows). ``search`` is ``run_search``-shaped (None:
    ``search.run_search``). The search's prior and value are ``teacher_params`` (a frozen
    network, e.g. the start's, computed by ``teacher_apply``, None: ``apply_fn``), or with
    None the network being trained. ``tree_bonus``: a reward per program acquired in the tree
    (``--guide-bonus``): a value trained with the program bonus counts the programs still to
    come, so a tree on the canonical reward alone sees each program it acquires as that bonus
    lost."""
    from hackmatrix_train.search import run_search, search_config_from_train

    search = search or run_search
    # hm-eval's search (the --search-* flags), its tree's rewards in the teacher's value's units
    search_cfg = dataclasses.replace(search_config_from_train(cfg), program_bonus=tree_bonus)
    sample = ppo.sample_actor(cfg, apply_fn)

    def act(params, obs, env_state, key):
        k_sample, k_search = jax.random.split(key)
        action, log_prob, value, _ = sample(params, obs, env_state, k_sample)
        num_envs, num_actions = obs.action_mask.shape
        rows = min(searched_envs, num_envs)
        part = jax.tree.map(lambda x: x[:rows], env_state)
        teacher = params if teacher_params is None else teacher_params
        out = search(teacher_apply or apply_fn, search_cfg, teacher, k_search, part)
        target = jnp.zeros((num_envs, num_actions), jnp.float32).at[:rows].set(out.policy_target)
        weight = (jnp.arange(num_envs) < rows).astype(jnp.float32)
        return action, log_prob, value, (target, weight)

    return act


def log_of(target):
    """``log(target)`` where the target has mass, 0 where it has none (0 log 0 = 0)."""
    return jnp.where(target > 0, jnp.log(jnp.maximum(target, 1e-30)), 0.0)


def search_kl(logits, mask, target, weight):
    """``(kl, override)``: the weighted mean over rows of KL(target || masked policy of
    ``logits``), and the weighted share of rows whose target's argmax is not the policy's.
    Its gradient in a row's logits is ``weight x (p - target)`` over the weights' sum: a step
    against it moves the policy toward the target."""
    log_p = masked_log_policy(logits, mask)
    rows = jnp.sum(jnp.where(mask, target * (log_of(target) - log_p), 0.0), axis=-1)
    differs = jnp.argmax(target, -1) != jnp.argmax(jnp.where(mask, logits, -jnp.inf), -1)
    total = jnp.maximum(weight.sum(), 1.0)
    return (rows * weight).sum() / total, (differs * weight).sum() / total


def reverse_kl(logits, mask, target, weight):
    """The weighted mean over rows of KL(masked policy of ``logits`` || target). Its gradient
    in a row's logits is ``weight x p x (log p - log target - KL)`` over the weights' sum: mass
    leaves the actions the policy favours more than the target does."""
    log_p = masked_log_policy(logits, mask)
    log_t = jnp.maximum(jnp.log(target), LOG_FLOOR)  # log 0 = -inf: the floor
    rows = jnp.sum(jnp.where(mask, jnp.exp(log_p) * (log_p - log_t), 0.0), axis=-1)
    return (rows * weight).sum() / jnp.maximum(weight.sum(), 1.0)


def target_entropy(target, weight):
    """The weighted mean entropy of the targets (what a KL toward them spreads the policy to)."""
    rows = -jnp.sum(target * log_of(target), -1)
    return (rows * weight).sum() / jnp.maximum(weight.sum(), 1.0)


def guided_loss(
    params, apply_fn, batch, adv, targets, *args, extra, kl_coef: float, divergence="forward"
):
    """``ppo.ppo_loss`` + ``kl_coef`` x the ``divergence``'s KL (``search_kl``'s forward one,
    or ``reverse_kl``) on the rows the search advised; both are logged."""
    total, aux = ppo.ppo_loss(params, apply_fn, batch, adv, targets, *args)
    target, weight = extra
    logits, _ = apply_fn(params, batch.obs)  # ppo_loss's forward again, for its logits
    mask = batch.obs.action_mask
    kl, override = search_kl(logits, mask, target, weight)
    rev = reverse_kl(logits, mask, target, weight)
    aux = {**aux, "search_kl": kl, "reverse_kl": rev, "override_frac": override,
           "target_entropy": target_entropy(target, weight)}  # fmt: skip
    return total + kl_coef * (rev if divergence == "reverse" else kl), aux


def start_params(cfg, env=None, env_params=None):
    """The params of the run's ``--init-params`` for the network that reads ``env``'s
    observations (None: HackMatrix's); a ``ValueError`` without one."""
    from hackmatrix_train.policy import load_policy

    if not cfg.init_params:
        raise ValueError("--guide-teacher start searches with the run's start: give "
                         "--init-params")  # fmt: skip
    return load_policy(cfg.init_params, env=env, env_params=env_params).params


def start_apply(cfg, env=None, env_params=None):
    """The apply of the network of the run's ``--init-params`` where it is not the run's own
    (a ``grid`` start of a ``grid-twin`` run), else None: the teacher searches with its own
    network, not a copy of it grown to the student's."""
    from hackmatrix_train import checkpoint as ckpt
    from hackmatrix_train.config import TrainConfig, network_layout
    from hackmatrix_train.policy import load_policy

    _, meta = ckpt.load_params(cfg.init_params)
    if network_layout(TrainConfig.from_dict(meta["config"])) == network_layout(cfg):
        return None
    return load_policy(cfg.init_params, env=env, env_params=env_params).apply_fn


def learner(
    kl_coef: float,
    searched_envs: int,
    teacher: str = "start",
    tree_bonus: float = 0.0,
    divergence: str = "forward",
) -> Learner:
    """PPO with the search's KL term as ``trainer.make_train``'s ``learner``. ``teacher``: the
    search's network, ``"start"`` (the run's ``--init-params``, frozen) or ``"online"`` (the
    network being trained); ``tree_bonus``: ``guided_actor``'s; ``divergence``: the pull's KL,
    ``"forward"`` or ``"reverse"`` (``guided_loss``). ``kl_coef`` 0 computes and logs the
    term without its pull."""
    check_guide(kl_coef, searched_envs, teacher, tree_bonus, divergence)

    def make_update(
        cfg, apply_fn, env, env_params, axis_name=None, *, actor=None, loss=None, frozen=None
    ):
        # the start's params come as the chunk's argument (``frozen``): one compiled program
        # for every teacher, so each round of --guide-rounds finds the last one's in the cache
        teacher_params = frozen if teacher == "start" else None
        if teacher == "start" and frozen is None:
            raise ValueError("--guide-teacher start needs the start's params as `frozen`")
        actor = actor or functools.partial(
            guided_actor,
            searched_envs=searched_envs,
            teacher_params=teacher_params,
            tree_bonus=tree_bonus,
            teacher_apply=start_apply(cfg, env, env_params) if teacher == "start" else None,
        )
        loss = loss or functools.partial(guided_loss, kl_coef=kl_coef, divergence=divergence)
        return ppo.make_update(cfg, apply_fn, env, env_params, axis_name, actor=actor, loss=loss)

    # a checkpoint records the name, and a resume must name the same: so do the settings
    bonus = f"-bonus{tree_bonus:g}" if tree_bonus else ""
    reverse = "-reverse" if divergence == "reverse" else ""
    return Learner(
        f"guided-ppo-{teacher}-kl{kl_coef:g}-{searched_envs}{bonus}{reverse}",
        make_update,
        frozen=start_params if teacher == "start" else None,
    )


def learner_of(cfg) -> Learner:
    """The learner ``cfg`` asks for: guided PPO with ``--guide-kl`` > 0, else PPO's."""
    if cfg.guide_kl > 0:
        return learner(
            cfg.guide_kl, cfg.guide_envs, cfg.guide_teacher, cfg.guide_bonus, cfg.guide_divergence
        )
    return ppo.LEARNER
