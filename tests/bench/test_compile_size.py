"""A guard on graph size: the compiled programs must not grow past their recorded size.

``hm-bench compile --tiny`` builds each program the commands compile; this test compiles two
of them at its tiny batch sizes (the env's rollout, ``jit(scan(vmap(env.step)))`` with
auto-reset, and the default policy's search) and fails when a program's optimized-HLO
instruction count exceeds the figure recorded in ``RECORDED`` by more than ``MARGIN``. The
count does not depend on the machine's load (it is not a timing test) and tracks the cold
compile time (specs/env-shell.md §7.12). When a change shrinks a program, or grows it on
purpose, record the new figure from ``uv run hm-bench compile --tiny --programs env_step
search`` (jax 0.10.2 on the CPU). The suite's own XLA flags change the graph (``xla_flags.py``),
so the guard compiles with the product's options.
"""

from __future__ import annotations

import pytest
from hackmatrix_bench.compile_bench import PROGRAMS, TINY, hlo_instruction_count, measure
from xla_flags import PRODUCT_COMPILER_OPTIONS

# Optimized-HLO instructions at the TINY sizes (jax 0.10.2, CPU).
RECORDED = {
    "env_step": 38_033,
    "search": 50_022,
}
MARGIN = 0.10


def test_instruction_count_reads_every_computation():
    text = """HloModule m

%fused (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %n = f32[8]{0} negate(%p)
}

ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  ROOT %f = f32[8]{0} fusion(%x), kind=kLoop, calls=%fused
}
"""
    assert hlo_instruction_count(text) == 4


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(RECORDED))
def test_program_stays_within_its_recorded_size(name):
    size = measure(PROGRAMS[name], TINY, compiler_options=PRODUCT_COMPILER_OPTIONS)[
        "hlo_instructions"
    ]
    limit = RECORDED[name] * (1 + MARGIN)
    assert size <= limit, (
        f"{name}: {size:,} optimized-HLO instructions, over the recorded "
        f"{RECORDED[name]:,} + {MARGIN:.0%} ({limit:,.0f}): the graph grew (hm-bench compile)"
    )
