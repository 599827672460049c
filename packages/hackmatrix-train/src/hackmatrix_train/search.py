"""Planning with the game itself: Gumbel MuZero search (mctx) with the real env step as model.

The search runs DeepMind's ``mctx.gumbel_muzero_policy`` over a batch of games (vmapped,
jitted, CPU or GPU). Its model is the exact game: a node's embedding is an ``EnvState`` and
``recurrent_fn`` is one real env step (``transition.step_state``, no auto-reset), with the key
that mctx passes, so every expansion samples the game's own randomness (open loop;
``chance="common"`` gives a node's children one shared draw instead). The
network gives the prior (its logits, illegal and disabled actions masked) and the leaf value.

* **Terminal states are absorbing** inside the tree: a step from a node that ended (the player
  died, won, or sent an invalid action; or ``time`` reached the step limit: the evaluation ends
  the episode there too) returns reward 0, discount 0 and the same state.
* **Units**: rewards are the canonical reward times ``reward_scale``, the units the value head
  learned; the discount is the trainer's ``gamma``. ``program_bonus`` adds the trainer's
  program bonus to the tree's rewards (search-side shaping, named in every result); it is off
  by default, as measured (specs/search.md §2). A run trained with ``--away-penalty`` learned
  its value with that charge for walking away from the exit: its tree charges it too.
* **The mask**: the root's ``invalid_actions`` and every node's prior use the policy's mask:
  the game's, less the actions the policy was trained without (``disabled``, e.g. UNDO), with
  ``adapters.restrict_mask``'s fallback. In honest mode the root's mask is the one the player
  sees (``seen_root_mask``): a re-draw can put an invisible cryptog on a diagonal neighbour,
  where CRASH becomes legal in the re-drawn game and not in the real one.
* **Honest by default** (``mode="honest"``): each search plans from
  ``hidden.resample_hidden(key, state)``, a state that agrees with the observation and has
  every hidden part re-drawn (a determinization per decision). ``mode="oracle"`` searches the
  true state, for measuring what honesty costs; every result names its mode.
* **A slim tree**: a policy trained without UNDO searches states whose UNDO ring holds only
  the newest snapshot (``slim_ring``): the ring is most of a state's bytes, and the tree keeps
  one state per node.
* **Keys**: ``search(params, key, state)`` splits ``key`` into the determinization's and the
  tree's keys; the caller keeps the real game's key apart (``make_search_evaluate`` draws both
  from one step key with the same split as the greedy evaluation, so the real game's draws
  are the same with and without search). Same keys, same decisions.

``SearchOutput`` carries what the viewers show: the chosen action, the greedy (prior) action,
the root's visit counts, Q values and the improved policy (``action_weights``), the policy
target a search trainer learns from.
"""

from __future__ import annotations

import copy
import dataclasses
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import mctx
from hackmatrix_env.action_set import allowed_actions, restrict_mask
from hackmatrix_env.constants import Action, Program
from hackmatrix_env.hidden import resample_hidden
from hackmatrix_env.history import peek_snapshot
from hackmatrix_env.observation import observe
from hackmatrix_env.programs import owned_programs
from hackmatrix_env.transition import step_state
from hackmatrix_env.types import History

from hackmatrix_train.search_config import (  # noqa: F401 (re-exported: search.SearchConfig)
    CHANCES,
    MODES,
    SELECTIONS,
    SIMULATIONS_PER_DETERMINIZATION,
    TARGET_QS,
    SearchConfig,
    check_search_config,
    num_determinizations,
)
from hackmatrix_train.stats import away_penalty

# The logit of an action out of the mask: finite, so mctx's softmax and the completed-Q sums
# stay finite; exp(-1e9 - max) is exactly 0 in float32.
MASKED_LOGIT = -1e9


