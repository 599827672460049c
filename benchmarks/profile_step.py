"""Per-part profile of the env step: ``jit(vmap(part))`` run time and compile time.

    uv run hm-bench profile
    uv run hm-bench profile --envs 1024 --play 16 \
        --parts enemy_phase move_enemies observe --repeats 7 --json prof.json

States: ``--envs`` games reset with seed ``--seed``, then ``--play`` random masked
steps of ``env.step`` (gymnax auto-reset), so the batch looks like a training
batch (a few games with many enemies, most with none or one). Actions for the
timed call: uniform over the mask of those states (the same for every part).
Every part is ``jax.jit(jax.vmap(part))`` over the batch; the compile column is
``lower(...).compile()`` seconds, the time column the median of ``--repeats``
calls after one warm-up (``block_until_ready``), with the minimum and the
median process CPU time (all threads; steadier than wall time on a loaded
box). Host script, not a test.

Parts (each is one function of the step pipeline, interface §1):

* ``env_step``: ``HackMatrix.step`` (auto-reset, observation) — the benchmark's unit.
* ``step_env``: the step without auto-reset (``step_game`` + reward + observation).
* ``step_game``: the game pipeline only (no reward, no observation, no UNDO ring update).
* ``enemy_phase``: ``game.enemy_phase`` with ``active=True`` (every row runs it).
* ``move_enemies`` / ``hatch`` / ``spawns``: its phases (``spawns``: the scheduled task and the
  owed siphon spawns, sparse as run).
* ``resolve_direction``: the direction action (``clip(action, 0, 3)``).
* ``program``: ``programs.run_program`` on the sampled program index (dense).
* ``observe`` / ``grid_features`` / ``action_mask``: the observation.
* ``reset``: ``env.reset_env`` dense (every row); ``reset_sparse``: the step's
  auto-reset as run (``compute_where`` on the done rows of one step).
* ``complete_stage``: stage completion as run (generation sparse on rows that reach the
  exit); ``generate_stage``: dense generation.
* ``reward``: ``reward_breakdown`` given ``step_game``'s output;
  ``shaping_distance``: one shaping BFS.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
from hackmatrix_bench.bench import make_rollout, uniform_masked_actions
from hackmatrix_env import enemies, game, mask, movement, observation, programs, reward, stage
from hackmatrix_env.batching import compute_where, ragged_fori_loop
from hackmatrix_env.constants import FIRST_PROGRAM, NUM_PROGRAMS, Action
from hackmatrix_env.env import HackMatrix
from hackmatrix_env.history import has_snapshot, undo_top, without_snapshots
from hackmatrix_env.types import EnvState


def _parts(env: HackMatrix, params):
    """name -> fn(key, state, action) (unbatched; vmapped by the caller)."""

    def env_step(k, s, a, x):
        return env.step(k, s, a, params)

    def step_env(k, s, a, x):
        return env.step_env(k, s, a, params)

    def step_game(k, s, a, x):
        return game.step_game(k, s.game, a, undo_top(s.history))

    def enemy_phase(k, s, a, x):
        return game.enemy_phase(k, s.game, jnp.bool_(True))

    def move_enemies(k, s, a, x):
        return enemies.move_enemies(enemies.phase_seeds(k)[0], s.game, loop=ragged_fori_loop)

    def hatch(k, s, a, x):
        return enemies.hatch_transmissions(s.game)

    def spawns(k, s, a, x):
        _, seed_sched, seed_owed = enemies.phase_seeds(k)
        return enemies.place_scheduled_and_owed(seed_sched, seed_owed, s.game, sparse=compute_where)

    def resolve_direction(k, s, a, x):
        return movement.resolve_direction(s.game, jnp.clip(a, 0, Action.RIGHT))

    def program(k, s, a, x):
        idx = jnp.clip(a - FIRST_PROGRAM, 0, NUM_PROGRAMS - 1)
        return programs.run_program(k, s.game, idx, undo_top(s.history).snapshot)

    def observe(k, s, a, x):
        return observation.observe(s)

    def grid_features(k, s, a, x):
        return observation.grid_features(s.game)

    def action_mask(k, s, a, x):
        return mask.action_mask(s.game, has_snapshot(s.history))

    def reset(k, s, a, x):
        return env.reset_env(k, params)

    def reset_sparse(k, s, a, x):
        default = (x["obs"], s.game)

        def fresh(k):
            g = stage.reset_game(k, params)
            return observation.observe_game(g, False), g

        return compute_where(x["done"], fresh, (k,), default)

    def complete_stage(k, s, a, x):
        moved, ok, _, _, _, exit_reached = movement.resolve_direction(
            s.game, jnp.clip(a, 0, Action.RIGHT)
        )
        return game.complete_stage(k, moved, ok & exit_reached)

    def generate_stage(k, s, a, x):
        return stage.generate_stage(k, s.game)

    def reward_part(k, s, a, x):
        after, ev = game.step_game(k, s.game, a, undo_top(s.history))
        return reward.reward_breakdown(s.game, after, ev)

    def shaping_distance(k, s, a, x):
        return reward.shaping_distance(s.game)

    return {
        "env_step": env_step,
        "step_env": step_env,
        "step_game": step_game,
        "enemy_phase": enemy_phase,
        "move_enemies": move_enemies,
        "hatch": hatch,
        "spawns": spawns,
        "resolve_direction": resolve_direction,
        "program": program,
        "observe": observe,
        "grid_features": grid_features,
        "action_mask": action_mask,
        "reset": reset,
        "reset_sparse": reset_sparse,
        "complete_stage": complete_stage,
        "generate_stage": generate_stage,
        "reward": reward_part,
        "shaping_distance": shaping_distance,
    }


def played_states(env: HackMatrix, num_envs: int, play: int, seed: int, cache: str | None):
    """(obs, state) after ``play`` random masked auto-reset steps from reset.

    ``cache``: a pickle file of those arrays, read if present, else written
    (the states are data: they do not depend on the code being profiled).
    """
    if cache and os.path.exists(cache):
        with open(cache, "rb") as f:
            leaves, meta = pickle.load(f)
        if meta == (num_envs, play, seed):
            shapes = jax.eval_shape(env.reset, jax.random.key(0), env.default_params)
            treedef = jax.tree.structure(shapes)
            return jax.tree.unflatten(treedef, [jnp.asarray(x) for x in leaves])
    out = _played(env, num_envs, play, seed)
    if cache:
        with open(cache, "wb") as f:
            pickle.dump(([np.asarray(x) for x in jax.tree.leaves(out)], (num_envs, play, seed)), f)
    return out


def _played(env: HackMatrix, num_envs: int, play: int, seed: int):
    params = env.default_params
    key = jax.random.key(seed)
    keys = jax.random.split(key, num_envs)
    obs, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    if play > 0:
        rollout = make_rollout(env, num_envs, play)
        obs, state, _, _ = rollout(obs, state, jax.random.fold_in(key, 1))
    return jax.block_until_ready((obs, state))


def _without_snapshots(tree):
    """``tree`` with every ``EnvState``'s UNDO buffer dropped (a ``None`` subtree).

    A jitted part that returned the 16-snapshot buffer would copy it (~53 MB at
    4,096 envs) on every call, which the env's scan never does (the buffer is a
    loop carry updated in place). Parts that write one slot lose that write to
    dead-code elimination: a single-slot update, negligible.
    """
    is_state = lambda t: isinstance(t, EnvState)  # noqa: E731
    return jax.tree.map(
        lambda t: without_snapshots(t) if is_state(t) else t, tree, is_leaf=is_state
    )


def profile(parts: dict, names: list[str], args: tuple, repeats: int) -> list[dict]:
    """Time ``jit(vmap(part))`` for each name; print one row per part."""
    rows = []
    for name in names:
        part = parts[name]
        fn = jax.jit(jax.vmap(lambda *a, part=part: _without_snapshots(part(*a))))
        t0 = time.perf_counter()
        lowered = fn.lower(*args)
        lower_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        compiled = lowered.compile()
        compile_s = time.perf_counter() - t0
        jax.block_until_ready(compiled(*args))
        times, cpu = [], []
        for _ in range(repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            jax.block_until_ready(compiled(*args))
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        ms = statistics.median(times) * 1e3
        row = {
            "part": name,
            "ms": ms,
            "min_ms": min(times) * 1e3,
            "cpu_ms": statistics.median(cpu) * 1e3,
            "trace_s": lower_s,
            "compile_s": compile_s,
        }
        rows.append(row)
        print(
            f"{name:<18} {ms:9.2f} ms  (min {row['min_ms']:8.2f}, CPU {row['cpu_ms']:8.2f})  "
            f"trace+lower {lower_s:5.1f} s  XLA compile {compile_s:6.1f} s",
            flush=True,
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    env = HackMatrix()
    all_parts = list(_parts(env, env.default_params))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--envs", type=int, default=4096)
    ap.add_argument("--play", type=int, default=24, help="random masked steps before timing")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--parts", nargs="+", default=all_parts, choices=all_parts)
    ap.add_argument("--json", help="also write the rows to this file")
    ap.add_argument("--cache", help="pickle of the played states (written if missing)")
    args = ap.parse_args(argv)

    params = env.default_params
    t0 = time.perf_counter()
    obs, state = played_states(env, args.envs, args.play, args.seed, args.cache)
    k_act, k_step = jax.random.split(jax.random.key(args.seed + 1))
    actions = jax.jit(uniform_masked_actions)(k_act, obs.action_mask)
    keys = jax.random.split(k_step, args.envs)
    done = jnp.zeros(args.envs, jnp.bool_)
    if "reset_sparse" in args.parts:  # the rows the timed step ends (one more compile)
        step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
        _, _, _, term, trunc, _ = step(keys, state, actions, params)
        done = term | trunc
    extras = {"done": done, "obs": obs}
    n_enemies = jnp.sum(state.enemies.alive, axis=1)
    print(
        f"profile_step: jax {jax.__version__}, {args.envs} envs after {args.play} played steps "
        f"({time.perf_counter() - t0:.0f} s); enemies per game mean "
        f"{float(jnp.mean(n_enemies)):.2f} max {int(jnp.max(n_enemies))}; "
        f"{int(jnp.sum(extras['done']))} done after the timed step; median of {args.repeats}",
        flush=True,
    )
    rows = profile(_parts(env, params), args.parts, (keys, state, actions, extras), args.repeats)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"envs": args.envs, "play": args.play, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
