"""``examples/purejaxrl_ppo.py`` trains for a tiny budget and never takes a masked action."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "purejaxrl_ppo.py"


def _load_example():
    spec = importlib.util.spec_from_file_location("purejaxrl_ppo_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # flax modules are dataclasses: their module must be findable
    spec.loader.exec_module(module)
    return module


ppo = _load_example()
TINY = {
    "NUM_ENVS": 4,
    "NUM_STEPS": 8,
    "TOTAL_TIMESTEPS": 64,  # 2 updates
    "UPDATE_EPOCHS": 1,
    "NUM_MINIBATCHES": 2,
    "HIDDEN": 16,
    "MAX_STEPS_IN_EPISODE": 6,  # truncations inside the budget
}


def test_tiny_run_trains_and_masks():
    (train_state, *_), metrics = jax.jit(ppo.make_train(TINY))(jax.random.key(0))
    m = jax.device_get(metrics)
    assert m["episodes"].shape == (2,) and m["episodes"].sum() >= 4  # 6-step episodes
    # A uniform-ish unmasked policy would pick one of the ~20 invalid actions most of the time.
    assert m["invalid_actions"].tolist() == [0, 0]
    for name in ("mean_return", "value_loss", "entropy"):
        assert np.isfinite(m[name]).all(), name
    assert (m["entropy"] > 0).all() and (m["entropy"] < np.log(28)).all()
    assert int(train_state.step) == 2 * 1 * 2  # updates x epochs x minibatches


def test_masked_policy_gives_masked_actions_zero_probability():
    logits = jax.numpy.zeros((2, 28))
    obs = np.zeros((2, 1573), np.float32)
    obs[0, 1545 + 3] = obs[1, 1545 + 7] = obs[1, 1545 + 20] = 1.0  # the masks
    net = ppo.ActorCritic(28, hidden=8)
    params = net.init(jax.random.key(0), obs)
    logits, _ = net.apply(params, obs)
    probs = np.asarray(jax.nn.softmax(logits))
    assert probs[0, 3] == 1.0 and probs[1, [7, 20]].sum() == pytest.approx(1.0)
    assert np.count_nonzero(probs[1]) == 2
    assert float(ppo.entropy(logits)[0]) == 0.0


def test_bad_budget_is_refused():
    with pytest.raises(ValueError, match="TOTAL_TIMESTEPS"):
        ppo.make_train({**TINY, "TOTAL_TIMESTEPS": 16})
