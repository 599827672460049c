"""Diagnostic: would the trained policy do better if it siphoned? (host script, not a test)

Evaluates a checkpoint greedily (like ``hm-eval``) with a constant added to the logit of the
siphon action (index 4) and, optionally, to the program actions (5-27), for several biases, and
prints return, stage reached, siphons and programs per episode and the mean score. Bias 0 is the
policy itself; a large bias siphons whenever the siphon is valid. If the return falls as the bias
grows, the policy is right not to siphon under the canonical reward at its level of play.

    uv run hm-bench siphon-bias CHECKPOINT \
        --biases 0 1 2 4 100 --episodes 256
"""

from __future__ import annotations

import argparse
import json

from hackmatrix_env.constants import Action
from hackmatrix_train.compile_cache import default_cache_dir, enable
from hackmatrix_train.policy import evaluate_checkpoint

SIPHON = int(Action.SIPHON)  # the programs follow it (5-27)


class _Biased:
    """A network whose logits get ``bias`` on the siphon (and optionally program) actions."""

    def __init__(self, net, bias: float, programs: bool):
        self.net, self.bias, self.programs = net, bias, programs

    def apply(self, params, obs):
        logits, value = self.net.apply(params, obs)
        stop = logits.shape[-1] if self.programs else SIPHON + 1
        return logits.at[..., SIPHON:stop].add(self.bias), value


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("checkpoint")
    p.add_argument("--biases", type=float, nargs="+", default=[0.0, 1.0, 2.0, 4.0, 100.0])
    p.add_argument("--programs", action="store_true", help="bias the program actions as well")
    p.add_argument("--episodes", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    enable(default_cache_dir())
    rows = []
    print(f"{'bias':>6} {'return':>8} {'stage':>6} {'3+':>5} {'siphons':>8} {'programs':>8}")
    for bias in args.biases:
        s = evaluate_checkpoint(
            args.checkpoint, args.episodes, True, args.seed,
            wrap_network=lambda net, b=bias: _Biased(net, b, args.programs),
        )  # fmt: skip
        row = {"bias": bias, **{k: s[k] for k in (
            "return_mean", "stage_mean", "stage_3plus_frac", "siphons_per_episode",
            "programs_per_episode", "stage_distribution")}}  # fmt: skip
        rows.append(row)
        print(
            f"{bias:>6g} {s['return_mean']:>8.2f} {s['stage_mean']:>6.2f} "
            f"{s['stage_3plus_frac']:>5.2f} {s['siphons_per_episode']:>8.2f} "
            f"{s['programs_per_episode']:>8.2f}",
            flush=True,
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"checkpoint": args.checkpoint, "programs": args.programs, "rows": rows}, f)


if __name__ == "__main__":
    main()
