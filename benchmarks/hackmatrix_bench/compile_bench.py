"""``hm-bench compile``: where cold compile time goes, program by program and phase by phase.

    uv run hm-bench compile                     # every program at the command's batch sizes
    uv run hm-bench compile --tiny              # small batches (minutes less; CI's sizes)
    uv run hm-bench compile --programs env_step search --phases
    uv run hm-bench compile --programs --phases --no-xla    # the phases' lowered sizes, fast
    uv run hm-bench compile --src A_SRC B_SRC   # two hackmatrix_env trees in one process

Each program a command compiles is built from the public entry points (nothing runs: the
arguments are shapes, ``jax.eval_shape``), then traced, lowered and compiled by XLA with
every JAX cache cleared first (``jax.clear_caches``) and no persistent compilation cache, as
in a new process. Per program it prints the trace, lowering and XLA seconds and the size of
the optimized HLO: its instruction count (every instruction of every computation, fusion
bodies included: ``hlo_instruction_count``) and its XLA kernels (``bench.kernel_count``).
The sizes do not depend on the machine's load; the seconds do.

Programs (``PROGRAMS``):

* ``env_reset``: ``jit(vmap(env.reset))``, ``hm-bench env``'s reset (4,096 envs);
* ``env_step``: ``hm-bench env``'s rollout, ``jit(scan(vmap(env.step)))`` with auto-reset;
* ``ppo``: the trainer's jitted chunk of updates (``trainer.make_train``: rollout + PPO
  update), the default recipe at 256 envs x 32 steps;
* ``search``: ``search.make_search``, the default policy's search (8 simulations, honest)
  over a batch of 16 games;
* ``evaluate``: ``evaluate.make_evaluate``, the greedy evaluation of 16 episodes;
* ``search_evaluate``: ``search_evaluate.make_search_evaluate``, one search row of
  ``hm-eval --search 8`` as one whole program (``evaluate_checkpoint``'s "beside" layout);
* ``refill_step``: the game's step ``hm-eval --search``'s rows share (``RefillGames``, the
  default "shared" layout), and ``search_moves``: a search row's moves on it.

``--phases`` adds the env step's parts, each ``jit(vmap(part))`` over the step's batch
(``_phase_fns``): where the step's graph comes from. ``--json FILE`` writes the record
(default: ``experiments/bench/compile_<backend>[_tiny].json``). With ``--src A B`` the
package is imported from each tree in turn (the modules are dropped in between) and every
program is compiled for both, alternating, so that both see the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp

from hackmatrix_bench.bench import kernel_count, make_rollout

# Batch sizes: the commands' own, and the small ones of --tiny (and the CI guard).
FULL = {"envs": 4096, "ppo_envs": 256, "ppo_steps": 32, "search_games": 16, "episodes": 16}
TINY = {"envs": 8, "ppo_envs": 8, "ppo_steps": 4, "search_games": 2, "episodes": 2}
ROLLOUT_STEPS = 64  # hm-bench env's scan length (the graph does not depend on it)


def hlo_instruction_count(hlo_text: str) -> int:
    """Instructions in an HLO module's text: every ``%name = ...`` line of every computation
    (entry, loop bodies, branches, fusions, reducers), parameters and constants included."""
    return sum(1 for line in hlo_text.splitlines() if re.match(r"\s*(?:ROOT )?%[\w.\-]+ = ", line))


def _shapes(fn, *args):
    """``fn(*args)``'s output as shapes only (nothing runs)."""
    return jax.eval_shape(fn, *args)


def _env_and_params():
    from hackmatrix_env.env import HackMatrix

    env = HackMatrix()
    return env, env.default_params


def _env_batch(env, params, n: int):
    keys = jax.random.split(jax.random.key(0), n)
    return keys, _shapes(jax.vmap(env.reset, in_axes=(0, None)), keys, params)


def _train_parts(size: dict):
    """The default recipe's config, env, env params, network apply and abstract params."""
    from hackmatrix_train.config import TrainConfig
    from hackmatrix_train.trainer import make_train

    cfg = TrainConfig(
        num_envs=size["ppo_envs"],
        num_steps=size["ppo_steps"],
        time_budget=None,
        total_timesteps=size["ppo_envs"] * size["ppo_steps"] * 20,
        log_interval=1,
        num_minibatches=1,
    )
    trainer = make_train(cfg, devices=jax.local_devices()[:1])
    runner = trainer.abstract_runner()
    return cfg, trainer, runner


