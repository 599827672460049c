"""``bench.kernel_count``: the compiled graph's size in XLA kernels (hm-bench's compile figure)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from hackmatrix_bench.bench import kernel_count


def _kernels(fn, *args) -> int:
    return kernel_count(jax.jit(fn).lower(*args).compile().as_text())


def test_one_fused_elementwise_op_is_one_kernel():
    assert _kernels(lambda x: x * 2 + 1, jnp.ones(8)) == 1


def test_sort_is_a_kernel_of_its_own_and_its_comparator_is_not_counted():
    assert _kernels(lambda x: jnp.sort(x) * 2 + 1, jnp.ones(8)) == 2


def test_loop_bodies_count_and_grow_the_count():
    x = jnp.ones(8)
    flat = _kernels(lambda x: x * 2 + 1, x)
    looped = _kernels(lambda x, n: jax.lax.fori_loop(0, n, lambda i, y: y * 2 + 1, x), x, 3)
    # the while itself, its body's fusion and counter, its condition: at least 3 more
    assert looped >= flat + 3


def test_conditional_branches_are_counted():
    x = jnp.ones(8)
    both = _kernels(lambda p, x: jax.lax.cond(p, lambda: jnp.sort(x), lambda: x + 1), True, x)
    # the predicate's conversion, the conditional, the sort, the add
    assert both == 4


def test_no_code_instructions_are_not_counted():
    text = """ENTRY %main (x: f32[8]) -> (f32[8], f32[8]) {
  %x = f32[8]{0} parameter(0)
  %c = f32[] constant(1)
  %b = f32[8]{0} bitcast(%x)
  ROOT %t = (f32[8]{0}, f32[8]{0}) tuple(%b, %x)
}"""
    assert kernel_count(text) == 0
