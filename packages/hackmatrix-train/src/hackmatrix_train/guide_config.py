"""What PPO guided by the search (``guided.py``) accepts from its ``--guide-*`` flags, and the
checks: no JAX here, so ``hm-train`` refuses a bad setting before it sets up devices, and
``guided.learner`` checks the same values when a learner is built without a config."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hackmatrix_train.config import TrainConfig

GUIDE_TEACHERS = ("start", "online")  # the guiding search's network: the run's start, or its own
GUIDE_DIVERGENCES = ("forward", "reverse")  # KL(target || policy), KL(policy || target): guided.py


def check_guide(
    kl: float, envs: int, teacher: str, bonus: float = 0.0, divergence: str = "forward"
) -> None:
    """A ``ValueError`` naming the flag of a bad search-guidance value (``guided.learner``)."""
    if not (math.isfinite(bonus) and bonus >= 0):
        raise ValueError(f"--guide-bonus must be >= 0 (0: the canonical reward), got {bonus}")
    if not (math.isfinite(kl) and kl >= 0):
        raise ValueError(f"--guide-kl must be >= 0 (0: plain PPO), got {kl}")
    if envs < 1:
        raise ValueError(f"--guide-envs must be >= 1, got {envs}")
    if teacher not in GUIDE_TEACHERS:
        raise ValueError(f"--guide-teacher must be one of {GUIDE_TEACHERS}, got {teacher!r}")
    if divergence not in GUIDE_DIVERGENCES:
        raise ValueError(
            f"--guide-divergence must be one of {GUIDE_DIVERGENCES}, got {divergence!r}"
        )


def validate_guide(cfg: TrainConfig) -> None:
    """A ``ValueError`` for a bad search-guidance setting (``guided.py``); ``hm-train`` checks
    them before it sets up devices, since a guided run without its start fails at once."""
    check_guide(
        cfg.guide_kl, cfg.guide_envs, cfg.guide_teacher, cfg.guide_bonus, cfg.guide_divergence
    )
    if cfg.guide_kl > 0 and cfg.guide_teacher == "start" and not cfg.init_params:
        raise ValueError("--guide-teacher start searches with the run's start: give "
                         "--init-params (or --guide-teacher online)")  # fmt: skip
    if cfg.guide_rounds < 1:
        raise ValueError(f"--guide-rounds must be >= 1, got {cfg.guide_rounds}")
    later = cfg.guide_kl_later
    if later is not None and not (math.isfinite(later) and later > 0):
        raise ValueError(f"--guide-kl-later must be > 0 (a later round is guided), got {later}")
    sims = cfg.guide_simulations_later
    if sims is not None and not (isinstance(sims, int) and sims >= 1):
        raise ValueError(f"--guide-simulations-later must be an int >= 1, got {sims!r}")
    if cfg.guide_rounds > 1 and not (cfg.guide_kl > 0 and cfg.guide_teacher == "start"):
        raise ValueError("--guide-rounds passes each round's network on as the next one's "
                         "teacher: it needs --guide-kl > 0 and --guide-teacher start")  # fmt: skip
    if cfg.guide_rounds > 1 and cfg.resume is not None:
        raise ValueError("--guide-rounds continues when its command runs again; --resume "
                         "continues one round (its directory)")  # fmt: skip