def build_env_reset(size: dict):
    env, params = _env_and_params()
    keys = jax.random.split(jax.random.key(0), size["envs"])
    return jax.jit(jax.vmap(env.reset, in_axes=(0, None))), (keys, params)


def build_env_step(size: dict):
    env, params = _env_and_params()
    _, (obs, state) = _env_batch(env, params, size["envs"])
    rollout = make_rollout(env, size["envs"], ROLLOUT_STEPS)
    return rollout, (obs, state, jax.random.key(1))


def build_ppo(size: dict):
    _, trainer, runner = _train_parts(size)
    return trainer.chunk, (runner, jnp.int32(1), trainer.schedule_arrays(), trainer.frozen)


def _policy(size: dict):
    """(train config, env, env params, apply_fn, abstract params) of the default recipe."""
    cfg, trainer, runner = _train_parts(size)
    params = runner.train_state.params if hasattr(runner, "train_state") else runner.params
    return cfg, trainer.env, trainer.env_params, trainer.network.apply, params


def build_search(size: dict):
    from hackmatrix_train.search import make_search, search_config_from_train

    cfg, env, env_params, apply_fn, params = _policy(size)
    search_cfg = search_config_from_train(cfg, num_simulations=8)
    _, (_, state) = _env_batch(env, env_params, size["search_games"])
    search = make_search(apply_fn, search_cfg)  # partial(jitted, the config's floats)
    return search.func, (*search.args, params, jax.random.key(2), state)


def build_evaluate(size: dict):
    from hackmatrix_train.evaluate import make_evaluate

    _, env, env_params, apply_fn, params = _policy(size)
    max_steps = int(env_params.max_steps_in_episode)
    run = make_evaluate(env, env_params, apply_fn, size["episodes"], max_steps, greedy=True)
    return run, (params, jax.random.key(3))


def build_search_evaluate(size: dict):
    from hackmatrix_train.search import search_config_from_train
    from hackmatrix_train.search_evaluate import make_search_evaluate

    cfg, env, env_params, apply_fn, params = _policy(size)
    search_cfg = search_config_from_train(cfg, num_simulations=8)
    max_steps = int(env_params.max_steps_in_episode)
    run = make_search_evaluate(env, env_params, apply_fn, search_cfg, size["episodes"], max_steps)
    return run, (params, jax.random.key(4))


def _refill_games(size: dict):
    """(the default recipe's parts, its search config, ``RefillGames`` of ``hm-eval``'s
    episodes, the loop's carry as shapes)."""
    from hackmatrix_train.search import search_config_from_train
    from hackmatrix_train.search_evaluate import SEARCH_SLOTS, RefillGames

    cfg, env, env_params, apply_fn, params = _policy(size)
    search_cfg = search_config_from_train(cfg, num_simulations=8)
    max_steps = int(env_params.max_steps_in_episode)
    games = RefillGames(env, env_params, size["episodes"], max_steps, SEARCH_SLOTS,
                        jax.random.key(4))  # fmt: skip
    return (apply_fn, params), search_cfg, games


def build_refill_step(size: dict):
    """The game's step every row of ``hm-eval --search`` shares (``policy.play_shared``)."""
    from hackmatrix_train.search_evaluate import search_memory

    _, search_cfg, games = _refill_games(size)
    start, step, _ = games.game(search_memory(search_cfg))
    loop, fixed = jax.eval_shape(start, games.key)
    action = jax.ShapeDtypeStruct(loop[2].shape, jnp.int32)
    return jax.jit(step, donate_argnums=0), (loop, fixed, action)


def build_search_moves(size: dict):
    """A search row's moves in ``hm-eval --search`` (``refill_chooser`` of ``search_actor``)."""
    from hackmatrix_train.search_evaluate import refill_chooser, search_actor

    (apply_fn, params), search_cfg, games = _refill_games(size)
    act, memory = search_actor(apply_fn, search_cfg)
    start, _, actor_inputs = games.game(memory)
    choose = jax.jit(refill_chooser(act, memory, actor_inputs))
    return choose, (params, *jax.eval_shape(start, games.key))


