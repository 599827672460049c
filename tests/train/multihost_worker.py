"""One ``hm-train`` process on the probe suite, for ``test_multihost.py`` (argv: hm-train flags).

Prints one JSON line: this process's index and count, and a digest of the params it holds
(its own replica, read from its addressable data, so process 1's copy is checked too).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hackmatrix_train import run as run_module
from hackmatrix_train.cli import train as cli


def main(argv: list[str]) -> int:
    results = []
    real_run = run_module.run

    def run(cfg, explicit, place=None):  # hm-train's own run on the probe env, after set-up
        from train.train_probes import ProbeParams, ProbeSuite

        results.append(real_run(cfg, explicit, ProbeSuite(), ProbeParams(), place=place))
        return results[-1]

    run_module.run = run
    code = cli.main(argv)
    import jax
    import numpy as np

    (result,) = results
    digest = hashlib.sha256()
    for leaf in jax.tree.leaves(result["runner"].params):
        digest.update(np.asarray(leaf.addressable_data(0)).tobytes())
    print(json.dumps({
        "process_index": jax.process_index(),
        "process_count": jax.process_count(),
        "num_devices": jax.device_count(),
        "update": result["update"],
        "params_sha256": digest.hexdigest(),
    }))  # fmt: skip
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