class SearchOutput(NamedTuple):
    """One search per game (leading batch axis B); what a viewer or a trainer reads."""

    action: jax.Array  # int32[B]      the action to play
    prior_action: jax.Array  # int32[B]  the greedy network's action (argmax of the masked prior)
    action_weights: jax.Array  # f32[B, A]  the improved policy (completed-Q) the search acts on
    policy_target: jax.Array  # f32[B, A]  the improved policy at ``target_value_scale``
    visit_counts: jax.Array  # int32[B, A] root visits per action
    q_values: jax.Array  # f32[B, A]    root Q per action (completed by the value where unvisited)
    prior: jax.Array  # f32[B, A]       the masked prior's probabilities
    root_value: jax.Array  # f32[B]     the network's value at the root
    search_value: jax.Array  # f32[B]   the root's value after the search
    mask: jax.Array  # bool[B, A]       the policy's mask at the root


class Node(NamedTuple):
    """A tree node's embedding: the game state, whether the episode has ended there, and the
    key its children's steps draw from (``chance="common"``)."""

    state: object  # EnvState, batched
    done: jax.Array  # bool[B]
    chance: jax.Array | None = None  # uint32[B, 2]: a raw key per game ("common" only)


def policy_observation(state, disabled: tuple[int, ...]):
    """The observations of a batch of states, their mask less ``disabled`` (restrict_mask)."""
    obs = jax.vmap(observe)(state)
    if not disabled:
        return obs
    allowed = jnp.asarray(allowed_actions(disabled))
    return obs._replace(action_mask=restrict_mask(obs.action_mask, allowed))


def policy_mask(state, disabled: tuple[int, ...]) -> jax.Array:
    """bool[B, A]: the game's mask of a batch of states, less ``disabled`` (restrict_mask)."""
    return policy_observation(state, disabled).action_mask


def seen_root_mask(redrawn_mask: jax.Array, seen_mask: jax.Array) -> jax.Array:
    """bool[B, A]: the root's legal actions for a search from re-drawn states.

    The mask is part of the observation, so the real game's (``seen_mask``) is what the player
    knows; a re-drawn state's mask can differ where legality depends on hidden parts (an
    invisible cryptog on a diagonal neighbour makes CRASH legal, rules §4.3). The root keeps
    the actions legal in both (the tree can step them), or the seen mask alone where the two
    share none, so the search never plays a move the real game refuses."""
    both = redrawn_mask & seen_mask
    return jnp.where(both.any(axis=-1, keepdims=True), both, seen_mask)


def evaluate_states(apply_fn, params, state, disabled: tuple[int, ...]):
    """``(masked logits f32[B, A], value f32[B], mask bool[B, A])`` of a batch of states."""
    obs = policy_observation(state, disabled)
    logits, value = apply_fn(params, obs)
    return jnp.where(obs.action_mask, logits, MASKED_LOGIT), value, obs.action_mask


def programs_counted(state, skip_undo: bool) -> jax.Array:
    """f32[B]: the programs each game owns, UNDO aside when ``skip_undo`` (what the trainer's
    program bonus counts: ``stats.program_potential``)."""
    owned = jax.vmap(owned_programs)(state.game).astype(jnp.float32)
    return owned.sum(-1) - (owned[:, Program.UNDO] if skip_undo else 0.0)