PROGRAMS: dict[str, Callable] = {
    "env_reset": build_env_reset,
    "env_step": build_env_step,
    "ppo": build_ppo,
    "search": build_search,
    "evaluate": build_evaluate,
    "search_evaluate": build_search_evaluate,
    "refill_step": build_refill_step,
    "search_moves": build_search_moves,
}


def _phase_fns(env, params) -> dict[str, Callable]:
    """name -> ``fn(key, state, action)`` for one game: the env step's parts (interface §1)."""
    from hackmatrix_env import enemies, game, observation, programs, reward, siphon, stage
    from hackmatrix_env.batching import compute_where, ragged_fori_loop
    from hackmatrix_env.constants import FIRST_PROGRAM, NUM_PROGRAMS, Action
    from hackmatrix_env.history import record_step, undo_top
    from hackmatrix_env.movement import resolve_direction

    def prog_idx(a):
        return jnp.clip(a - FIRST_PROGRAM, 0, NUM_PROGRAMS - 1)

    return {
        "env.step": lambda k, s, a: env.step(k, s, a, params),
        "env.step_env": lambda k, s, a: env.step_env(k, s, a, params),
        "step_game": lambda k, s, a: game.step_game(k, s.game, a, undo_top(s.history)),
        "player_action": lambda k, s, a: game.player_action(k, s.game, a, undo_top(s.history)),
        "resolve_direction": lambda k, s, a: resolve_direction(s.game, jnp.clip(a, 0, 3)),
        "siphon (dense)": lambda k, s, a: siphon.apply_siphon(s.game),
        "run_program (dense)": lambda k, s, a: programs.run_program(
            k, s.game, prog_idx(a), undo_top(s.history).snapshot
        ),
        "program_mask": lambda k, s, a: programs.program_mask(
            s.game, undo_top(s.history).available
        ),
        "complete_stage": lambda k, s, a: game.complete_stage(k, s.game, a == Action.UP),
        "generate_stage (dense)": lambda k, s, a: stage.generate_stage(k, s.game),
        "reset_game (dense)": lambda k, s, a: stage.reset_game(k, params),
        "enemy_phase": lambda k, s, a: game.enemy_phase(k, s.game, jnp.bool_(True)),
        "move_enemies": lambda k, s, a: enemies.move_enemies(
            enemies.phase_seeds(k)[0], s.game, loop=ragged_fori_loop
        ),
        "place_scheduled_and_owed": lambda k, s, a: enemies.place_scheduled_and_owed(
            *enemies.phase_seeds(k)[1:], s.game, sparse=compute_where
        ),
        "observe": lambda k, s, a: observation.observe(s),
        "reward_breakdown": lambda k, s, a: reward.reward_breakdown(
            s.game, *game.step_game(k, s.game, a, undo_top(s.history))
        ),
        "record_step": lambda k, s, a: record_step(
            s.history, s.game, a == Action.UNDO, a < Action.SIPHON
        ),
    }


def phase_programs(size: dict) -> dict[str, Callable]:
    """name -> builder of ``jit(vmap(part))`` over the env step's batch."""
    env, params = _env_and_params()
    keys, (_, state) = _env_batch(env, params, size["envs"])
    actions = jnp.zeros(size["envs"], jnp.int32)

    def builder(fn):
        return lambda _size: (jax.jit(jax.vmap(fn)), (keys, state, actions))

    return {name: builder(fn) for name, fn in _phase_fns(env, params).items()}


def lowered_op_count(mlir_text: str) -> int:
    """Operations in a lowered (StableHLO) module's text: every ``%x = op`` line, before XLA."""
    return sum(
        1 for line in mlir_text.splitlines() if re.match(r"\s*%[\w#:]+(?:, %[\w#:]+)* = ", line)
    )


def measure(
    build: Callable, size: dict, xla: bool = True, compiler_options: dict | None = None
) -> dict:
    """Build, trace, lower and compile one program from cold caches: seconds and sizes.

    ``xla=False`` stops after lowering: the lowered module's operation count only (fast).
    ``compiler_options`` override XLA's debug options for this compile only (the test suite's
    graph-size guard undoes its own XLA_FLAGS with them).
    """
    jax.clear_caches()
    t0 = time.perf_counter()
    fn, args = build(size)
    t1 = time.perf_counter()
    traced = fn.trace(*args)
    t2 = time.perf_counter()
    lowered = traced.lower()
    t3 = time.perf_counter()
    if not xla:
        return {
            "trace_s": round(t2 - t1, 2),
            "lower_s": round(t3 - t2, 2),
            "lowered_ops": lowered_op_count(lowered.as_text()),
        }
    compiled = lowered.compile(compiler_options)
    t4 = time.perf_counter()
    text = compiled.as_text()
    return {
        "build_s": round(t1 - t0, 2),
        "trace_s": round(t2 - t1, 2),
        "lower_s": round(t3 - t2, 2),
        "compile_s": round(t4 - t3, 2),
        "total_s": round(t4 - t1, 2),
        "hlo_instructions": hlo_instruction_count(text),
        "kernels": kernel_count(text),
    }


