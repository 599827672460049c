"""Per-kernel profile of the benchmark rollout, attributed to our source lines (host script).

    uv run hm-bench kernels
    uv run hm-bench kernels --envs 1024 --top 60

Runs ``hm-bench``'s rollout (``jit(scan(vmap(env.step)))``, auto-reset, uniform
masked policy) under ``jax.profiler.trace``, reads the Perfetto trace, and
prints the *self* time of every XLA:CPU kernel (its duration minus the kernels
nested in it, e.g. a ``while`` minus its body) per batched step, summed by the
innermost and the outermost ``hackmatrix_env`` source frame of the kernel (read
from the compiled HLO's stack-frame table), then the top kernels with their
output shapes. ``ThunkExecutor::Execute`` is the runtime's own dispatch cost.

Caveats: XLA:CPU runs independent kernels on both cores at once, so self times
add up to more than the wall time and a kernel's share is not what removing it
would save (measured once: the benchmark policy's kernels showed ~5 ms per step at
4,096 envs, the A/B measured 1.3 ms). Use it to find where to look; measure a
change with ``hm-bench`` or an A/B of two compiled rollouts in one process.
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import os
import re
import shutil
import tempfile
import time

import jax
from hackmatrix_bench.bench import make_rollout
from hackmatrix_env.env import HackMatrix

_SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


def source_resolver(hlo_text: str):
    """``kernel name -> [file:line:function, ...]`` (innermost first) from HLO stack frames."""
    tables = {name: {} for name in _SECTIONS}
    section = None
    for line in hlo_text.splitlines():
        s = line.strip()
        if s in _SECTIONS:
            section = s
            continue
        m = re.match(r"^(\d+) (.*)$", s)
        if section is None or not m:
            if s and section is not None and not m:
                section = None
            continue
        i, rest = int(m.group(1)), m.group(2)
        if section in ("FileNames", "FunctionNames"):
            tables[section][i] = rest.strip('"')
        else:
            tables[section][i] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", rest)}
    frame_of = {}
    for line in hlo_text.splitlines():
        m = re.match(r"\s*(?:ROOT )?%([\w.\-]+) = .*?stack_frame_id=(\d+)", line)
        if m:
            frame_of[m.group(1)] = int(m.group(2))

    def chain(kernel: str) -> list[str]:
        out, seen = [], set()
        fid = frame_of.get(kernel, 0)
        while fid and fid in tables["StackFrames"] and fid not in seen:
            seen.add(fid)
            frame = tables["StackFrames"][fid]
            loc = tables["FileLocations"].get(frame.get("file_location_id", 0), {})
            path = tables["FileNames"].get(loc.get("file_name_id", 0), "?")
            func = tables["FunctionNames"].get(loc.get("function_name_id", 0), "?")
            if "hackmatrix_env" in path and not path.endswith("batching.py"):
                out.append(f"{os.path.basename(path)}:{loc.get('line')}:{func}")
            fid = frame.get("parent_frame_id", 0)
        return out

    return chain


def self_times(trace_file: str) -> tuple[collections.Counter, collections.Counter]:
    """(name -> summed self µs, name -> count) over every complete event of the trace."""
    with gzip.open(trace_file) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X" and "dur" in e]
    by_thread = collections.defaultdict(list)
    for e in events:
        by_thread[(e["pid"], e["tid"])].append(e)
    own, count = collections.Counter(), collections.Counter()
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[dict] = []
        for e in evs:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            if stack:
                own[stack[-1]["name"]] -= e["dur"]
            own[e["name"]] += e["dur"]
            count[e["name"]] += 1
            stack.append(e)
    return own, count


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--envs", type=int, default=4096)
    p.add_argument("--steps", type=int, default=16, help="scan length of one traced call")
    p.add_argument("--calls", type=int, default=2, help="traced calls")
    p.add_argument("--top", type=int, default=40)
    args = p.parse_args(argv)

    env = HackMatrix()
    params = env.default_params
    key = jax.random.key(0)
    keys = jax.random.split(key, args.envs)
    obs, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    rollout = make_rollout(env, args.envs, args.steps)
    t0 = time.perf_counter()
    compiled = rollout.lower(obs, state, key).compile()
    print(f"compile {time.perf_counter() - t0:.1f} s")
    hlo = compiled.as_text()
    chain = source_resolver(hlo)
    shapes = {}
    for line in hlo.splitlines():
        m = re.match(r"\s*(?:ROOT )?%([\w.\-]+) = (\S+)", line)
        if m:
            shapes[m.group(1)] = m.group(2)[:32]
    obs, state, *_ = compiled(obs, state, key)  # played states, not fresh resets
    t0 = time.perf_counter()
    jax.block_until_ready(compiled(obs, state, key))
    wall = (time.perf_counter() - t0) / args.steps
    print(f"untraced: {wall * 1e3:.2f} ms per batched step")
    out_dir = tempfile.mkdtemp(prefix="hm-trace-")
    try:
        with jax.profiler.trace(out_dir, create_perfetto_trace=True):
            for _ in range(args.calls):
                jax.block_until_ready(compiled(obs, state, key))
        trace_file = sorted(glob.glob(f"{out_dir}/**/*.trace.json.gz", recursive=True))[-1]
        own, count = self_times(trace_file)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    per_step = 1e3 * args.calls * args.steps  # µs -> ms per batched step
    skip = ("block_until_ready", "wait for completion", "$profiler")
    kernels = {k: v for k, v in own.items() if not any(s in k for s in skip)}
    inner, outer = collections.Counter(), collections.Counter()
    for name, us in kernels.items():
        frames = chain(name)
        base = name.split(".")[0]
        inner[frames[0] if frames else f"(no source) {base}"] += us
        outer[frames[-1] if frames else f"(no source) {base}"] += us
    print(f"kernel self time: {sum(kernels.values()) / per_step:.2f} ms per batched step")
    for title, table in (("innermost source frame", inner), ("outermost source frame", outer)):
        print(f"\n== ms per batched step by {title}")
        for where, us in table.most_common(args.top):
            print(f"{us / per_step:8.2f}  {where}")
    print("\n== top kernels: ms per batched step, launches per step, output, source")
    for name, us in sorted(kernels.items(), key=lambda kv: -kv[1])[: args.top]:
        src = " < ".join(chain(name)[:3])
        launches = count[name] / (args.calls * args.steps)
        print(
            f"{us / per_step:8.2f} {launches:8.1f}  {name[:32]:32s} {shapes.get(name, ''):32s} {src}"
        )


if __name__ == "__main__":
    main()
