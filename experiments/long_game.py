"""Anchored, gated expert iteration from a saved policy, for a time budget (``long_game.md``).

Starts from ``--init`` (default: the shipped agent), runs ``expert_iteration.train`` until
``--minutes`` have passed, gating each round on the greedy return of ``--gate-episodes``
games from stage 1 drawn from ``--gate-seed`` (or their mean stage, ``--gate-metric stage``) (a key apart from the protocol's key 0, so the
protocol's figures are not selected on; ``--gate fresh``: new games at each decision, the
anchor scored again on them), and writes the last anchor as a params export that
``hm-eval`` reads (``OUT/params.msgpack``), with ``OUT/history.json``.

    uv run python experiments/long_game.py --out OUT --minutes 25
    uv run hm-eval OUT/params.msgpack --episodes 256 --search 8
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import jax
import numpy as np
from flax import serialization
from hackmatrix_train import checkpoint as ckpt
from hackmatrix_train.compile_cache import default_cache_dir, enable
from hackmatrix_train.evaluate import make_evaluate
from hackmatrix_train.expert_iteration import (
    ExpertConfig,
    distill_loss,
    fresh_games,
    init_state,
    make_update,
    train,
)
from hackmatrix_train.policy import load_policy, search_config
from hackmatrix_train.trainer import make_env


def write_params(out: Path, params, meta: dict, extra: dict) -> Path:
    """``out/params.msgpack`` + ``params.json`` as the trainer's params export writes them."""
    out.mkdir(parents=True, exist_ok=True)
    blob = serialization.msgpack_serialize(ckpt.flatten_state(jax.device_get(params)))
    (out / "params.msgpack").write_bytes(blob)
    side = {"format": ckpt.PARAMS_FORMAT, "update": meta.get("update"), "config": meta["config"],
            "sha256": hashlib.sha256(blob).hexdigest(), **extra}  # fmt: skip
    (out / "params.json").write_text(json.dumps(side, indent=1))
    return out / "params.msgpack"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--init", default=None, help="the starting policy (default: the shipped one)")
    p.add_argument("--out", required=True, help="folder for the params export and history")
    p.add_argument("--minutes", type=float, default=25.0, help="time budget, checked per round")
    p.add_argument("--rounds", type=int, default=None, help="stop after this many rounds")
    p.add_argument("--simulations", type=int, default=32, help="the teacher's simulations")
    p.add_argument("--determinizations", type=int, default=2, help="the teacher's trees")
    p.add_argument("--considered", type=int, default=28, help="the teacher's root actions")
    p.add_argument("--mode", default="honest", choices=["honest", "oracle"])
    p.add_argument("--num-envs", type=int, default=128)
    p.add_argument("--num-steps", type=int, default=16)
    p.add_argument("--minibatch-size", type=int, default=1024)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--kl-coef", type=float, default=1.0)
    p.add_argument("--vf-coef", type=float, default=0.125)
    p.add_argument("--updates-per-round", type=int, default=15)
    p.add_argument("--reset-on-drop", action=argparse.BooleanOptionalAction, default=True,
                   help="a dropped candidate restarts from the anchor")  # fmt: skip
    p.add_argument("--gate", choices=["fixed", "fresh"], default="fixed",
                   help="fixed: every candidate on the same games; fresh: new games at each "
                   "decision, the anchor scored again on them (rescore_anchor)")  # fmt: skip
    p.add_argument("--margin", type=float, default=0.0, help="the gate's margin")
    p.add_argument("--fresh-games", action="store_true",
                   help="the teacher's games restart from stage 1 every round")  # fmt: skip
    p.add_argument("--kl-to", choices=["anchor", "start"], default="anchor",
                   help="what the KL and value terms hold the network near: the current anchor "
                   "(the teacher's params) or the starting policy, so kept rounds cannot "
                   "compound their drift")  # fmt: skip
    p.add_argument("--gate-metric", choices=["return", "stage"], default="return",
                   help="the gate's score: the greedy games' mean return or mean stage "
                   "reached")  # fmt: skip
    p.add_argument("--gate-episodes", type=int, default=256)
    p.add_argument("--gate-seed", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    enable(default_cache_dir())
    policy = load_policy(args.init)
    env, env_params = make_env(policy.cfg), policy.env_params
    xcfg = ExpertConfig(
        num_envs=args.num_envs, num_steps=args.num_steps, minibatch_size=args.minibatch_size,
        lr=args.lr, kl_coef=args.kl_coef, vf_coef=args.vf_coef,
        updates_per_round=args.updates_per_round, reset_on_drop=args.reset_on_drop,
        margin=args.margin, rescore_anchor=args.gate == "fresh",
    )  # fmt: skip
    k = args.determinizations if args.mode == "honest" else None
    teacher = search_config(policy, num_simulations=args.simulations, mode=args.mode,
                            max_num_considered_actions=args.considered, determinizations=k)  # fmt: skip
    loss = None
    if args.kl_to == "start":  # the loss injection point: the start's logits, not the anchor's
        start_params = policy.params

        def loss(params, apply_fn, obs, target, anchor_logits, anchor_value, kl_coef, vf_coef):
            ref_logits, ref_value = apply_fn(start_params, obs)
            return distill_loss(params, apply_fn, obs, target, ref_logits, ref_value, kl_coef,
                                vf_coef)  # fmt: skip

    update = make_update(policy.apply_fn, env, env_params, xcfg, teacher, loss=loss)
    steps = int(env_params.max_steps_in_episode)
    gate_run = make_evaluate(env, env_params, policy.apply_fn, args.gate_episodes, steps, True)
    gate_key = jax.random.key(args.gate_seed)

    def evaluate(params, decision=None):
        # fresh: decision d's games come from the gate key folded with d
        key = gate_key if decision is None else jax.random.fold_in(gate_key, decision)
        field = "ret" if args.gate_metric == "return" else "stage"
        return float(np.asarray(gate_run(params, key)[field]).mean())

    state = init_state(env, env_params, policy.params, xcfg, jax.random.key(args.seed))
    out = Path(args.out)
    new_games = fresh_games(env, env_params, xcfg) if args.fresh_games else None
    anchor, history, _, last = train(
        update, state, evaluate, xcfg, rounds=args.rounds, time_budget_s=60 * args.minutes,
        log=lambda s: print(s, flush=True), new_games=new_games,
    )  # fmt: skip
    settings = {
        "expert_iteration": vars(args),
        "teacher": teacher.__dict__ | {"disabled": list(teacher.disabled)},
    }
    path = write_params(out, anchor, policy.meta, settings)
    write_params(out / "candidate", last, policy.meta, settings)  # the last, kept or not
    (out / "history.json").write_text(json.dumps(history, indent=1))
    print(
        f"wrote {path}; rounds kept: {sum(h['accepted'] for h in history[1:])}/{len(history) - 1}"
    )


if __name__ == "__main__":
    main()
