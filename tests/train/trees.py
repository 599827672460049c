"""Leaf-by-leaf equality of runner states, for the exactness tests (resume, time budget)."""

from __future__ import annotations

import numpy as np
from hackmatrix_train import checkpoint as ckpt


def assert_trees_equal(a, b):
    """Every leaf of ``a`` equals ``b``'s bit for bit (flattened as checkpoints name them)."""
    fa, fb = ckpt.flatten_state(a), ckpt.flatten_state(b)
    assert fa.keys() == fb.keys()
    for k in fa:
        np.testing.assert_array_equal(fa[k], fb[k], err_msg=k)