def make_recurrent_fn(apply_fn, cfg: SearchConfig):
    """mctx's ``recurrent_fn``: one real env step per game, terminal nodes absorbing."""

    def recurrent_fn(params, key, action, node: Node):
        batch = action.shape[0]
        keys = jax.random.split(key, batch)
        chance = node.chance
        if cfg.chance == "common":  # every child of a node steps with the node's own draw
            keys, chance = common_keys(node.chance)
        stepped, reward, terminated, _ = jax.vmap(step_state)(keys, node.state, action)
        if cfg.program_bonus:  # the value head learned the trainer's bonus: so does the tree
            skip = cfg.program_bonus_skips_undo
            gained = programs_counted(stepped, skip) - programs_counted(node.state, skip)
            if cfg.program_bonus_from_stage > 1:  # acquired before its first stage: none
                gained = jnp.where(
                    node.state.game.stage >= cfg.program_bonus_from_stage, gained, 0.0
                )
            reward = reward + cfg.program_bonus * gained
            if not cfg.program_bonus_kept_at_death:  # a death gives back what the game earned
                died = terminated & (stepped.game.player.hp == 0)
                reward = reward - cfg.program_bonus * jnp.where(
                    died, programs_counted(stepped, skip), 0.0
                )
        if cfg.away_penalty:  # so did the trainer's charge for walking away from the exit
            reward = reward + away_penalty(cfg.away_penalty)(node.state, stepped)
        truncated = stepped.time >= cfg.max_steps_in_episode
        state = select_rows(node.done, node.state, stepped)
        done = node.done | terminated | truncated
        logits, value, _ = evaluate_states(apply_fn, params, state, cfg.disabled)
        out = mctx.RecurrentFnOutput(
            reward=jnp.where(node.done, 0.0, reward * cfg.reward_scale).astype(jnp.float32),
            discount=jnp.where(done, 0.0, cfg.gamma).astype(jnp.float32),
            prior_logits=logits,
            value=jnp.where(done, 0.0, value).astype(jnp.float32),
        )
        return out, Node(state=state, done=done, chance=chance)

    return recurrent_fn


def common_keys(chance: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Per game, the key a node's children step with (typed) and their own chance key (raw
    uint32[B, 2], as the tree stores it): both derived from the node's key, not the action."""
    pair = jax.vmap(lambda k: jax.random.split(jax.random.wrap_key_data(k)))(chance)
    return pair[:, 0], jax.random.key_data(pair[:, 1])


def select_rows(flag: jax.Array, on_true, on_false):
    """Per row of a batch: ``on_true``'s leaves where ``flag`` (bool[B]), else ``on_false``'s."""

    def pick(a, b):
        return jnp.where(flag.reshape(flag.shape + (1,) * (a.ndim - 1)), a, b)

    return jax.tree.map(pick, on_true, on_false)


def slim_ring(state):
    """A batch of states with the UNDO ring cut to its newest snapshot (depth 1).

    Nothing but UNDO reads the ring, and UNDO reads only its newest snapshot; a policy
    trained without UNDO (``disabled``) takes it only where nothing else is legal
    (``restrict_mask``), so one snapshot serves the search exactly but for two such UNDOs in
    a row. The ring is most of a state's bytes, and the tree stores a state per node.
    """
    hist = state.history
    newest = jax.vmap(peek_snapshot)(hist)
    size = jnp.minimum(hist.size, 1)
    slim = History(
        snapshots=jax.tree.map(lambda x: x[:, None], newest),
        top=jnp.zeros_like(hist.top),
        size=size,
        lost=hist.lost + hist.size - size,
        depth=1,
    )
    return state.replace(history=slim)


