"""Search evaluation: whole episodes whose moves a search chooses, ``slots`` games at a time.

A search costs its simulations per game per move, so the episodes do not run as one batch that
waits on its longest game: a fixed number of slots play, and a slot whose episode ends takes the
next one (``make_refill_evaluate``). Episode ``i`` is ``evaluate.make_evaluate``'s episode ``i``
(the same reset and step keys), so a searched row and a greedy row play the same games. The
per-episode arrays and their summary are ``evaluate``'s (``tally_step``, ``summarize``).
"""

from __future__ import annotations

import functools
import threading
import time
from concurrent.futures import Future
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from hackmatrix_env.eager import few_games_options

from hackmatrix_train import progress
from hackmatrix_train.evaluate import start_episodes, summarize, tally_step

SEARCH_SLOTS = 128  # games a search evaluation plays at once (a slot takes the next as one ends)


def _with_memory(act, memory):
    """``((start_mem, update), choose)``: a memoryless actor gets a placeholder memory that
    nothing reads, and ``choose(params, state, obs, key, memory)`` ignores it."""
    if memory is not None:
        return memory, act
    placeholder = (lambda s: jnp.zeros(s.time.shape, bool)), (lambda m, *_: m)
    return placeholder, (lambda p, s, o, k, m: act(p, s, o, k))


def refill_game(env, env_params, num_episodes: int, max_steps: int, slots: int, memory=None):
    """The refill loop's game side, apart from how its moves are chosen: ``(start, step,
    actor_inputs)``.

    ``start(key) -> (loop, fixed)`` resets the episodes: ``loop`` (8 entries) changes from
    move to move, ``loop[ACC]`` holds the per-episode arrays and ``loop[0]`` counts the
    iterations; ``fixed`` holds the step keys and every episode's first observation and state.
    ``step(loop, fixed, action) -> loop`` plays ``action`` (int32[slots]) in every slot,
    tallies it, follows the memory and refills each slot whose episode ended.
    ``actor_inputs(loop, fixed) -> (state, obs, key, memory)`` is what the actor sees at the
    loop's iteration. ``memory`` is ``(start, update)`` or None (a placeholder).

    The step does not depend on the actor: ``hm-eval`` plays its greedy row and its search rows
    through one compiled ``step`` (``SplitRefill``), so the real game compiles once.
    """
    from hackmatrix_train.search import select_rows

    step_fn = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    n, w = num_episodes, min(slots, num_episodes)
    (start_mem, update), _ = _with_memory(None, memory)
    take = lambda tree, rows: jax.tree.map(lambda x: x[rows], tree)  # noqa: E731

    def start(key):
        k_run, obs_all, state_all, acc = start_episodes(env, env_params, key, n)
        keys = jax.random.split(k_run, max_steps)
        first = jnp.arange(w)
        loop = (
            jnp.int32(0), jnp.int32(w), first, jnp.zeros(w, jnp.int32),
            take(obs_all, first), take(state_all, first), acc, start_mem(take(state_all, first)),
        )  # fmt: skip
        return loop, (keys, obs_all, state_all)

    def actor_inputs(loop, fixed):
        k, obs, state, mem, keys = loop[0], loop[4], loop[5], loop[7], fixed[0]
        return state, obs, jax.random.split(keys[jnp.minimum(k, max_steps - 1)])[0], mem

    def step(loop, fixed, action):
        k, next_ep, ep, t, _, state, acc, mem = loop
        keys, obs_all, state_all = fixed
        active = acc["alive"][ep]  # bool[w]: the slot's episode is still running
        env_key = jax.vmap(lambda tt, i: jax.random.split(jax.random.split(keys[tt])[1], n)[i])(
            jnp.minimum(t, max_steps - 1), ep
        )
        new_obs, new_state, reward, term, trunc, info = step_fn(env_key, state, action, env_params)
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

    return start, step, actor_inputs


def refill_chooser(act, memory, actor_inputs):
    """``choose(params, loop, fixed) -> int32[slots]``: ``act``'s moves at the loop's iteration
    (``refill_game``'s ``actor_inputs``), the memory passed when the actor has one."""
    _, act5 = _with_memory(act, memory)

    def choose(params, loop, fixed):
        state, obs, key, mem = actor_inputs(loop, fixed)
        return act5(params, state, obs, key, mem)

    return choose


