"""``examples/sb3_maskable_ppo.py``: MaskablePPO trains on the vector env and never takes a masked action.

Runs only with the ``sb3`` dependency group (PyTorch is large, so it is not a default group)::

    uv run --group sb3 pytest tests/examples/test_sb3_maskable_ppo.py
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib", reason="needs the sb3 group: uv run --group sb3 pytest ...")

from stable_baselines3.common.callbacks import BaseCallback

# Three games everywhere: the batched programs test_gymnasium compiles (compilation cache).
N = 3
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sb3_maskable_ppo.py"


def _load_example():
    spec = importlib.util.spec_from_file_location("sb3_maskable_ppo_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


sb3 = _load_example()


class MaskAudit(BaseCallback):
    """Records, for every collected step, whether the taken action was allowed by the mask it saw."""

    def __init__(self):
        super().__init__()
        self.allowed: list[np.ndarray] = []
        self.invalid_flags: list[np.ndarray] = []
        self.ended = 0

    def _on_step(self) -> bool:
        masks, actions = self.locals["action_masks"], self.locals["actions"]
        self.allowed.append(masks[np.arange(len(actions)), actions.reshape(-1)])
        infos = self.locals["infos"]
        self.invalid_flags.append(np.array([bool(i["invalid_action"]) for i in infos]))
        self.ended += sum("terminal_observation" in i for i in infos)
        return True


def test_maskable_ppo_trains_and_never_takes_a_masked_action():
    env = sb3.make_env(num_envs=N, max_episode_steps=12)
    env.seed(0)
    model = sb3.MaskablePPO(
        "MlpPolicy",
        env,
        n_steps=16,
        batch_size=32,
        n_epochs=1,
        seed=0,
        policy_kwargs={"net_arch": [32]},
    )
    audit = MaskAudit()
    model.learn(total_timesteps=2 * 16 * N, callback=audit)
    assert model.num_timesteps == 2 * 16 * N
    allowed = np.concatenate(audit.allowed)
    assert allowed.size == 2 * 16 * N and allowed.all()
    assert not np.concatenate(audit.invalid_flags).any()  # the game agrees: no invalid action
    assert audit.ended >= N  # 12-step episodes: every game ended and was restarted

    eval_env = sb3.make_env(num_envs=N, max_episode_steps=12)
    eval_env.seed(1)
    mean, _ = sb3.evaluate_policy(model, eval_env, n_eval_episodes=4, use_masking=True)
    assert np.isfinite(mean)


def test_adapter_reports_the_ended_step_and_its_last_observation():
    venv = sb3.HackMatrixVectorEnv(N, flatten=True, max_episode_steps=2)
    env = sb3.SB3VecEnv(venv)
    env.seed(3)
    obs = env.reset()
    assert obs.shape == (N, 1545)
    masks = np.stack(env.env_method("action_masks"))
    np.testing.assert_array_equal(masks, venv.action_masks())
    assert env.has_attr("action_masks")
    for _ in range(2):
        actions = np.argmax(env.action_masks(), axis=1)
        obs, reward, done, infos = env.step(actions)
    assert done.all()  # the 2-step limit
    for i, info in enumerate(infos):
        assert info["TimeLimit.truncated"] and info["terminal_observation"].shape == (1545,)
        assert not np.array_equal(info["terminal_observation"], obs[i])  # obs is the new game's
        assert np.sum(info["reward_breakdown"]) == pytest.approx(reward[i], abs=1e-5)
    with pytest.raises(ValueError, match="SAME_STEP"):
        sb3.SB3VecEnv(type("NextStep", (), {"metadata": {"autoreset_mode": "NextStep"}})())