def run_search(
    apply_fn, cfg: SearchConfig, params, key: jax.Array, state, cryptog_belief=None, *,
    make_recurrent=make_recurrent_fn, resample=resample_hidden,
    policy_fn=mctx.gumbel_muzero_policy,
) -> SearchOutput:  # fmt: skip
    """Search from a batch of states (leading axis B); see the module doc. Not jitted itself.

    ``cryptog_belief`` (bool[B,6,6], honest mode): where each game's unseen cryptogs can be,
    from the player's history (``hidden.track_cryptogs``); None: anywhere dark.

    The search's parts, which an experiment may replace (``functools.partial(run_search,
    resample=...)``): ``make_recurrent(apply_fn, cfg)``, mctx's ``recurrent_fn`` (the model);
    ``resample(key, state[, belief])``, the honest determinization of one game
    (``hidden.resample_hidden``); ``policy_fn``, ``mctx.gumbel_muzero_policy``'s signature.

    With ``determinizations`` K > 1 (honest mode), each game is searched K times from K
    independent re-draws of its hidden parts, with ``num_simulations / K`` simulations each;
    the output averages their improved policies (the played action is the average's argmax),
    sums their visits and weighs their Q by visits.
    """
    batch = state.time.shape[0]
    k_hidden, k_search = jax.random.split(key)
    ens = num_determinizations(cfg)
    if int(Action.UNDO) in cfg.disabled:
        state = slim_ring(state)
    if ens > 1:
        state = jax.tree.map(lambda x: jnp.repeat(x, ens, axis=0), state)
    seen_mask = None
    if cfg.mode == "honest":
        seen_mask = policy_mask(state, cfg.disabled)
        keys = jax.random.split(k_hidden, batch * ens)
        if cryptog_belief is None:
            state = jax.vmap(resample)(keys, state)
        else:
            belief = jnp.repeat(cryptog_belief, ens, axis=0)
            state = jax.vmap(resample)(keys, state, belief)
    logits, value, mask = evaluate_states(apply_fn, params, state, cfg.disabled)
    if seen_mask is not None:
        mask = seen_root_mask(mask, seen_mask)
        logits = jnp.where(mask, logits, MASKED_LOGIT)
    chance = None  # the tree's chance keys, only for chance="common": off the tree's key, which
    if cfg.chance == "common":  # mctx keeps, so the sampled search's key stream is unchanged
        k_chance = jax.random.fold_in(k_search, 1)
        chance = jax.random.key_data(jax.random.split(k_chance, batch * ens))
    node = Node(state, jnp.zeros(batch * ens, bool), chance)
    root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=node)
    out = policy_fn(
        params,
        k_search,
        root,
        make_recurrent(apply_fn, cfg),
        num_simulations=cfg.num_simulations // ens,
        invalid_actions=~mask,
        max_depth=cfg.max_depth,
        qtransform=partial(mctx.qtransform_completed_by_mix_value, value_scale=cfg.value_scale),
        max_num_considered_actions=cfg.max_num_considered_actions,
        gumbel_scale=cfg.gumbel_scale,
    )
    weights = jnp.where(mask, out.action_weights, 0.0)
    target = weights
    if cfg.target_value_scale is not None or cfg.target_q != "rescaled":
        scale = cfg.value_scale if cfg.target_value_scale is None else cfg.target_value_scale
        rescale = cfg.target_q == "rescaled"
        target = improved_policy(out.search_tree, logits, mask, scale, rescale)
    summary = out.search_tree.summary()
    visits, q, search_value = summary.visit_counts, summary.qvalues, summary.value
    action = out.action
    if ens > 1:  # the observation is the same in every copy: so is the prior

        def per_game(x):
            return x.reshape(batch, ens, *x.shape[1:])

        weights = per_game(weights).mean(axis=1)
        target = per_game(target).mean(axis=1)
        q_sum = (per_game(q) * per_game(visits)).sum(axis=1)
        visits = per_game(visits).sum(axis=1)
        q = jnp.where(visits > 0, q_sum / jnp.maximum(visits, 1), 0.0)
        search_value = per_game(search_value).mean(axis=1)
        value = per_game(value)[:, 0]
        # the union of the copies' root masks (each copy's weights are 0 off its own), and
        # the network's logits on it (the same in every copy where unmasked)
        logits = per_game(logits).max(axis=1)
        mask = per_game(mask).any(axis=1)
    if cfg.selection == "improved" or ens > 1:
        action = jnp.argmax(jnp.where(mask, weights, -1.0), axis=-1)
    return SearchOutput(
        action=action.astype(jnp.int32),
        prior_action=jnp.argmax(logits, axis=-1).astype(jnp.int32),
        action_weights=weights,
        policy_target=target,
        visit_counts=visits.astype(jnp.int32),
        q_values=q,
        prior=jax.nn.softmax(logits, axis=-1),
        root_value=value,
        search_value=search_value,
        mask=mask,
    )