def refill_parts(env, env_params, act, num_episodes: int, max_steps: int, slots: int, memory=None):
    """``make_refill_evaluate``'s program in two parts, for a host loop that shows progress.

    ``start(params, key) -> carry`` resets the episodes; ``advance(params, carry, k_end) ->
    carry`` runs the loop on until iteration ``k_end`` or until every episode has ended. The
    per-episode arrays are ``carry[ACC]``; ``carry[0]`` counts the iterations so far. One
    iteration is ``refill_game``'s step after ``refill_chooser``'s moves.
    """
    start_game, step, actor_inputs = refill_game(
        env, env_params, num_episodes, max_steps, slots, memory
    )
    choose = refill_chooser(act, memory, actor_inputs)

    def start(params, key):
        del params
        loop, fixed = start_game(key)
        return (*loop, *fixed)

    def advance(params, carry, k_end):
        fixed = carry[8:]

        def cond(loop):
            k, acc = loop[0], loop[ACC]
            return (k < k_end) & jnp.any(acc["alive"])

        def body(loop):
            return step(loop, fixed, choose(params, loop, fixed))

        return (*jax.lax.while_loop(cond, body, carry[:8]), *fixed)

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

    def play(self, params, num_episodes: int, max_steps: int, report=progress.QUIET) -> dict:
        return play_refill(self, params, num_episodes, max_steps, report)


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


class SplitRefill(NamedTuple):
    """The refill loop as compiled programs the host alternates: the actor's ``choose``
    (``refill_chooser``) and the game's ``step`` (``refill_game``), with the game's ``start``
    and its key, and the seconds compiling took. ``play`` returns ``make_refill_evaluate``'s
    arrays."""

    start: object
    key: jax.Array
    step: object
    choose: object
    seconds: float

    def play(self, params, num_episodes: int, max_steps: int, report=progress.QUIET,
             iterations: int = 8) -> dict:  # fmt: skip
        """The per-episode arrays, one move per pair of calls; every ``iterations`` moves the
        host reads how many episodes are alive (the bar, and the stop). Moves after the last
        episode ended change no episode's arrays (an idle slot's arrays stay as they are)."""
        (loop, fixed), limit, ended = self.start(self.key), num_episodes * max_steps, 0
        with report.bar(num_episodes, "episodes") as bar:
            for k in range(limit):
                loop = self.step(loop, fixed, self.choose(params, loop, fixed))
                if (k + 1) % iterations and k + 1 < limit:
                    continue
                alive = int(loop[ACC]["alive"].sum())
                bar.update(num_episodes - alive - ended)
                ended = num_episodes - alive
                if alive == 0:
                    break
        return loop[ACC]


class RefillGames:
    """One set of refill episodes (``refill_game``), its ``step`` compiled once per memory and
    shared by every actor that plays them.

    ``hm-eval --search`` plays its greedy row and each search row on the same episodes and
    slots; with one shared ``step`` the real game compiles once instead of once per row, and
    each actor compiles only its own ``choose``. The choosers may compile on another thread
    (``compile_chooser``) while ``compiled_step`` runs here. The step takes its moving part
    as a donated buffer (updated in place, as in a loop), so each play starts a fresh one.
    """

    def __init__(self, env, env_params, num_episodes: int, max_steps: int, slots: int, key):
        self.args = (env, env_params, num_episodes, max_steps, slots)
        self.key = key
        self._games, self._steps = {}, {}
        self._lock = threading.Lock()

    def game(self, memory):
        """``refill_game``'s ``(start, step, actor_inputs)`` for ``memory`` (one per memory)."""
        with self._lock:
            if id(memory) not in self._games:
                self._games[id(memory)] = (memory, refill_game(*self.args, memory))
            return self._games[id(memory)][1]

    def compiled_step(self, memory) -> tuple[object, object, float]:
        """``(compiled start, compiled step, seconds)`` for ``memory``: compiled at its first
        call, reused after (the seconds are this call's: 0 once compiled)."""
        if id(memory) in self._steps:
            return (*self._steps[id(memory)], 0.0)
        start_fn, step_fn, _ = self.game(memory)
        options = few_games_options(self.args[2])  # the game alone: quick for a few games
        t0 = time.perf_counter()
        start = jax.jit(start_fn).lower(self.key).compile(options)
        loop, fixed = jax.eval_shape(start_fn, self.key)
        action = jax.ShapeDtypeStruct(loop[2].shape, jnp.int32)
        step = jax.jit(step_fn, donate_argnums=0).lower(loop, fixed, action).compile(options)
        self._steps[id(memory)] = (start, step)
        return start, step, time.perf_counter() - t0

    def has_step(self, memory) -> bool:
        """Whether ``compiled_step(memory)`` is compiled already."""
        return id(memory) in self._steps

    def compile_chooser(self, act, memory, params) -> Chooser:
        """The actor ``act``'s compiled ``choose`` (``refill_chooser``); needs only the carry's
        shapes, so it can run before or beside ``compiled_step``."""
        start, _, actor_inputs = self.game(memory)
        t0 = time.perf_counter()
        loop, fixed = jax.eval_shape(start, self.key)
        choose = jax.jit(refill_chooser(act, memory, actor_inputs))
        return Chooser(choose.lower(params, loop, fixed).compile(), time.perf_counter() - t0)

    def split(self, act, memory, params, chooser: Chooser | None = None) -> SplitRefill:
        """``act``'s ``SplitRefill`` on these episodes; ``chooser``: its ``compile_chooser``,
        done beforehand (None: compiled here). Its seconds: the chooser's and, when this call
        compiled the step, the step's."""
        chooser = chooser or self.compile_chooser(act, memory, params)
        start, step, step_s = self.compiled_step(memory)
        return SplitRefill(start, self.key, step, chooser.choose, chooser.seconds + step_s)


