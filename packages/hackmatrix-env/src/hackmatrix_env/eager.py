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


def is_traced(*args: Any, **kwargs: Any) -> bool:
    """Whether any argument leaf is a tracer: the call is part of a transformation."""
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves((args, kwargs)))


def quick_when_eager(method: Callable) -> Callable:
    """``jax.jit(method, static_argnames="self")``, compiled with
    ``EAGER_CPU_COMPILER_OPTIONS`` when called eagerly on the CPU (module docstring)."""
    plain = jax.jit(method, static_argnames=("self",))
    quick = jax.jit(method, static_argnames=("self",), compiler_options=EAGER_CPU_COMPILER_OPTIONS)

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        if is_traced(*args, **kwargs) or jax.default_backend() != "cpu":
            return call.plain(self, *args, **kwargs)
        return call.quick(self, *args, **kwargs)

    call.plain, call.quick = plain, quick  # read at each call: a test can watch them
    return call