def _use_tree(src: str | None) -> None:
    """Import ``hackmatrix_env`` (and everything importing it) from ``src`` next time."""
    if src is None:
        return
    for name in list(sys.modules):
        if name.split(".")[0] in ("hackmatrix_env", "hackmatrix_train"):
            del sys.modules[name]
    for p in [p for p in sys.path if p.endswith(os.path.join("hackmatrix-env", "src"))]:
        sys.path.remove(p)
    sys.path.insert(0, src)


def _commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).parent,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _row(label: str, m: dict) -> str:
    if "compile_s" not in m:
        return (
            f"{label:<28} trace {m['trace_s']:6.1f} s  lower {m['lower_s']:5.1f} s  "
            f"| {m['lowered_ops']:>7,} lowered ops (no XLA compile)"
        )
    return (
        f"{label:<28} trace {m['trace_s']:6.1f} s  lower {m['lower_s']:5.1f} s  "
        f"XLA {m['compile_s']:6.1f} s  | {m['hlo_instructions']:>7,} HLO instructions, "
        f"{m['kernels']:>5,} kernels"
    )


def run(
    programs: list[str], phases: bool, tiny: bool, trees: list[str | None], xla: bool = True
) -> dict[str, dict[str, dict]]:
    """``{tree label: {program: measures}}``, printing each row as it is measured."""
    size = TINY if tiny else FULL
    labels = ["A", "B"] if len(trees) == 2 else ["-"]
    results: dict[str, dict[str, dict]] = {label: {} for label in labels}
    names = list(programs)
    if phases:
        names += [f"phase:{n}" for n in _phase_fns(*_env_and_params())]
    for name in names:
        for label, src in zip(labels, trees, strict=True):
            _use_tree(src)
            if name.startswith("phase:"):
                build = phase_programs(size)[name.removeprefix("phase:")]
            else:
                build = PROGRAMS[name]
            m = measure(build, size, xla)
            results[label][name] = m
            prefix = "" if label == "-" else f"{label} "
            print(_row(prefix + name, m), flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="hm-bench compile", description=__doc__.split("\n")[0])
    p.add_argument("--programs", nargs="*", default=list(PROGRAMS), choices=list(PROGRAMS))
    p.add_argument("--phases", action="store_true", help="also the env step's parts")
    p.add_argument("--tiny", action="store_true", help="small batches (the CI guard's)")
    p.add_argument("--src", nargs=2, metavar=("A_SRC", "B_SRC"), default=None)
    p.add_argument(
        "--no-xla",
        action="store_true",
        help="stop after lowering: the lowered module's operation count (fast, for --phases)",
    )
    p.add_argument("--json", default=None, help="where to write the record")
    args = p.parse_args(argv)
    jax.config.update("jax_compilation_cache_dir", None)
    jax.config.update("jax_enable_compilation_cache", False)
    size = TINY if args.tiny else FULL
    print(
        f"hm-bench compile: jax {jax.__version__}, {jax.default_backend()} "
        f"({os.cpu_count()} cpus, {platform.processor() or platform.machine()}), "
        f"sizes {size}, load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    trees = args.src if args.src else [None]
    results = run(args.programs, args.phases, args.tiny, trees, xla=not args.no_xla)
    record = {
        "command": "hm-bench compile " + " ".join(argv if argv is not None else sys.argv[1:]),
        "commit": _commit(),
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "cpus": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "sizes": size,
        "trees": dict(zip(results, trees, strict=True)) if args.src else None,
        "results": results if args.src else results["-"],
    }
    path = args.json
    if path is None:
        root = Path(__file__).resolve().parents[2]
        name = f"compile_{jax.default_backend()}{'_tiny' if args.tiny else ''}.json"
        path = root / "experiments" / "bench" / name
    Path(path).write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
