"""Search evaluation: whole episodes whose moves a search chooses, ``slots`` games at a time.

A search costs its simulations per game per move, so the episodes do not run as one batch that
waits on its longest game: a fixed number of slots play, and a slot whose episode ends takes the
next one (``make_refill_evaluate``). Episode ``i`` is ``evaluate.make_evaluate``'s episode ``i``
(the same reset and step keys), so a searched row and a greedy row play the same games. The
per-episode arrays and their summary are ``evaluate``'s (``tally_step``, ``summarize``).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from hackmatrix_train import progress
from hackmatrix_train.evaluate import start_episodes, summarize, tally_step


def refill_parts(env, env_params, act, num_episodes: int, max_steps: int, slots: int, memory=None):
    """``make_refill_evaluate``'s program in two parts, for a host loop that shows progress.

    ``start(params, key) -> carry`` resets the episodes; ``advance(params, carry, k_end) ->
    carry`` runs the loop on until iteration ``k_end`` or until every episode has ended. The
    per-episode arrays are ``carry[ACC]``; ``carry[0]`` counts the iterations so far.
    """
    from hackmatrix_train.search import select_rows

    step_fn = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    n, w = num_episodes, min(slots, num_episodes)
    if memory is None:  # a memoryless actor: a placeholder memory that nothing reads
        start_mem, update = (lambda s: jnp.zeros(s.time.shape, bool)), (lambda m, *_: m)
        choose = lambda p, s, o, k, m: act(p, s, o, k)  # noqa: E731
    else:
        (start_mem, update), choose = memory, act
    take = lambda tree, rows: jax.tree.map(lambda x: x[rows], tree)  # noqa: E731

    def start(params, key):
        del params
        k_run, obs_all, state_all, acc = start_episodes(env, env_params, key, n)
        keys = jax.random.split(k_run, max_steps)
        first = jnp.arange(w)
        return (
            jnp.int32(0), jnp.int32(w), first, jnp.zeros(w, jnp.int32),
            take(obs_all, first), take(state_all, first), acc, start_mem(take(state_all, first)),
            keys, obs_all, state_all,
        )  # fmt: skip

    def advance(params, carry, k_end):
        keys, obs_all, state_all = carry[8:]

        def cond(c):
            k, acc = c[0], c[6]
            return (k < k_end) & jnp.any(acc["alive"])

        def body(c):
            k, next_ep, ep, t, obs, state, acc, mem = c
            active = acc["alive"][ep]  # bool[w]: the slot's episode is still running
            k_pol = jax.random.split(keys[jnp.minimum(k, max_steps - 1)])[0]
            action = choose(params, state, obs, k_pol, mem)
            env_key = jax.vmap(lambda tt, i: jax.random.split(jax.random.split(keys[tt])[1], n)[i])(
                jnp.minimum(t, max_steps - 1), ep
            )
            new_obs, new_state, reward, term, trunc, info = step_fn(
                env_key, state, action, env_params
            )
            mem = update(mem, state, action, new_state)
            rows = take(acc, ep)
            rows = tally_step(rows, state, action, reward, term, trunc, info)
            rows["alive"] = rows["alive"] & active  # an idle slot's episode stays as it is
            kept = select_rows(active, rows, take(acc, ep))
            acc = jax.tree.map(lambda a, r: a.at[ep].set(r), acc, kept)
            # an ended episode's slot takes the next episode (an idle slot keeps its last one)
            ended = active & (term | trunc)
            order = jnp.cumsum(ended) - 1
            fresh = next_ep + order
            refill = ended & (fresh < n)
            ep = jnp.where(refill, fresh, ep)
            t = jnp.where(refill, 0, t + 1)
            new_obs = select_rows(refill, take(obs_all, ep), new_obs)
            new_state = select_rows(refill, take(state_all, ep), new_state)
            mem = select_rows(refill, start_mem(new_state), mem)
            next_ep = next_ep + jnp.sum(refill, dtype=jnp.int32)
            return k + 1, next_ep, ep, t, new_obs, new_state, acc, mem

        return (*jax.lax.while_loop(cond, body, carry[:8]), keys, obs_all, state_all)

    return start, advance


ACC = 6  # the per-episode arrays' place in refill_parts' carry


def make_refill_evaluate(
    env, env_params, act, num_episodes: int, max_steps: int, slots: int, memory=None
):
    """Jitted ``evaluate(params, key) -> per-episode arrays`` over ``slots`` games at a time.

    ``act(params, state, obs, key) -> int32[slots]`` chooses the moves of the games in the
    slots. With ``memory = (start, update)`` the actor remembers what it has seen:
    ``start(states)`` is a fresh episode's memory, ``update(memory, states, actions,
    next_states)`` follows one step, and ``act`` takes the memory as a fifth argument.

    Episode ``i`` is ``make_evaluate``'s episode ``i``: the same reset key and, at its
    own step ``t``, the same real-game key (step key ``t``, its env half, row ``i``), so the
    games see the same draws whatever the slot count. When an episode ends its slot takes the
    next one; the loop stops when every episode has ended. A search costs its simulations per
    game per move, so no slot waits on the longest episode of a batch. The policy's key at
    iteration ``k`` is the policy half of step key ``k``: with ``slots >= num_episodes`` every
    episode is at step ``k`` then, and the draws are exactly ``make_evaluate``'s.
    """
    start, advance = refill_parts(env, env_params, act, num_episodes, max_steps, slots, memory)

    @jax.jit
    def evaluate(params, key):
        return advance(params, start(params, key), num_episodes * max_steps)[ACC]

    return evaluate


class CompiledRefill(NamedTuple):
    """``refill_parts`` compiled and started: the loop's first carry, the compiled ``advance``
    and the seconds both took (tracing, XLA and the reset)."""

    carry: tuple
    advance: object
    seconds: float


def compile_refill(parts, params, key) -> CompiledRefill:
    """``refill_parts``' ``start`` run and ``advance`` compiled, ready for ``play_refill``."""
    start, advance = parts
    t0 = time.perf_counter()
    carry = jax.block_until_ready(jax.jit(start)(params, key))
    advance = jax.jit(advance).lower(params, carry, jnp.int32(0)).compile()
    return CompiledRefill(carry, advance, time.perf_counter() - t0)


