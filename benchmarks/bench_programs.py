"""Benchmark the program dispatch: jit(vmap(run_program)) and jit(vmap(program_mask)).

    uv run hm-bench programs [--batch 4096]
    uv run hm-bench programs --env

``--env`` measures whole env steps (gymnax ``step`` with auto-reset, random masked
policy, jit(scan(vmap))) with the real programs and with a no-programs stand-in
(no program ever valid, identity effect) patched in, interleaved in one process.

Random well-formed states (random enemies/transmissions/blocks/siphoned cells,
all programs owned, a partly filled UNDO ring) and a uniformly random program
index per env, so every program's path is exercised in each batch. Prints
compile time and calls/s (x batch = program applications per second).
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
from hackmatrix_env.constants import (
    ENEMY_MAX_HP,
    GRID_SIZE,
    HISTORY_DEPTH,
    MAX_ENEMIES,
    MAX_OWNED_LIST,
    MAX_TRANSMISSIONS,
    NUM_PROGRAMS,
    Content,
)
from hackmatrix_env.history import has_snapshot, push_snapshot, take_snapshot, undo_top
from hackmatrix_env.programs import program_mask, run_program
from hackmatrix_env.types import blank_state


def random_state(key):
    """A random, well-formed state (compact pools, zeroed dead slots)."""
    ks = jax.random.split(key, 12)
    state = blank_state()
    s = state.game
    n_e = jax.random.randint(ks[0], (), 0, 13)
    n_t = jax.random.randint(ks[1], (), 0, 9)
    alive_e = jnp.arange(MAX_ENEMIES) < n_e
    alive_t = jnp.arange(MAX_TRANSMISSIONS) < n_t
    kind = jax.random.randint(ks[2], (MAX_ENEMIES,), 0, 4)
    hp = jax.random.randint(ks[3], (MAX_ENEMIES,), 1, 4)
    hp = jnp.minimum(hp, jnp.asarray(ENEMY_MAX_HP)[kind])
    epos = jax.random.randint(ks[4], (MAX_ENEMIES, 2), 0, GRID_SIZE)
    tpos = jax.random.randint(ks[5], (MAX_TRANSMISSIONS, 2), 0, GRID_SIZE)
    z = lambda x, m: jnp.where(m.reshape(m.shape + (1,) * (x.ndim - 1)), x, 0)  # noqa: E731
    e = s.enemies.replace(
        kind=z(kind, alive_e).astype(jnp.int8),
        pos=z(epos, alive_e).astype(jnp.int8),
        hp=z(hp, alive_e).astype(jnp.int8),
        last_known=z(epos, alive_e).astype(jnp.int8),
        from_task=jax.random.bernoulli(ks[6], 0.3, (MAX_ENEMIES,)) & alive_e,
        alive=alive_e,
    )
    t = s.transmissions.replace(
        pos=z(tpos, alive_t).astype(jnp.int8),
        countdown=z(jnp.ones(MAX_TRANSMISSIONS, jnp.int32), alive_t).astype(jnp.int8),
        kind=z(jax.random.randint(ks[7], (MAX_TRANSMISSIONS,), 0, 4), alive_t).astype(jnp.int8),
        alive=alive_t,
    )
    blocks = jax.random.bernoulli(ks[8], 0.2, (GRID_SIZE, GRID_SIZE))
    g = s.grid.replace(
        content=jnp.where(blocks, Content.BLOCK, Content.EMPTY).astype(jnp.int8),
        block_spawn=jnp.where(blocks, 3, 0).astype(jnp.int8),
        block_points=jnp.where(blocks, 3, 0).astype(jnp.int8),
        siphoned=jax.random.bernoulli(ks[9], 0.2, (GRID_SIZE, GRID_SIZE)),
    )
    ppos = jax.random.randint(ks[10], (2,), 0, GRID_SIZE).astype(jnp.int8)
    owned = (
        jnp.full(MAX_OWNED_LIST, -1, jnp.int8)
        .at[:NUM_PROGRAMS]
        .set(jnp.arange(NUM_PROGRAMS, dtype=jnp.int8))
    )
    s = s.replace(
        player=s.player.replace(
            pos=ppos, hp=jnp.int8(2), credits=jnp.int32(20), energy=jnp.int32(20)
        ),
        enemies=e,
        transmissions=t,
        grid=g,
        owned_list=owned,
        num_owned=jnp.int8(NUM_PROGRAMS),
        exit_pos=jnp.asarray([5, 5], jnp.int8),
    )
    n_hist = jax.random.randint(ks[11], (), 0, HISTORY_DEPTH + 1)
    history = state.history
    for i in range(HISTORY_DEPTH):
        history = push_snapshot(history, take_snapshot(s.replace(turn=jnp.int32(i))), i < n_hist)
    return state.replace(game=s, history=history)


def _time(fn, args, reps):
    """(compile s, wall s per call, process CPU s per call).

    Best of ``reps`` calls. CPU time (all threads) is steadier than wall time on a
    shared machine; on an idle 2-core machine wall ~ CPU / 2.
    """
    t0 = time.perf_counter()
    out = fn(*args)
    jax.block_until_ready(out)
    compile_s = time.perf_counter() - t0
    walls, cpus = [float("inf")], [float("inf")]
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        jax.block_until_ready(fn(*args))
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return compile_s, min(walls), min(cpus)


def _scanned(step, n_steps):
    """jit(scan over n_steps of vmap(step)) with the batched state as carry (as in a rollout)."""

    def body(carry, xs):
        keys, progs = xs
        return jax.vmap(step)(keys, carry, progs), None

    @jax.jit
    def fn(states, keys, progs):
        out, _ = jax.lax.scan(body, states, (keys, progs))
        return out

    return fn


def _skeleton_programs():
    """A no-programs stand-in: no program is ever valid, the effect is the identity."""
    return (
        lambda state, undo_available: jnp.zeros(NUM_PROGRAMS, jnp.bool_),
        lambda key, state, prog_idx, undo_snapshot: (state, jnp.int32(0), jnp.bool_(False)),
    )


def bench_env(batch: int, n_steps: int, rounds: int) -> None:
    """Env steps/s with the real programs vs the skeleton (A/B in one process)."""
    from hackmatrix_env import programs
    from hackmatrix_env.env import HackMatrix

    env = HackMatrix()
    params = env.default_params

    def make():
        def body(carry, key):
            obs, state = carry
            k_act, k_step = jax.random.split(key)
            logits = jnp.where(obs.action_mask, 0.0, -jnp.inf)
            action = jax.random.categorical(k_act, logits)
            obs, state, _, _, _, _ = env.step(k_step, state, action, params)
            return (obs, state), None

        @jax.jit
        def run(carry, keys):
            out, _ = jax.lax.scan(jax.vmap(body), carry, keys)
            return out

        return run

    real = (programs.program_mask, programs.run_program)
    variants = {}
    for name, (mask_fn, run_fn) in (
        ("no programs", _skeleton_programs()),
        ("programs", real),
    ):
        programs.program_mask, programs.run_program = mask_fn, run_fn
        carry = jax.vmap(lambda k: env.reset_env(k, params))(
            jax.random.split(jax.random.key(1), batch)
        )
        keys = jax.random.split(jax.random.key(2), (n_steps, batch))
        fn = make()
        c, _, _ = _time(fn, (carry, keys), 0)
        print(f"{name:<20} compile {c:6.2f} s", flush=True)
        variants[name] = (fn, carry, keys)
    programs.program_mask, programs.run_program = real
    for _ in range(rounds):
        for name, (fn, carry, keys) in variants.items():
            _, dt, cpu = _time(fn, (carry, keys), 3)
            print(
                f"{name:<20} batch {batch}: {batch * n_steps / dt:12,.0f} steps/s wall, "
                f"{batch * n_steps / cpu:12,.0f} steps/CPU-s",
                flush=True,
            )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--env", action="store_true", help="whole env steps, programs vs skeleton")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=20, help="scan length per call")
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    if args.env:
        bench_env(args.batch, args.steps, args.rounds)
        return
    b, n = args.batch, args.steps
    key = jax.random.key(0)
    k_state, k_prog, k_run = jax.random.split(key, 3)
    states = jax.jit(jax.vmap(random_state))(jax.random.split(k_state, b))
    progs = jax.random.randint(k_prog, (n, b), 0, NUM_PROGRAMS)
    keys = jax.random.split(k_run, (n, b))

    def report(name, step):
        c, dt, cpu = _time(_scanned(step, n), (states, keys, progs), args.reps)
        print(
            f"{name:<22} batch {b}: compile {c:6.2f} s, {b * n / dt:12,.0f} /s wall, "
            f"{b * n / cpu:12,.0f} /CPU-s"
        )
        return b * n / dt

    def ran(k, s, p):
        return s.replace(game=run_program(k, s.game, p, undo_top(s.history).snapshot)[0])

    def masked(k, s, p):
        flag = s.game.show_flag ^ program_mask(s.game, has_snapshot(s.history))[p]
        return s.replace(game=s.game.replace(show_flag=flag))

    report("run_program", ran)
    report("program_mask (+carry)", masked)
    report(
        "empty step (carry)", lambda k, s, p: s.replace(game=s.game.replace(turn=s.game.turn + p))
    )
    report(
        "full-state select",
        lambda k, s, p: jax.tree.map(lambda a: jnp.where(p > 11, a, jnp.zeros_like(a)), s),
    )


if __name__ == "__main__":
    main()