class Chooser(NamedTuple):
    """An actor's compiled ``choose`` (``RefillGames.compile_chooser``) and its compile seconds."""

    choose: object
    seconds: float


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

    return act, search_memory(search_cfg)


@functools.cache
def _cryptog_memory():
    from hackmatrix_env.hidden import initial_cryptog_belief, track_cryptogs

    return jax.vmap(initial_cryptog_belief), jax.vmap(track_cryptogs)


def search_memory(search_cfg):
    """The search actor's memory for ``refill_game``: the player's cryptog belief when the
    honest search follows it, else None. One object per kind, so every search row with the
    same memory shares one ``RefillGames`` step."""
    if search_cfg.mode == "honest" and search_cfg.track_cryptogs:
        return _cryptog_memory()
    return None


def greedy_actor(apply_fn):
    """``act(params, state, obs, key, memory=None)``: the network's greedy move
    (``network.greedy_action``, the move ``evaluate.make_evaluate``'s greedy policy plays),
    for ``refill_game``."""
    from hackmatrix_train.network import greedy_action

    def act(params, state, obs, key, memory=None):
        del state, key, memory  # a memory, when the step it plays on has one, goes unread
        return greedy_action(apply_fn(params, obs)[0], obs.action_mask)

    return act


def make_search_evaluate(
    env, env_params, apply_fn, search_cfg, num_episodes: int, max_steps: int,
    slots: int = SEARCH_SLOTS, search_fn=None,
):  # fmt: skip
    """``make_refill_evaluate`` with each move chosen by a search (``search_actor``)."""
    act, memory = search_actor(apply_fn, search_cfg, search_fn)
    return make_refill_evaluate(env, env_params, act, num_episodes, max_steps, slots, memory)


def search_what(search_cfg) -> str:
    """The search evaluation's name in progress lines."""
    return f"the search evaluation ({search_cfg.num_simulations} simulations, {search_cfg.mode})"


def compile_search_evaluation(
    env, env_params, apply_fn, params, search_cfg, episodes: int, seed: int,
    slots: int = SEARCH_SLOTS, search_fn=None,
) -> CompiledRefill:  # fmt: skip
    """``search_summary``'s program compiled and started (``compile_refill``), silently: it may
    run beside other work (``in_background``)."""
    max_steps = int(env_params.max_steps_in_episode)
    act, memory = search_actor(apply_fn, search_cfg, search_fn)
    parts = refill_parts(env, env_params, act, episodes, max_steps, slots, memory)
    return compile_refill(parts, params, jax.random.key(seed))


def search_summary(
    env, env_params, apply_fn, params, search_cfg, episodes: int, seed: int, program_names=(),
    slots: int = SEARCH_SLOTS, report=progress.QUIET, search_fn=None,
    compiled: CompiledRefill | SplitRefill | None = None,
) -> dict:  # fmt: skip
    """The evaluation summary of a search policy (``make_search_evaluate``), with its settings.

    ``search_fn``: ``search.run_search``'s signature, e.g. ``partial(run_search, resample=...)``
    for an experiment's own part of the search (None: ``run_search``). ``compiled``: this very
    evaluation's ``compile_search_evaluation`` (or its ``SplitRefill``), done beforehand (None:
    compiled here, announced on ``report``).

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
    result = jax.device_get(compiled.play(params, episodes, max_steps, report))
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