def play_refill(
    compiled: CompiledRefill, params, num_episodes: int, max_steps: int, report=progress.QUIET,
    iterations: int = 16,
) -> dict:  # fmt: skip
    """The per-episode arrays of a compiled refill loop, ``iterations`` moves per host call,
    with a progress bar of the ended episodes on ``report``. The loop itself decides when to
    stop, so the result is ``make_refill_evaluate``'s."""
    carry, advance = compiled.carry, compiled.advance
    limit, ended = num_episodes * max_steps, 0
    with report.bar(num_episodes, "episodes") as bar:
        while True:
            k = int(carry[0])
            carry = advance(params, carry, jnp.int32(min(k + iterations, limit)))
            alive = int(carry[ACC]["alive"].sum())
            bar.update(num_episodes - alive - ended)
            ended = num_episodes - alive
            if alive == 0 or int(carry[0]) >= limit:
                break
    return carry[ACC]


def refill_in_chunks(
    parts, params, key, num_episodes: int, max_steps: int, report=progress.QUIET,
    what: str = "the search evaluation", iterations: int = 16,
) -> tuple[dict, float]:  # fmt: skip
    """``(per-episode arrays, compile seconds)``: ``compile_refill`` announced on ``report``,
    then ``play_refill``."""
    with report.compiling(what, progress.COLD_COMPILE_S["search evaluation"]):
        compiled = compile_refill(parts, params, key)
    result = play_refill(compiled, params, num_episodes, max_steps, report, iterations)
    return result, compiled.seconds


def in_background(jobs) -> list[Future]:
    """Run the callables ``jobs`` in order on one daemon thread; a ``Future`` each.

    ``hm-eval`` compiles its search evaluations this way while the greedy evaluation compiles
    and plays: XLA compiles with the GIL released, so the two compiles overlap (specs/train.md).
    A daemon thread, so an interrupted command does not wait for a compile nobody needs.
    """
    futures = [Future() for _ in jobs]

    def run():
        for job, future in zip(jobs, futures, strict=True):
            try:
                future.set_result(job())
            except BaseException as e:  # re-raised by future.result() in the caller
                future.set_exception(e)

    threading.Thread(target=run, daemon=True, name="compile-beside").start()
    return futures


