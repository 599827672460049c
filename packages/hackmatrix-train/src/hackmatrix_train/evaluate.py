"""Policy evaluation: N whole episodes in parallel, greedy or sampled, plus summaries.

Each of the N envs plays exactly its first episode (the gymnax auto-reset afterwards is ignored).
The scan runs ``max_steps_in_episode`` steps, so every episode ends by termination or truncation.
``random_policy`` evaluates a uniform policy over valid actions (the masked random baseline).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hackmatrix_train.network import masked_categorical
from hackmatrix_train.rollout import STAGE_COMPONENT, VICTORY_COMPONENT


def make_evaluate(env, env_params, apply_fn, num_episodes: int, max_steps: int, greedy: bool):
    """Jitted ``evaluate(params, key) -> dict of per-episode numpy-able arrays``.

    ``apply_fn=None`` gives the uniform random masked policy (params ignored).
    """
    step_fn = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def policy(params, obs, key):
        mask = obs.action_mask
        if apply_fn is None:
            logits = jnp.zeros(mask.shape, jnp.float32)
        else:
            logits, _ = apply_fn(params, obs)
        pi = masked_categorical(logits, mask)
        if greedy and apply_fn is not None:
            return jnp.argmax(pi.logits, axis=-1).astype(jnp.int32)
        return pi.sample(seed=key).astype(jnp.int32)

    @jax.jit
    def evaluate(params, key):
        k_reset, k_run = jax.random.split(key)
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(
            jax.random.split(k_reset, num_episodes), env_params
        )
        num_actions = obs.action_mask.shape[-1]
        n = num_episodes
        stage0 = getattr(state, "stage", jnp.zeros(n, jnp.int8)).astype(jnp.int32)
        carry0 = {
            "alive": jnp.ones(n, bool),
            "ret": jnp.zeros(n, jnp.float32),
            "length": jnp.zeros(n, jnp.int32),
            "stage": stage0,
            "won": jnp.zeros(n, bool),
            "actions": jnp.zeros((n, num_actions), jnp.int32),
        }

        def body(c, key):
            obs, state, acc = c
            k_pol, k_env = jax.random.split(key)
            action = policy(params, obs, k_pol)
            stage_before = getattr(state, "stage", jnp.zeros(n, jnp.int8)).astype(jnp.int32)
            obs, state, reward, term, trunc, info = step_fn(
                jax.random.split(k_env, n), state, action, env_params
            )
            alive = acc["alive"]
            rb = info.get("reward_breakdown")
            if rb is not None and rb.shape[-1] > VICTORY_COMPONENT:
                won = rb[:, VICTORY_COMPONENT] > 0
                completed = (rb[:, STAGE_COMPONENT] > 0) & ~won
            else:
                won = jnp.zeros(n, bool)
                completed = jnp.zeros(n, bool)
            reached = jnp.minimum(stage_before + completed.astype(jnp.int32), 8)
            acc = {
                "alive": alive & ~(term | trunc),
                "ret": acc["ret"] + jnp.where(alive, reward, 0.0),
                "length": acc["length"] + alive.astype(jnp.int32),
                "stage": jnp.where(alive, jnp.maximum(acc["stage"], reached), acc["stage"]),
                "won": acc["won"] | (alive & won),
                "actions": acc["actions"]
                + jnp.where(
                    alive[:, None], jax.nn.one_hot(action, num_actions, dtype=jnp.int32), 0
                ),
            }
            return (obs, state, acc), None

        (_, _, acc), _ = jax.lax.scan(
            body, (obs, state, carry0), jax.random.split(k_run, max_steps)
        )
        return acc

    return evaluate


def summarize(result: dict, program_names=()) -> dict:
    """Aggregate per-episode arrays into a JSON-ready summary."""
    r = {k: np.asarray(v) for k, v in result.items()}
    n = len(r["ret"])
    actions = r["actions"]
    total = max(int(actions.sum()), 1)
    out = {
        "episodes": n,
        "return_mean": float(r["ret"].mean()),
        "return_std": float(r["ret"].std()),
        "return_min": float(r["ret"].min()),
        "return_max": float(r["ret"].max()),
        "length_mean": float(r["length"].mean()),
        "unfinished": int(r["alive"].sum()),
        "win_rate": float(r["won"].mean()),
        "stage_distribution": {
            str(s): int(c) for s, c in zip(*np.unique(r["stage"], return_counts=True), strict=True)
        },
        "stage_mean": float(r["stage"].mean()),
        "stage_3plus_frac": float((r["stage"] >= 3).mean()),
    }
    if actions.shape[1] == 28:
        out["move_frac"] = float(actions[:, :4].sum() / total)
        out["siphon_frac"] = float(actions[:, 4].sum() / total)
        out["program_frac"] = float(actions[:, 5:].sum() / total)
        out["siphons_per_episode"] = float(actions[:, 4].sum() / n)
        out["programs_per_episode"] = float(actions[:, 5:].sum() / n)
        names = program_names or [f"p{i}" for i in range(23)]
        out["program_use"] = {name: int(actions[:, 5 + i].sum()) for i, name in enumerate(names)}
    return out


def format_table(summary: dict, title: str = "evaluation") -> str:
    """A plain-text table of the summary."""
    rows = [(k, v) for k, v in summary.items() if not isinstance(v, dict)]
    lines = [title, "-" * len(title)]
    lines += [f"{k:<22} {v:.4g}" if isinstance(v, float) else f"{k:<22} {v}" for k, v in rows]
    lines.append("stage distribution:")
    for s, c in summary["stage_distribution"].items():
        lines.append(f"  stage {s:>2}: {c}")
    if "program_use" in summary:
        used = {k: v for k, v in summary["program_use"].items() if v}
        lines.append("program use: " + (", ".join(f"{k}={v}" for k, v in used.items()) or "none"))
    return "\n".join(lines)
