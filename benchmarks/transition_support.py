"""Swift-driven transition support check (a diagnosis tool, not part of CI).

The engine (``hm-parity``) lets JAX lead and asks whether Swift's outcome is among JAX's
candidates. This script lets Swift lead: Swift plays (random valid actions from generated
scenarios, or a repro case's actions), and for every same-stage transition except siphons
it asks whether some JAX key, from **Swift's own pre-step full state**, gives exactly
Swift's post-step state (player, turn, stage, enemy and transmission lists in list order).
Transitions not found with ``--keys`` keys get a deep search (``--deep-keys``, 65,536); those still not
found are re-drawn in Swift (``setFullState`` + ``step``, ``--redraws`` times) to see how
rare Swift's own outcome is, and their per-enemy marginals are compared with JAX's
(total variation, and Swift values outside JAX's support). specs/parity.md, "Open
mismatches", has its results.

    uv run hm-bench transitions --scenarios 240
    uv run hm-bench transitions --case REPRO.json --runs 400
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from hackmatrix_env.constants import ENEMY_NAMES
from hackmatrix_env.transition import advance
from hackmatrix_parity import jax_side
from hackmatrix_parity.build import ensure_swift_binary
from hackmatrix_parity.client import SwiftGame
from hackmatrix_parity.scenarios import generate_scenario

THEMES = ("crowded", "combat", "stacked", "late_stage")
SIPHON = 4
_step = advance  # the game step with its UNDO ring update, as the parity harness steps


def pack(s) -> jax.Array:
    """int32 vector of everything compared: player, turn, stage, enemy and transmission lists."""
    s = s.game
    p, e, t = s.player, s.enemies, s.transmissions
    i = jnp.int32
    scalars = [p.hp, p.credits, p.energy, p.score, p.siphons, s.turn, s.stage]
    player = jnp.concatenate([p.pos.astype(i), jnp.stack([x.astype(i) for x in scalars])])
    col = lambda x: x.astype(i).reshape(x.shape[0], -1)  # noqa: E731
    en = jnp.concatenate(
        [
            col(e.kind) + 1,
            col(e.pos),
            col(e.hp),
            col(e.disabled),
            col(e.stunned),
            col(e.last_known),
        ],
        1,
    )
    tr = jnp.concatenate([col(t.kind) + 1, col(t.pos), col(t.countdown)], 1)
    en = jnp.where(e.alive[:, None], en, 0)
    tr = jnp.where(t.alive[:, None], tr, 0)
    return jnp.concatenate([player, en.ravel(), tr.ravel()])


_pack = jax.jit(pack)


@jax.jit
def _candidates(states, actions, keys):
    per_state = lambda s, a, ks: jax.vmap(lambda k: pack(_step(k, s, a)[0]))(ks)  # noqa: E731
    return jax.vmap(per_state)(states, actions, keys)


@jax.jit
def _enemy_outcomes(state, action, keys):
    def one(k):
        after = _step(k, state, action)[0].game
        return after.enemies.kind, after.enemies.pos, after.enemies.hp, after.enemies.alive

    return jax.vmap(one)(keys)


def _want(full: dict) -> bytes:
    return np.asarray(_pack(jax_side.load_full_state(full))).tobytes()


def swift_transitions(game: SwiftGame, args) -> list[tuple[dict, int, dict]]:
    rng = np.random.default_rng(args.seed)
    case = json.loads(Path(args.case).read_text()) if args.case else None
    runs = args.runs if case else args.scenarios
    srng = np.random.default_rng(args.seed + 1)
    out = []
    for n in range(runs):
        sc = case["scenario"] if case else generate_scenario(srng, THEMES[n % len(THEMES)])
        try:
            game.set_state(sc)
        except Exception:  # a scenario Swift refuses is not a transition
            continue
        pre = game.full_state(include_history=True)
        for planned in list(case["actions"]) if case else [None] * args.steps:
            valid = game.valid_actions()
            if not valid:
                break
            if planned is not None and planned not in valid:
                continue  # the case's action is invalid on this (random) board: skip it
            a = int(rng.choice(valid)) if planned is None else planned
            reply = game.step(a)
            post = game.full_state(include_history=True)
            done = reply.get("done") or reply["observation"]["playerHP"] <= 0
            if post["stage"] == pre["stage"] and not done and a != SIPHON:
                out.append((pre, a, post))
            if done:
                break
            pre = post
    return out


def not_found(items, keys: int, seed: int) -> list[int]:
    """Indices of ``items`` whose Swift post-state no JAX key (of ``keys``) reproduces."""
    per_call = 1024
    lanes = max(1, per_call // keys)
    kk = min(keys, per_call)
    missing = []
    for i in range(0, len(items), lanes):
        chunk = items[i : i + lanes]
        pad = chunk + [chunk[-1]] * (lanes - len(chunk))
        states = jax.tree.map(
            lambda *x: jnp.stack(x), *[jax_side.load_full_state(p) for p, _, _ in pad]
        )
        actions = jnp.asarray([a for _, a, _ in pad], jnp.int32)
        wants = [_want(q) for _, _, q in chunk]
        found = [False] * len(chunk)
        for r in range(-(-keys // kk)):
            ks = jax.random.split(jax.random.key(seed * 1_000_003 + i * 7919 + r), lanes * kk)
            out = np.asarray(_candidates(states, actions, ks.reshape(lanes, kk)))
            for c in range(len(chunk)):
                found[c] = found[c] or wants[c] in {row.tobytes() for row in out[c]}
            if all(found):
                break
        missing += [i + c for c in range(len(chunk)) if not found[c]]
    return missing


def redraw(game: SwiftGame, pre: dict, action: int, post: dict, n: int, jax_keys: int) -> dict:
    """How rare Swift's outcome is for Swift itself, and per-enemy marginals Swift vs JAX."""
    want, outcomes = _want(post), Counter()
    n_en = len(pre["enemies"])
    sw = [Counter() for _ in range(n_en)]
    for _ in range(n):
        game.set_full_state(pre)
        game.step(action)
        got = game.full_state(include_history=False)
        outcomes[_want(got)] += 1
        for k, e in enumerate(got["enemies"][:n_en]):
            sw[k][(e["type"], e["row"], e["col"], e["hp"])] += 1
    kind, pos, hp, alive = jax.device_get(
        _enemy_outcomes(
            jax_side.load_full_state(pre), jnp.int32(action),
            jax.random.split(jax.random.key(1), jax_keys),
        )
    )  # fmt: skip
    jx = [Counter() for _ in range(n_en)]
    for m in range(jax_keys):
        for k in range(n_en):
            if alive[m, k]:
                jx[k][(ENEMY_NAMES[int(kind[m, k])], *map(int, pos[m, k]), int(hp[m, k]))] += 1
    tv, outside = [], 0
    for a, b in zip(sw, jx, strict=True):
        na, nb = sum(a.values()) or 1, sum(b.values()) or 1
        tv.append(0.5 * sum(abs(a[x] / na - b[x] / nb) for x in set(a) | set(b)))
        outside += sum(v for x, v in a.items() if x not in b)
    return {
        "enemies": n_en, "swift_repeats": outcomes[want], "swift_distinct": len(outcomes),
        "tv_mean": float(np.mean(tv)) if tv else 0.0, "tv_max": max(tv, default=0.0),
        "outside_support": outside, "values": n * n_en,
    }  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenarios", type=int, default=240, help="generated scenarios to play")
    p.add_argument("--steps", type=int, default=30, help="random valid actions per scenario")
    p.add_argument("--case", default=None, help="a repro JSON: replay its scenario and actions")
    p.add_argument("--runs", type=int, default=400, help="replays of --case")
    p.add_argument("--keys", type=int, default=128, help="JAX keys per transition")
    p.add_argument("--deep-keys", type=int, default=65_536, help="keys of the deep search")
    p.add_argument("--redraws", type=int, default=2000, help="Swift re-draws of a miss")
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--json", default=None, help="write the misses (pre/post states) here")
    args = p.parse_args()

    game = SwiftGame(str(ensure_swift_binary()))
    t0 = time.time()
    items = swift_transitions(game, args)
    print(f"swift: {len(items)} same-stage transitions in {time.time() - t0:.0f}s", flush=True)
    t0 = time.time()
    miss = not_found(items, args.keys, 1)
    print(f"jax: {len(items) - len(miss)} found with {args.keys} keys ({time.time() - t0:.0f}s)")
    deep = [miss[j] for j in not_found([items[i] for i in miss], args.deep_keys, 2)]
    print(f"deep search: {len(miss) - len(deep)} more found, {len(deep)} not found", flush=True)
    report = []
    for i in deep:
        pre, a, post = items[i]
        r = redraw(game, pre, a, post, args.redraws, 8192)
        print(f"  transition {i}: action {a}, {r['enemies']} enemies; Swift repeats its outcome "
              f"{r['swift_repeats']}/{args.redraws} ({r['swift_distinct']} distinct); per-enemy "
              f"TV mean {r['tv_mean']:.3f} max {r['tv_max']:.3f}; Swift values outside JAX's "
              f"support {r['outside_support']}/{r['values']}", flush=True)  # fmt: skip
        report.append({"index": i, "action": a, "pre": pre, "post": post, **r})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f)


if __name__ == "__main__":
    main()