def search_actor(apply_fn, search_cfg, search_fn=None):
    """``(act, memory)`` for ``refill_parts``: each move chosen by ``search_fn``
    (``search.run_search``'s signature; None: ``run_search`` itself)."""
    from hackmatrix_train.search import run_search

    search_fn = search_fn or run_search

    def act(params, state, obs, key, belief=None):
        del obs
        return search_fn(apply_fn, search_cfg, params, key, state, belief).action

    memory = None  # the honest search may follow the player's cryptog belief as its memory
    if search_cfg.mode == "honest" and search_cfg.track_cryptogs:
        from hackmatrix_env.hidden import initial_cryptog_belief, track_cryptogs

        memory = (jax.vmap(initial_cryptog_belief), jax.vmap(track_cryptogs))
    return act, memory


def make_search_evaluate(
    env, env_params, apply_fn, search_cfg, num_episodes: int, max_steps: int, slots: int = 128,
    search_fn=None,
):  # fmt: skip
    """``make_refill_evaluate`` with each move chosen by a search (``search_actor``)."""
    act, memory = search_actor(apply_fn, search_cfg, search_fn)
    return make_refill_evaluate(env, env_params, act, num_episodes, max_steps, slots, memory)


def search_what(search_cfg) -> str:
    """The search evaluation's name in progress lines."""
    return f"the search evaluation ({search_cfg.num_simulations} simulations, {search_cfg.mode})"


def compile_search_evaluation(
    env, env_params, apply_fn, params, search_cfg, episodes: int, seed: int, slots: int = 128,
    search_fn=None,
) -> CompiledRefill:  # fmt: skip
    """``search_summary``'s program compiled and started (``compile_refill``), silently: it may
    run beside other work (``in_background``)."""
    max_steps = int(env_params.max_steps_in_episode)
    act, memory = search_actor(apply_fn, search_cfg, search_fn)
    parts = refill_parts(env, env_params, act, episodes, max_steps, slots, memory)
    return compile_refill(parts, params, jax.random.key(seed))


def search_summary(
    env, env_params, apply_fn, params, search_cfg, episodes: int, seed: int, program_names=(),
    slots: int = 128, report=progress.QUIET, search_fn=None, compiled: CompiledRefill | None = None,
) -> dict:  # fmt: skip
    """The evaluation summary of a search policy (``make_search_evaluate``), with its settings.

    ``search_fn``: ``search.run_search``'s signature, e.g. ``partial(run_search, resample=...)``
    for an experiment's own part of the search (None: ``run_search``). ``compiled``: this very
    evaluation's ``compile_search_evaluation``, done beforehand (None: compiled here, announced
    on ``report``).

    One row of ``hm-eval --search``: the summary's fields plus ``search`` (the settings: the
    simulation count, mode, selection, ...), ``compile_seconds``, ``seconds`` (the run after
    compiling), ``decisions`` (moves played, summed over episodes) and ``seconds_per_decision``.
    The episodes are played in chunks (``play_refill``), with progress on ``report``.
    """
    from hackmatrix_train.search import describe

    max_steps = int(env_params.max_steps_in_episode)
    if compiled is None:
        with report.compiling(
            search_what(search_cfg), progress.COLD_COMPILE_S["search evaluation"]
        ):
            compiled = compile_search_evaluation(env, env_params, apply_fn, params, search_cfg,
                                                 episodes, seed, slots, search_fn)  # fmt: skip
    t1 = time.perf_counter()
    result = jax.device_get(play_refill(compiled, params, episodes, max_steps, report))
    seconds = time.perf_counter() - t1
    summary = summarize(result, program_names)
    decisions = int(np.asarray(result["length"]).sum())
    summary.update(
        policy=f"search-{search_cfg.mode}",
        search=describe(search_cfg),
        eval_seed=seed,
        compile_seconds=round(compiled.seconds, 2),
        seconds=round(seconds, 2),
        decisions=decisions,
        seconds_per_decision=seconds / max(decisions, 1),
        slots=min(slots, episodes),
    )
    return summary