def improved_policy(
    tree, prior_logits, mask, value_scale: float, rescale: bool = True
) -> jax.Array:
    """The root's improved policy, softmax(prior logits + completed Q), at ``value_scale``:
    what ``mctx.gumbel_muzero_policy`` returns as ``action_weights`` at its own scale.
    ``rescale=False`` leaves the completed Q in the value's units (no min-max to [0, 1])."""
    qtransform = partial(
        mctx.qtransform_completed_by_mix_value, value_scale=value_scale, rescale_values=rescale
    )
    completed = jax.vmap(qtransform, in_axes=[0, None])(tree, tree.ROOT_INDEX)
    return jax.nn.softmax(jnp.where(mask, prior_logits + completed, MASKED_LOGIT), axis=-1)


# The config's floats that ``make_search`` passes to its compiled program as arguments
ARGUMENT_FLOATS = ("gumbel_scale", "value_scale", "target_value_scale", "gamma", "reward_scale")


def make_search(apply_fn, cfg: SearchConfig, **parts):
    """``search(params, key, state[, cryptog_belief]) -> SearchOutput`` over a batch of states,
    jitted; ``parts`` (``make_recurrent``, ``resample``, ``policy_fn``) replace ``run_search``'s
    own. It is ``partial(jitted, floats)``: the config's ``ARGUMENT_FLOATS`` enter the program
    as arguments (``with_floats``), not as constants, so configs that differ only in them
    compile one program, and the persistent compile cache serves the next (a search
    compiles in about a minute on a CPU core). The results are the constants' bit for bit
    (``tests/train/test_search_options.py``)."""
    floats = {
        k: jnp.float32(getattr(cfg, k)) for k in ARGUMENT_FLOATS if getattr(cfg, k) is not None
    }

    def search(floats, params, key, state, *belief):
        return run_search(apply_fn, with_floats(cfg, floats), params, key, state, *belief, **parts)

    return partial(jax.jit(search), floats)


def with_floats(cfg: SearchConfig, floats: dict) -> SearchConfig:
    """``cfg`` with the fields named in ``floats`` set to its values (traced arrays inside a
    jitted search), unchecked: ``SearchConfig``'s checks compare Python numbers."""
    out = copy.copy(cfg)
    for name, value in floats.items():
        object.__setattr__(out, name, value)
    return out


def search_config_from_train(train_cfg, **overrides) -> SearchConfig:
    """The ``SearchConfig`` of a trained policy: the run's search settings (``train_cfg.search``)
    in its units (its gamma, reward scale, step limit and disabled programs); ``overrides``
    (``SearchConfig`` fields, ``None`` for "the run's") set the search's own options.

    This is where a ``SearchConfig`` is built from a run: a learner that searches calls it
    with the run's settings, ``hm-eval``, ``hm-watch`` and ``hm-play`` (``policy.search_config``)
    with ``SearchConfig``'s play settings in their place.
    """
    from hackmatrix_train.config import disabled_actions

    units = dict(
        program_bonus_skips_undo=bool(train_cfg.program_terms_skip_undo),
        program_bonus_kept_at_death=bool(train_cfg.program_bonus_kept_at_death),
        away_penalty=float(train_cfg.away_penalty),
        gamma=float(train_cfg.gamma),
        reward_scale=float(train_cfg.reward_scale),
        max_steps_in_episode=int(train_cfg.max_steps_in_episode),
        disabled=tuple(int(a) for a in disabled_actions(train_cfg)),
    )
    options = {k: v for k, v in overrides.items() if v is not None}
    return dataclasses.replace(train_cfg.search, **{**units, **options})


def describe(cfg: SearchConfig) -> dict:
    """The search's settings as a JSON-ready dict (every result carries it)."""
    d = dataclasses.asdict(cfg)
    d["disabled"] = list(cfg.disabled)
    d["determinizations"] = num_determinizations(cfg)
    return d
