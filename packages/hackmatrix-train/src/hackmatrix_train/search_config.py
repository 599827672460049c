"""How a search plans: ``SearchConfig``, its one set of names and checks (no JAX here).

``search.py`` runs the search; ``TrainConfig.search`` nests one (``SEARCH_FLAGS`` maps
the commands' ``--search-*`` flags to its fields), and ``search.search_config_from_train``
fills in a run's units. This module imports no JAX, so a command's help and first line come
before JAX loads.
"""

from __future__ import annotations

import argparse
import dataclasses
import math

MODES = ("honest", "oracle")
SELECTIONS = ("gumbel", "improved")
TARGET_QS = ("rescaled", "raw")
CHANCES = ("sampled", "common")
# honest mode's default: one determinization per this many simulations (specs/search.md §2)
SIMULATIONS_PER_DETERMINIZATION = 8

# The search's flags, the same in every command, and the ``SearchConfig`` field each sets
# (``hm-eval`` and ``hm-watch`` take the simulations as ``--search N``). A saved config or a
# recipe may give them as flat keys (configs saved before the nesting did): ``config.nest_search``.
SEARCH_FLAGS = {
    "search_simulations": "num_simulations", "search_mode": "mode", "search_depth": "max_depth",
    "search_gumbel_scale": "gumbel_scale", "search_considered": "max_num_considered_actions",
    "search_value_scale": "value_scale", "search_target_value_scale": "target_value_scale",
    "search_selection": "selection", "search_chance": "chance",
    "search_determinizations": "determinizations", "search_track_cryptogs": "track_cryptogs",
}  # fmt: skip
# The test-time tree's program bonus: flags of the commands that play (hm-eval, hm-watch,
# hm-play) alone, a study's switch; a trainer's tree takes its bonus from its learner's own
# flag (``--guide-bonus``), so hm-train has neither.
PLAY_SEARCH_FLAGS = {
    "search_program_bonus": "program_bonus",
    "search_program_bonus_from_stage": "program_bonus_from_stage",
}
# ``SearchConfig`` fields that come from the run, not from the search's settings: its units
# (``search.search_config_from_train``), the target's Q and the tree's program bonus (a
# learner's or a study's choice). A saved config does not carry them in its ``search`` table.
SEARCH_FROM_RUN = frozenset({
    "gamma", "reward_scale", "max_steps_in_episode", "disabled", "program_bonus",
    "program_bonus_skips_undo", "program_bonus_from_stage", "target_q", "away_penalty",
    "program_bonus_kept_at_death",
})  # fmt: skip


def flag(default, help: str, shown: str | None = None, **options):
    """A ``SearchConfig`` field with a ``--search-*`` flag (``SEARCH_FLAGS``): its help
    (the one place its meaning is written), how its default reads where that is not its value
    (``shown``) and argparse options (``cli.common.add_search_flags``)."""
    meta = {"help": help, "shown": shown, "options": options}
    return dataclasses.field(default=default, metadata=meta)


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """How a search plans. Frozen and hashable: it is a static argument of the jitted search.

    ``selection``: ``"gumbel"`` plays mctx's action (Gumbel-Top-k with sequential halving:
    sampled when ``gumbel_scale`` > 0); ``"improved"`` plays the argmax of the improved policy.
    """

    num_simulations: int = flag(8, "simulations per move")
    max_depth: int | None = flag(None, "the tree's maximum depth", "no limit", type=int,
                                 metavar="D")  # fmt: skip
    gumbel_scale: float = flag(1.0, "scale of the root's Gumbel noise, 0: deterministic",
                               metavar="G")  # fmt: skip
    # 2 actions, more visits each, plan best (specs/search.md §1)
    max_num_considered_actions: int = flag(2, "actions the root's Gumbel-Top-k considers, "
                                           "sequential halving among them", metavar="M")  # fmt: skip
    # mctx's completed-Q transform: the root's Q values, rescaled to [0, 1], enter the improved
    # policy's logits times (maxvisit_init + max visits) * value_scale
    value_scale: float = flag(0.1, "weight of the root's rescaled Q in the improved policy, "
                              "mctx's value_scale", metavar="C")  # fmt: skip
    # the value scale of the improved policy given as the trainer's target (``policy_target``)
    target_value_scale: float | None = flag(None, "value scale of the improved-policy target "
                                            "(smaller: closer to the network's policy)",
                                            "the acting search's", type=float)  # fmt: skip
    # the target's Q values: "rescaled" to [0, 1] by the root's min and max (mctx's default,
    # as the acting search), or "raw", in the value's units (a Q difference of d moves the
    # target's logits by (50 + max visits) * scale * d, however small d is)
    target_q: str = "rescaled"
    selection: str = flag("gumbel", "play mctx's Gumbel action or the improved policy's argmax",
                          choices=SELECTIONS)  # fmt: skip
    mode: str = flag("honest", "honest: plan from states re-drawn from the observation; oracle: "
                     "from the true state", choices=MODES)  # fmt: skip
    # "sampled": the key mctx passes for each simulation; "common": a key carried by the node
    # and shared by its children, so a node's actions compare under the same draws
    chance: str = flag("sampled", "the game's draws in the tree: sampled per simulation, or "
                       "common to a node's children", choices=CHANCES)  # fmt: skip
    gamma: float = 0.99
    reward_scale: float = 1.0
    max_steps_in_episode: int = 1000
    disabled: tuple[int, ...] = ()  # action indices out of the policy's mask (e.g. UNDO = 14)
    # the argmax of the averaged improved policies is played (specs/search.md §2)
    determinizations: int | None = flag(None, "honest mode: K searches from independent "
                                        "re-draws of the hidden parts, N/K simulations each, "
                                        "improved policies averaged",
                                        f"one per {SIMULATIONS_PER_DETERMINIZATION} simulations",
                                        type=int, metavar="K")  # fmt: skip
    # a reward per program acquired (UNDO aside) added to the tree's rewards, as the trainer's
    # --program-bonus adds it to the value's targets; 0 (the default): the canonical reward
    # (specs/search.md §2: it buys programs acquired for some wins)
    program_bonus: float = flag(0.0, "a reward per program acquired added to the tree's "
                                "rewards, not to the game's", "0, the canonical reward",
                                metavar="B")  # fmt: skip
    program_bonus_skips_undo: bool = True  # the trainer's --program-terms-skip-undo
    # the trainer's --program-bonus-kept-at-death: False, a death in the tree gives back the
    # bonus of every program the game holds, as the value learned it
    program_bonus_kept_at_death: bool = True
    # the first stage whose acquisitions the tree's bonus counts (1: every stage), to keep the
    # tree canonical where early siphons' spawns end games (specs/search.md §2)
    program_bonus_from_stage: int = flag(1, "the first stage whose programs acquired the "
                                         "tree's bonus counts", "1, every stage",
                                         metavar="S")  # fmt: skip
    # the trainer's --away-penalty, a unit of its value: the tree charges what the value learned
    # (stats.exit_distance_gained)
    away_penalty: float = 0.0
    # where a caller follows the game (hm-eval, hm-watch): ``hidden.track_cryptogs``
    track_cryptogs: bool = flag(False, "honest mode: draw the unseen cryptogs where the game's "
                                "history leaves them possible, not on any dark cell",
                                action=argparse.BooleanOptionalAction)  # fmt: skip

    def __post_init__(self):
        check_search_config(self)


