"""sb3-contrib's ``MaskablePPO`` on ``HackMatrixVectorEnv``: train, then evaluate with masks.

Stable-Baselines3 drives its own ``VecEnv`` API, not Gymnasium's ``VectorEnv``, so
``SB3VecEnv`` below adapts one to the other. The two agree on the autoreset
(Gymnasium's ``SAME_STEP``: a game that ends is restarted within the same step;
SB3 reads the ended game's last observation from ``info["terminal_observation"]``),
so the adapter only reshapes ``info`` into SB3's list of per-env dicts and
answers ``env_method("action_masks")``, which is how ``MaskablePPO`` asks for masks.

Needs the ``sb3`` dependency group (PyTorch, stable-baselines3, sb3-contrib)::

    uv run --group sb3 python examples/sb3_maskable_ppo.py                 # 200k steps
    uv run --group sb3 python examples/sb3_maskable_ppo.py --total-timesteps 20000 --num-envs 16
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode
from hackmatrix_env.gymnasium import HackMatrixVectorEnv
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import VecEnv, VecMonitor


class SB3VecEnv(VecEnv):
    """SB3's ``VecEnv`` over a Gymnasium 1.x vector env in ``SAME_STEP`` autoreset mode.

    ``infos[i]`` holds the step's ``info`` entries of game ``i`` (the ended step's for
    a game that was restarted, from ``info["final_info"]``), plus SB3's
    ``terminal_observation`` and ``TimeLimit.truncated`` when it ended.
    """

    def __init__(self, venv: HackMatrixVectorEnv):
        if venv.metadata.get("autoreset_mode") != AutoresetMode.SAME_STEP:
            raise ValueError("SB3VecEnv needs a vector env with autoreset_mode SAME_STEP")
        self.venv = venv
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)
        self._actions: np.ndarray | None = None

    def reset(self):
        seeds = self._seeds
        seed = None if seeds[0] is None else [int(s) for s in seeds]
        obs, _ = self.venv.reset(seed=seed)
        self._reset_seeds()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions, np.int64).reshape(self.num_envs)

    def step_wait(self):
        obs, reward, terminated, truncated, info = self.venv.step(self._actions)
        done = terminated | truncated
        keys = [k for k in info if not k.startswith("_") and k not in ("final_obs", "final_info")]
        infos: list[dict[str, Any]] = [{k: info[k][i] for k in keys} for i in range(self.num_envs)]
        for i in np.flatnonzero(done):
            final = info["final_info"]
            infos[i].update({k: final[k][i] for k in final if not k.startswith("_")})
            infos[i]["terminal_observation"] = info["final_obs"][i]
            infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
        return obs, reward.astype(np.float32), done, infos

    def close(self) -> None:
        self.venv.close()

    def action_masks(self) -> np.ndarray:
        """bool[N, 28]."""
        return self.venv.action_masks()

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        value = getattr(self.venv, attr_name)  # AttributeError when missing, as SB3 expects
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        raise AttributeError("SB3VecEnv: the games share one vector env; nothing to set")

    def env_method(self, method_name: str, *args, indices=None, **kwargs) -> list[Any]:
        if method_name != "action_masks":
            raise AttributeError(
                f"SB3VecEnv supports env_method('action_masks') only, not {method_name!r}"
            )
        masks = self.venv.action_masks()
        return [masks[i] for i in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]


def make_env(num_envs: int, max_episode_steps: int = 1000) -> VecMonitor:
    """The vector env for SB3, with episode statistics (``VecMonitor``)."""
    return VecMonitor(
        SB3VecEnv(HackMatrixVectorEnv(num_envs, flatten=True, max_episode_steps=max_episode_steps))
    )


def train(
    total_timesteps: int, num_envs: int, n_steps: int = 128, seed: int = 0, **ppo_kwargs
) -> MaskablePPO:
    env = make_env(num_envs)
    env.seed(seed)
    model = MaskablePPO(
        "MlpPolicy",
        env,
        n_steps=n_steps,
        batch_size=min(256, n_steps * num_envs),
        seed=seed,
        verbose=0,
        **ppo_kwargs,
    )
    return model.learn(total_timesteps=total_timesteps)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--total-timesteps", type=int, default=200_000)
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--n-steps", type=int, default=128, help="rollout length per env")
    p.add_argument("--eval-episodes", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    model = train(args.total_timesteps, args.num_envs, args.n_steps, args.seed)
    secs = time.perf_counter() - t0
    print(
        f"trained {model.num_timesteps:,} steps in {secs:.0f} s ({model.num_timesteps / secs:,.0f} steps/s)"
    )
    eval_env = make_env(min(args.num_envs, args.eval_episodes))
    eval_env.seed(args.seed + 10_000)
    mean, std = evaluate_policy(
        model, eval_env, n_eval_episodes=args.eval_episodes, use_masking=True
    )
    print(f"masked evaluation over {args.eval_episodes} episodes: return {mean:.3f} ± {std:.3f}")


if __name__ == "__main__":
    main()
