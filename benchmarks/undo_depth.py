"""How deep do UNDO chains get? Would a ring of depth H ever differ from the unbounded stack?

    uv run hm-bench undo-depth [--batch 512] [--steps 1000]

Runs the real env (gymnax step with auto-reset) under random masked policies
and records, per env step: a snapshot was pushed, UNDO was executed, and UNDO
would be valid apart from the history (owned and credits >= 1). Offline, for
several depths H, it replays the push/pop sequence through a ring of depth H
and through the reference's unbounded stack and counts the steps where their
UNDO masks differ (ring empty, stack not, UNDO otherwise valid) -- the only
way the fixed ring can change an episode (specs/programs.md §5).

Policies: ``uniform`` (uniform over valid actions), ``undo-greedy`` (UNDO with
probability 0.5 whenever valid, else uniform) and ``undo-stress``: undo-greedy
where every env owns UNDO from the start and always has the 1 credit it needs
(state edited before each step; an upper bound, not a reachable game).
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np
from hackmatrix_env.constants import FIRST_PROGRAM, Program
from hackmatrix_env.env import HackMatrix
from hackmatrix_env.programs import owned_programs

UNDO_ACTION = FIRST_PROGRAM + Program.UNDO


def make_rollout(batch: int, n_steps: int):
    """A jitted (undo_bias, seed key) -> per-step records [n_steps, batch] (one compile)."""
    env = HackMatrix()
    params = env.default_params

    def body(undo_bias, stress, carry, key):
        obs, state = carry
        game = state.game
        owned = owned_programs(game)[Program.UNDO]
        grant = stress & ~owned
        n = game.num_owned.astype(jnp.int32)
        game = game.replace(
            owned_list=jnp.where(
                grant & (jnp.arange(game.owned_list.shape[0]) == n),
                jnp.int8(Program.UNDO),
                game.owned_list,
            ),
            num_owned=jnp.where(grant, n + 1, n).astype(jnp.int8),
            player=game.player.replace(
                credits=jnp.where(stress, jnp.maximum(game.player.credits, 1), game.player.credits)
            ),
        )
        state = state.replace(game=game)
        obs = obs._replace(
            action_mask=jnp.where(
                stress, env.observe(None, state, None, params).action_mask, obs.action_mask
            )
        )
        k_act, k_bias, k_step = jax.random.split(key, 3)
        logits = jnp.where(obs.action_mask, 0.0, -jnp.inf)
        action = jax.random.categorical(k_act, logits)
        undo_ok = obs.action_mask[UNDO_ACTION]
        action = jnp.where(undo_ok & jax.random.bernoulli(k_bias, undo_bias), UNDO_ACTION, action)
        undo_possible = owned_programs(game)[Program.UNDO] & (game.player.credits >= 1)
        h0 = state.history
        obs2, state2, _, term, trunc, info = env.step(k_step, state, action, params)
        done = term | trunc
        h1 = state2.history
        pushed = ~done & ((h1.lost > h0.lost) | (h1.size > h0.size))
        popped = ~done & (action == UNDO_ACTION) & ~info["invalid_action"]
        rec = (pushed, popped, undo_possible, done)
        return (obs2, state2), rec

    @jax.jit
    def run(undo_bias, stress, key):
        k_reset, k_steps = jax.random.split(key)
        carry = jax.vmap(lambda k: env.reset_env(k, params))(jax.random.split(k_reset, batch))
        keys = jax.random.split(k_steps, (n_steps, batch))
        step = jax.vmap(lambda c, k: body(undo_bias, stress, c, k))
        return jax.lax.scan(step, carry, keys)[1]

    def rollout(undo_bias: float, stress: bool, seed: int):
        rec = run(jnp.float32(undo_bias), jnp.bool_(stress), jax.random.key(seed))
        return [np.asarray(x) for x in rec]  # each [n_steps, batch]

    return rollout


def replay(pushed, popped, possible, done, depths):
    """Mask-difference counts per depth, plus chain statistics."""
    n_steps, batch = pushed.shape
    v = np.zeros(batch, np.int64)  # unbounded stack size
    r = {h: np.zeros(batch, np.int64) for h in depths}
    diff = {h: 0 for h in depths}
    ep_flag = {h: np.zeros(batch, bool) for h in depths}  # this env's episode was affected
    diff_eps = {h: 0 for h in depths}
    chain = np.zeros(batch, np.int64)  # UNDOs in a row without a push in between
    max_chain = 0
    max_v = 0
    pops = 0
    episodes = int(done.sum()) + batch
    for t in range(n_steps):
        for h in depths:
            differs = possible[t] & (v > 0) & (r[h] == 0)
            diff[h] += int(differs.sum())
            ep_flag[h] |= differs
        p, q = pushed[t], popped[t]
        pops += int(q.sum())
        v = np.where(p, v + 1, np.where(q, v - 1, v))
        for h in depths:
            r[h] = np.where(p, np.minimum(r[h] + 1, h), np.where(q, np.maximum(r[h] - 1, 0), r[h]))
        chain = np.where(q, chain + 1, np.where(p, 0, chain))
        max_chain = max(max_chain, int(chain.max()))
        max_v = max(max_v, int(v.max()))
        d = done[t]
        v = np.where(d, 0, v)
        chain = np.where(d, 0, chain)
        for h in depths:
            r[h] = np.where(d, 0, r[h])
            diff_eps[h] += int((ep_flag[h] & d).sum())
            ep_flag[h] &= ~d
    for h in depths:
        diff_eps[h] += int(ep_flag[h].sum())
    return dict(
        diff=diff,
        diff_eps=diff_eps,
        max_chain=max_chain,
        max_stack=max_v,
        pops=pops,
        episodes=episodes,
        steps=n_steps * batch,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--steps", type=int, default=1000)
    args = ap.parse_args()
    depths = [1, 2, 4, 8, 16, 32]
    rollout = make_rollout(args.batch, args.steps)
    for name, bias, stress in (
        ("uniform", 0.0, False),
        ("undo-greedy", 0.5, False),
        ("undo-stress", 0.5, True),
    ):
        rec = rollout(bias, stress, seed=11)
        s = replay(*rec, depths)
        print(
            f"policy {name}: {s['steps']:,} steps, ~{s['episodes']:,} episodes, "
            f"{s['pops']:,} UNDOs, longest UNDO chain {s['max_chain']}, "
            f"deepest unbounded stack {s['max_stack']}"
        )
        for h in depths:
            print(
                f"  H={h:>2}: steps whose UNDO mask differs from the unbounded stack: "
                f"{s['diff'][h]:,}  (episodes affected: {s['diff_eps'][h]})"
            )


if __name__ == "__main__":
    main()
