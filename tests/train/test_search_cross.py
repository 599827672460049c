"""``experiments/search_cross.py``: one network's prior with another network's value."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from hackmatrix_train.policy import load_policy
from repo_files import ROOT
from train.test_network import fake_obs
from train.tiny_policy import write_tiny_policy

_spec = importlib.util.spec_from_file_location(
    "search_cross", ROOT / "experiments" / "search_cross.py"
)
search_cross = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(search_cross)


def test_the_crossed_network_has_one_priors_logits_and_the_others_value(tmp_path):
    prior = load_policy(write_tiny_policy(tmp_path / "a", 50, seed=1, network="grid").parent)
    value = load_policy(write_tiny_policy(tmp_path / "b", 50, seed=2, network="grid-hl").parent)
    obs = fake_obs(6, 3)
    net = search_cross.Crossed(type("Net", (), {"apply": staticmethod(prior.apply_fn)}), value)
    logits, v = net.apply(prior.params, obs)
    want_logits, prior_value = prior.apply_fn(prior.params, obs)
    np.testing.assert_array_equal(np.asarray(logits), np.asarray(want_logits))
    np.testing.assert_array_equal(np.asarray(v), np.asarray(value.apply_fn(value.params, obs)[1]))
    assert not np.allclose(np.asarray(v), np.asarray(prior_value))
    search_cross.check_units(prior.cfg, value.cfg)  # the same run settings: accepted
    with pytest.raises(ValueError, match="the runs' gamma differ"):
        search_cross.check_units(prior.cfg, value.cfg.replace(gamma=0.9))
