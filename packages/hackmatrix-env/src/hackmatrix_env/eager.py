"""A quick compile for the env's methods called outside any transformation.

``HackMatrix.step`` and ``reset`` called on concrete arrays (the README's gymnax snippet, a
Python loop over one game) compile a program of their own, for one game, and the user waits for
that compile more than for the steps. Such calls compile with LLVM's -O0 and XLA:CPU's older
kernel emitters (``EAGER_CPU_COMPILER_OPTIONS``): measured by ``hm-bench eager`` in alternating
fresh processes on the idle 2-core box, the first ``reset`` and ``step`` compile in about half
the time, and each later step costs about 0.9 ms more, so a loop gains up to about 10,000
steps (specs/env-shell.md §7.14). The Gymnasium single env, which a library drives for as long
as it trains, jits its own calls (``vector.step_one``) and keeps XLA's defaults.

Called with a tracer among its arguments (inside a user's ``jit``, ``vmap``, ``scan``, or the
trainer's, the evaluators' and the search's programs), the method is the plain ``jit`` it
always was: it compiles as part of the caller's program, with the caller's options, so every
batched or compiled use is unchanged. The older emitters may sum a float reduction in another
order, so an eager step's floats could differ in the last bit from the same step compiled with
XLA's defaults; ``tests/env/test_eager.py`` checks they do not, on random games. Only the CPU
gets these options (other backends compile with their defaults).

The commands' programs of the game alone that play a few games (``hm-watch``'s and ``hm-play``'s
env step, the step ``hm-eval``'s rows share, the resets) compile with the same options through
``few_games_options`` and ``few_games_jit``. A program with the network in it never does: the
older emitters may sum the network's float reductions in another order, and a value or a logit
that differs in its last bit could, rarely, change a move.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax

# LLVM's -O0 and XLA:CPU's older kernel emitters: the cheapest compile of the options measured
# (experiments/findings.md, "XLA options"), at half the speed per step for a large batch, which
# an eager call on one game does not see.
EAGER_CPU_COMPILER_OPTIONS = {
    "xla_backend_optimization_level": 0,
    "xla_cpu_use_fusion_emitters": False,
}


# A program of the game alone that plays at most this many games compiles with the same options
# (``few_games_options``): its XLA compile halves (about 6 s less for the evaluators' step) and
# each step costs about 0.1 ms more per game, about 35 ms per game of 350 moves, so a few games
# repay the compile and a large evaluation would not (specs/env-shell.md §7.14).
FEW_GAMES = 32


def few_games_options(games: int) -> dict | None:
    """XLA options for a program of the env alone that plays ``games`` games at once:
    ``EAGER_CPU_COMPILER_OPTIONS`` on the CPU for at most ``FEW_GAMES``, else None (XLA's
    defaults)."""
    if games <= FEW_GAMES and jax.default_backend() == "cpu":
        return dict(EAGER_CPU_COMPILER_OPTIONS)
    return None


def few_games_jit(fun: Callable, games_of: Callable[..., int], **jit_kwargs) -> Callable:
    """``jax.jit(fun, **jit_kwargs)`` for a program of the env alone, compiled with
    ``few_games_options(games_of(*args))``: quick on the CPU when its call plays few games."""

    def few(*args, **kwargs) -> bool:
        return few_games_options(games_of(*args, **kwargs)) is not None

    return plain_or_quick(fun, few, **jit_kwargs)


def is_traced(*args: Any, **kwargs: Any) -> bool:
    """Whether any argument leaf is a tracer: the call is part of a transformation."""
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves((args, kwargs)))


def quick_when_eager(method: Callable) -> Callable:
    """``jax.jit(method, static_argnames="self")``, compiled with
    ``EAGER_CPU_COMPILER_OPTIONS`` when called eagerly on the CPU (module docstring)."""

    def eager(self, *args, **kwargs) -> bool:
        return not is_traced(*args, **kwargs) and jax.default_backend() == "cpu"

    return plain_or_quick(method, eager, static_argnames=("self",))


def plain_or_quick(fun: Callable, use_quick: Callable[..., bool], **jit_kwargs) -> Callable:
    """``fun`` jitted twice, with XLA's defaults (``.plain``) and with
    ``EAGER_CPU_COMPILER_OPTIONS`` (``.quick``); each call runs the one ``use_quick`` picks
    from the call's own arguments."""
    plain = jax.jit(fun, **jit_kwargs)
    quick = jax.jit(fun, compiler_options=EAGER_CPU_COMPILER_OPTIONS, **jit_kwargs)

    @functools.wraps(fun)
    def call(*args, **kwargs):
        return (call.quick if use_quick(*args, **kwargs) else call.plain)(*args, **kwargs)

    call.plain, call.quick = plain, quick  # read at each call: a test can watch them
    return call