def num_determinizations(cfg: SearchConfig) -> int:
    """K, the determinizations per decision: ``cfg.determinizations``, or when None one per
    ``SIMULATIONS_PER_DETERMINIZATION`` simulations (at least one); 1 in oracle mode."""
    if cfg.mode != "honest":
        return 1
    if cfg.determinizations is None:
        per = SIMULATIONS_PER_DETERMINIZATION
        return max(1, cfg.num_simulations // per) if cfg.num_simulations % per == 0 else 1
    return cfg.determinizations


def check_search_config(cfg: SearchConfig) -> None:
    """A ``ValueError`` naming the first bad field of ``cfg``."""
    if not isinstance(cfg.num_simulations, int) or cfg.num_simulations < 1:
        raise ValueError(f"num_simulations must be an int >= 1, got {cfg.num_simulations!r}")
    if cfg.max_depth is not None and (not isinstance(cfg.max_depth, int) or cfg.max_depth < 1):
        raise ValueError(f"max_depth must be None or an int >= 1, got {cfg.max_depth!r}")
    if not cfg.gumbel_scale >= 0:
        raise ValueError(f"gumbel_scale must be >= 0, got {cfg.gumbel_scale!r}")
    if cfg.max_num_considered_actions < 1:
        raise ValueError("max_num_considered_actions must be >= 1")
    if not cfg.value_scale > 0:
        raise ValueError(f"value_scale must be > 0, got {cfg.value_scale!r}")
    if cfg.target_value_scale is not None and not cfg.target_value_scale > 0:
        raise ValueError(f"target_value_scale must be > 0, got {cfg.target_value_scale!r}")
    if cfg.target_q not in TARGET_QS:
        raise ValueError(f"target_q must be one of {TARGET_QS}, got {cfg.target_q!r}")
    if cfg.selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {SELECTIONS}, got {cfg.selection!r}")
    if cfg.mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {cfg.mode!r}")
    if not isinstance(cfg.track_cryptogs, bool):
        raise ValueError(f"track_cryptogs must be a bool, got {cfg.track_cryptogs!r}")
    if cfg.chance not in CHANCES:
        raise ValueError(f"chance must be one of {CHANCES}, got {cfg.chance!r}")
    if not 0.0 <= cfg.gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {cfg.gamma!r}")
    if not (math.isfinite(cfg.program_bonus) and cfg.program_bonus >= 0):
        raise ValueError(f"program_bonus must be finite and >= 0, got {cfg.program_bonus!r}")
    if cfg.program_bonus_from_stage not in range(1, 9):
        raise ValueError("program_bonus_from_stage must be a stage, 1 to 8, got "
                         f"{cfg.program_bonus_from_stage!r}")  # fmt: skip
    if not (math.isfinite(cfg.away_penalty) and cfg.away_penalty >= 0):
        raise ValueError(f"away_penalty must be finite and >= 0, got {cfg.away_penalty!r}")
    if not cfg.program_bonus_kept_at_death and cfg.program_bonus_from_stage > 1:
        # what the tree paid before that stage is not in the state: nothing to give back by
        raise ValueError("program_bonus_from_stage > 1 needs program_bonus_kept_at_death")
    if not cfg.reward_scale > 0:
        raise ValueError(f"reward_scale must be > 0, got {cfg.reward_scale!r}")
    if cfg.max_steps_in_episode < 1:
        raise ValueError("max_steps_in_episode must be >= 1")
    if cfg.disabled:  # a clear error for a bad index (the action set loads JAX: only then)
        from hackmatrix_env.action_set import allowed_actions

        allowed_actions(cfg.disabled)
    k = num_determinizations(cfg)
    if not isinstance(k, int) or k < 1 or cfg.num_simulations % k:
        raise ValueError(
            f"determinizations must be an int >= 1 that divides num_simulations "
            f"({cfg.num_simulations}), got {k!r}"
        )
