"""The uniform average of several checkpoints' params, written as a params export ``hm-eval`` reads.

A probe of how much a single network's greedy figure owes to the moment it was saved: the
same run's checkpoints a few dozen updates apart, and their average (stochastic weight
averaging after the fact), evaluated on the same games (``long_game.md``, "One network's
greedy figure, checkpoint by checkpoint"). Every source loads against its own config, and all
must hold the same params tree and shapes; the first one's sidecar, with the sources listed, is
the export's.

    uv run python experiments/average_checkpoints.py OUT RUN/ckpt_00000330.msgpack \
        RUN/ckpt_00000650.msgpack RUN/ckpt_00000718.msgpack
    uv run hm-eval OUT --episodes 256 --seed 0
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax
import numpy as np
from hackmatrix_train.checkpoint import CheckpointError
from hackmatrix_train.policy import load_policy
from long_game import write_params  # this folder: the script's own, first on sys.path


def average_params(trees: list):
    """The leafwise mean of params trees of one network (numpy's, in each leaf's own dtype); a
    ``ValueError`` when the trees' structures or leaf shapes differ."""
    first = jax.tree.structure(trees[0])
    for i, tree in enumerate(trees[1:], start=2):
        if jax.tree.structure(tree) != first or any(
            np.shape(a) != np.shape(b)
            for a, b in zip(jax.tree.leaves(tree), jax.tree.leaves(trees[0]), strict=True)
        ):
            raise ValueError(f"source {i} holds another network than source 1")

    def mean(*leaves):
        return np.mean(leaves, axis=0).astype(np.asarray(leaves[0]).dtype)

    return jax.tree.map(mean, *trees)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, help="folder for params.msgpack and params.json")
    p.add_argument("sources", nargs="+", help="checkpoints, params exports or run directories")
    args = p.parse_args(argv)
    try:
        policies = [load_policy(s) for s in args.sources]
        params = average_params([jax.device_get(pol.params) for pol in policies])
    except (CheckpointError, ValueError) as e:
        print(f"average_checkpoints: {e}", file=sys.stderr)
        return 2
    path = write_params(args.out, params, policies[0].meta, {"averaged_from": args.sources})
    print(f"wrote the average of {len(policies)} networks: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
