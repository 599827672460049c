"""Training configuration: a frozen dataclass whose defaults are the default recipe, plus ``plan``.

``TrainConfig()`` is what ``uv run hm-train`` trains (specs/train.md §10 says why each value).
Every other recipe is a TOML file of its differences from these defaults (``recipe.py``).
The search's settings are one ``search.SearchConfig`` nested in it (``TrainConfig.search``), with
the same flag names in every command (``SEARCH_FLAGS``); ``search.search_config_from_train``
fills in the run's units.

``plan`` is pure: it turns a user config (and the set of flags given explicitly) into the config
actually trained, with the auto-scaling of minibatches/epochs for large batches (specs/train.md §5).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from dataclasses import dataclass, field

from hackmatrix_env.constants import FIRST_PROGRAM, HISTORY_DEPTH, PROGRAM_NAMES

from hackmatrix_train.guide_config import GUIDE_DIVERGENCES, GUIDE_TEACHERS, validate_guide
from hackmatrix_train.saved_configs import saved_config
from hackmatrix_train.search_config import (
    SEARCH_FLAGS,
    SEARCH_FROM_RUN,
    SearchConfig,
)

# --auto-tune's envs per device (the measured speeds that chose them: specs/train.md §5, §10)
AUTO_TUNE_ENVS = {"cpu": 256, "accelerator": 16384}
TARGET_MINIBATCH = 8192  # auto-scaling keeps num_envs * num_steps / num_minibatches near this
MIN_EPOCHS = 2  # auto-scaling never lowers update_epochs below this
NETWORKS = ("mlp", "grid", "grid-twin", "grid-hl")

# Fields that name, log or checkpoint a run and change nothing it learns: --resume may change
# them (run.RESUME_MUTABLE), and runs that differ only in these, their names and their seeds are
# runs of one config (learnbench.BOOKKEEPING_FIELDS).
RUN_BOOKKEEPING = frozenset({
    "log_interval", "no_wandb", "project", "entity", "save_interval", "save_interval_minutes",
    "checkpoint_dir", "keep_checkpoints", "no_artifact", "resume", "rewind", "run_suffix",
})  # fmt: skip


# The help groups of hm-train's flags (cli.train.GROUPS titles them; LENGTH: one or the other)
MAIN, LENGTH, SEARCH, LOGS, KNOBS = "main", "length", "search", "logs", "knobs"
GUIDE = "guide"  # PPO guided by the search (guided.py)


def flag(default, help: str, group: str = MAIN, **options):
    """A ``TrainConfig`` field that is an ``hm-train`` flag: its default, its help (the one place
    its meaning is written), its help group and argparse options (``cli.train.build_parser``;
    ``type="count"`` reads ``10M``, ``5e6``, ...)."""
    return field(default=default, metadata={"help": help, "group": group, "options": options})


SWITCH, TOGGLE = {"action": "store_true"}, {"action": argparse.BooleanOptionalAction}


@dataclass(frozen=True)
class TrainConfig:
    """Every hyperparameter of a run. Field names are the CLI flags with ``-`` -> ``_``; each
    field's help is its flag's (``flag``).

    The field defaults are the default recipe, HackMatrix's (``hm-train`` with no flag): the grid
    encoder, a program bonus and UNDO out of the agent's mask, and a time budget in place of a
    fixed length (set ``time_budget=None`` for ``total_timesteps``). Plain PPO, for any gymnax
    env, is the shipped recipe ``reference`` (``recipe.py``).
    """

    seed: int = flag(0, "the run's random seed (params, envs, actions)")
    # rollout / batch
    num_envs: int = flag(256, "parallel environments")
    num_steps: int = flag(32, "steps per env per rollout")
    total_timesteps: int = flag(25_000_000, "env steps to train (10M, 5e6, ...); given, it "
                                "replaces the time budget (default: as many as fit --time-budget)",
                                LENGTH, type="count")  # fmt: skip
    # set: the trainer times its compiled chunk and replaces total_timesteps with what fits
    time_budget: float | None = flag(50.0, "minutes for compiling and training: time the "
                                     "compiled update, then train as many steps as fit (the final "
                                     "evaluation follows)", LENGTH, type=float)  # fmt: skip
    auto_tune: bool = flag(False, "pick num_envs for the hardware", **SWITCH)
    # optimisation
    lr: float = flag(1e-3, "Adam learning rate")
    anneal_lr: bool = flag(True, "linear LR decay to 0", **TOGGLE)
    ent_coef: float = flag(0.02, "entropy coefficient (start value when annealed)")
    ent_coef_end: float | None = flag(0.002, "anneal the entropy coefficient linearly to this "
                                      "(none: constant)", KNOBS, type=float)  # fmt: skip
    vf_coef: float = flag(0.125, "value-loss weight")
    gamma: float = flag(0.99, "discount factor", KNOBS)
    gae_lambda: float = flag(0.95, "GAE's lambda (bias-variance of the advantages)", KNOBS)
    num_minibatches: int = flag(4, "minibatches per epoch (auto-scaled for large batches)", KNOBS)
    update_epochs: int = flag(4, "passes over each rollout per update", KNOBS)
    clip_eps: float = flag(0.2, "PPO's clip range of the probability ratio", KNOBS)
    vf_clip_eps: float | None = flag(None, "clip range of the value loss around the rollout's "
                                     "value, in return units (0: no value clipping; default: "
                                     "--clip-eps)", KNOBS, type=float)  # fmt: skip
    max_grad_norm: float = flag(0.5, "global gradient-norm clip", KNOBS)
    value_target_tau: float = flag(0.0, "a target network: GAE reads the value of a Polyak "
                                   "average of the params, moved this far toward them after "
                                   "every gradient step (0: off, the rollout's own value; 1: "
                                   "the same as off)", KNOBS)  # fmt: skip
    # exploration floor on the siphon action and on the program actions taken together
    # (ppo.floor_penalty); movement is learned first, then the floor adds siphons and programs
    explore_floor: float = flag(0.003, "exploration floor: a loss penalty keeps P(siphon) and "
                                "P(any program) >= this wherever they are valid (0 = off; "
                                "specs/train.md §5)", KNOBS)  # fmt: skip
    explore_floor_end: float | None = flag(0.001, "anneal the floor linearly to this", KNOBS,
                                           type=float)  # fmt: skip
    explore_floor_start: float = flag(0.0, "fraction of the run before the floor switches on "
                                      "(then annealed over the rest)", KNOBS)  # fmt: skip
    explore_coef: float = flag(0.1, "weight of the exploration-floor penalty", KNOBS)
    # a ramp, so the penalty does not hit the policy all at once
    explore_floor_ramp: float = flag(0.0, "fraction of the run over which the penalty's weight "
                                     "rises from 0 to --explore-coef after the switch-on (0: at "
                                     "once)", KNOBS)  # fmt: skip
    reward_scale: float = flag(1.0, "multiply rewards by this inside the loss", KNOBS)
    # the shaping terms live in the loss only: the game's reward, and every logged or evaluated
    # return, stay canonical (specs/train.md §5)
    program_potential: float = flag(0.0, "potential-based shaping inside the loss: phi = this x "
                                    "programs owned (0: off); returns and evaluations stay the "
                                    "game's reward", KNOBS)  # fmt: skip
    # unlike the potential, the bonus is kept when the episode ends: it pays for ending with
    # programs
    program_bonus: float = flag(5.0, "intrinsic reward inside the loss: this x each program "
                                "acquired (0: off; kept at death by default); returns and "
                                "evaluations stay the game's reward", KNOBS)  # fmt: skip
    # kept, a siphon that fetches a program pays the bonus at once, whatever its spawns do after:
    # the stage-1 death costs the game's reward nothing (interface §4.4), so the bonus can buy
    # the early deaths; given back, it pays only the games that live (specs/train.md §5)
    program_bonus_kept_at_death: bool = flag(True, "a game that dies keeps its program bonus; "
                                             "--no-program-bonus-kept-at-death gives it back "
                                             "at the death, in the loss and the run's trees",
                                             KNOBS, **TOGGLE)  # fmt: skip
    # a bonus that keeps programs in play early can hand the policy back to the game's reward
    program_bonus_end: float | None = flag(None, "move the program bonus linearly from "
                                           "--program-bonus to this over the run (default: "
                                           "constant)", KNOBS, type=float)  # fmt: skip
    # UNDO's cross-stage quirk (rules §11.4) is paid for by the game's reward already
    program_terms_skip_undo: bool = flag(True, "the program potential and bonus count every "
                                         "program but UNDO", KNOBS, **TOGGLE)  # fmt: skip
    # the game's distance shaping pays for steps toward the exit and charges nothing for steps
    # away, so a walk away and back pays (stats.exit_distance_gained); 1 closes that loop
    away_penalty: float = flag(0.0, "charge this x the game's distance coefficient (0.05) per "
                               "step of distance gained away from the exit, inside the loss and "
                               "the run's searches (1: the game's distance shaping becomes a "
                               "potential's difference, no walk back and forth pays; 0: off); "
                               "returns and evaluations stay the game's reward", KNOBS)  # fmt: skip
    # by name (hackmatrix_env.adapters.DisabledActionsWrapper)
    disabled_programs: tuple[str, ...] = flag(("undo",), "programs taken out of the agent's "
                                              "action mask in training and evaluation, e.g. "
                                              "'undo' (an ablation of the agent; the game is "
                                              "unchanged); the flag alone: none", KNOBS, type=str,
                                              nargs="*", metavar="NAME")  # fmt: skip
    # PPO guided by the search (guided.py, specs/train.md §11): the search of --search-* on
    # the first guide_envs games of each device, a KL term toward its improved policy
    guide_kl: float = flag(0.0, "PPO guided by the search: add this x a KL between the search's "
                           "improved policy and the policy (--guide-divergence) to the loss on "
                           "the searched games' states (0: plain PPO); the search is --search-*",
                           GUIDE)  # fmt: skip
    guide_divergence: str = flag("forward", "the pull's KL: forward, KL(target || policy), fits "
                                 "the mean of the targets of states the network cannot tell "
                                 "apart; reverse, KL(policy || target), their geometric mean, "
                                 "as sharp as the targets", GUIDE,
                                 choices=GUIDE_DIVERGENCES)  # fmt: skip
    guide_envs: int = flag(32, "games searched at every step on each device", GUIDE)
    guide_teacher: str = flag("start", "the search's network: start (the run's --init-params, "
                              "frozen) or online (the network being trained)", GUIDE,
                              choices=GUIDE_TEACHERS)  # fmt: skip
    guide_bonus: float = flag(0.0, "the search's tree adds this per program acquired (UNDO "
                              "aside, as --program-terms-skip-undo) to its rewards: the bonus "
                              "its network's value learned (0: the canonical reward)",
                              GUIDE)  # fmt: skip
    guide_rounds: int = flag(1, "guided runs of this length, each from the last one's network "
                             "(its teacher too), in <run>-round<k>; rerun to continue", GUIDE)  # fmt: skip
    guide_kl_later: float | None = flag(None, "the KL weight of rounds 2 and later, taught by "
                                        "the last round's network (default: --guide-kl's)",
                                        GUIDE, type=float)  # fmt: skip
    guide_simulations_later: int | None = flag(None, "the teacher's simulations in rounds 2 "
                                               "and later, a tree per 8 (default: the "
                                               "--search-* flags')", GUIDE, type=int)  # fmt: skip
    # network
    network: str = flag("grid", "mlp (flattened obs), grid (conv over 6x6 cells), "
                        "grid-twin (grid's layers twice: the critic's own, none shared) or "
                        "grid-hl (grid, its value a histogram over returns fitted by "
                        "cross-entropy: HL-Gauss)", choices=NETWORKS)  # fmt: skip
    hidden_dim: int = flag(256, "width of the network's hidden layers", KNOBS)
    num_layers: int = flag(2, "hidden layers of the network's trunk", KNOBS)
    res_blocks: int = flag(0, "residual 3x3 blocks after a grid network's convolution; a "
                           "warm start from fewer blocks adds them with its function kept",
                           KNOBS)  # fmt: skip
    random_views: bool = flag(False, "train through the board's 8 symmetries: the network sees "
                              "each state in the view its hash picks", KNOBS, **SWITCH)  # fmt: skip
    # env
    max_steps_in_episode: int = flag(1000, "truncation limit (EnvParams)", KNOBS)
    history_depth: int = flag(HISTORY_DEPTH, "UNDO snapshots kept (EnvParams.history_depth); "
                              "raise it for UNDO-heavy policies, see "
                              "stats/history_overflow_frac", KNOBS)  # fmt: skip
    # how hm-eval, hm-watch and hm-play search with the run's policy (flags: SEARCH_FLAGS,
    # help: search_config); the units are the run's
    search: SearchConfig = field(default_factory=SearchConfig)
    # logging / checkpoints
    log_interval: int = flag(10, "updates per jitted chunk / log line", LOGS)
    no_wandb: bool = flag(False, "disable wandb", **SWITCH)
    project: str = flag("hackmatrix", "wandb project", LOGS)
    entity: str | None = flag(None, "wandb entity (default: wandb's)", LOGS)
    run_name: str | None = flag(None, "run name (default: derived from the config)", LOGS)
    run_suffix: str | None = flag(None, "appended to the run name", LOGS)
    resume: str | None = flag(None, "checkpoint file or run directory to continue")
    init_params: str | None = flag(None, "warm start: start from the params of this checkpoint "
                                   "(file, run dir or params export) with a fresh optimizer, "
                                   "schedules and envs; the network must match")  # fmt: skip
    rewind: int | None = flag(None, "with --resume DIR: the latest checkpoint <= this update",
                              LOGS, type=int)  # fmt: skip
    save_interval: int | None = flag(None, "also checkpoint every N updates (default: by time "
                                     "only)", LOGS, type=int)  # fmt: skip
    save_interval_minutes: float = flag(10.0, "checkpoint every N minutes", LOGS)
    checkpoint_dir: str = flag("checkpoints", "root of run directories")
    keep_checkpoints: int = flag(5, "full checkpoints kept per run", LOGS)
    no_artifact: bool = flag(False, "do not log the final params as a wandb artifact", LOGS,
                             **SWITCH)  # fmt: skip
    # end-of-run evaluation (evaluate.py)
    final_eval_episodes: int = flag(256, "greedy episodes from stage 1 evaluated at the end of "
                                    "the run (0 = skip)")  # fmt: skip
    final_eval_seed: int = flag(0, "key of the end-of-run evaluation (fixed: runs compare)",
                                KNOBS)  # fmt: skip
    # bookkeeping of the plan (not flags)
    notes: tuple[str, ...] = field(default=(), compare=False)

    # ---- derived sizes ----------------------------------------------------
    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def minibatch_size(self) -> int:
        return self.batch_size // self.num_minibatches

    @property
    def num_updates(self) -> int:
        return self.total_timesteps // self.batch_size

    def replace(self, **kw) -> TrainConfig:
        """A copy with fields replaced; a search flag's name (``SEARCH_FLAGS``) sets the
        nested ``search`` field (a ``ValueError`` names the flag of a bad value)."""
        flat = {k: kw.pop(k) for k in list(kw) if k in SEARCH_FLAGS}
        if flat:
            kw["search"] = replace_search(kw.get("search", self.search), flat)
        return dataclasses.replace(self, **kw)

    def setting(self, name: str):
        """The value of a field, or of a search flag (``SEARCH_FLAGS``) in ``search``."""
        return (
            getattr(self.search, SEARCH_FLAGS[name])
            if name in SEARCH_FLAGS
            else getattr(self, name)
        )

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["notes"] = list(self.notes)
        d["disabled_programs"] = list(self.disabled_programs)
        d["search"] = {k: v for k, v in d["search"].items() if k not in SEARCH_FROM_RUN}
        return d

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        """The config of a saved dict; ``saved_configs.REMOVED_FIELDS`` are dropped, unknown keys refused,
        and a field the dict lacks gets ``SAVED_DEFAULTS``' value (what the run used). Flat
        ``search_*`` keys (configs saved before ``search`` was nested) move into ``search``."""
        d = saved_config(nest_search(d), {f.name for f in dataclasses.fields(cls)})
        d["notes"] = tuple(d.get("notes", ()))
        d["disabled_programs"] = tuple(d.get("disabled_programs", ()))
        d["search"] = replace_search(SearchConfig(), d.get("search", {}), flags=False)
        return cls(**d)


def nest_search(d: dict) -> dict:
    """``d`` with its flat search keys (``SEARCH_FLAGS``' names) moved into its ``search``
    table (``SearchConfig`` field names); a key given both ways is a ``ValueError``."""
    flat = {SEARCH_FLAGS[k]: v for k, v in d.items() if k in SEARCH_FLAGS}
    if not flat:
        return d
    nested = dict(d.get("search") or {})
    both = sorted(set(flat) & set(nested))
    if both:
        raise ValueError(f"search settings given twice (flat and in [search]): {both}")
    rest = {k: v for k, v in d.items() if k not in SEARCH_FLAGS}
    return {**rest, "search": {**nested, **flat}}


def replace_search(search: SearchConfig, values: dict, flags: bool = True) -> SearchConfig:
    """``search`` with ``values`` set: keyed by flag name (``SEARCH_FLAGS``), or with
    ``flags=False`` by ``SearchConfig`` field. An unknown key, a field that comes from the run
    (``SEARCH_FROM_RUN``) or a bad value is a ``ValueError`` naming it."""
    names = {v: k for k, v in SEARCH_FLAGS.items()}
    fields = dict(values)
    if flags:
        unknown = sorted(set(fields) - set(SEARCH_FLAGS))
        fields = {SEARCH_FLAGS[k]: v for k, v in fields.items() if k in SEARCH_FLAGS}
    else:
        unknown = sorted(set(fields) - set(names))
    if unknown:
        raise ValueError(f"unknown search settings: {unknown}; choose from {sorted(names)}")
    if "disabled" in fields:
        fields["disabled"] = tuple(fields["disabled"])
    try:
        return dataclasses.replace(search, **fields)
    except ValueError as e:  # SearchConfig's check names the field: name the flag too
        field_name = str(e).split(" ", 1)[0]
        flag = names.get(field_name)
        raise ValueError(f"--{flag.replace('_', '-')}: {e}" if flag else str(e)) from None


def validate(cfg: TrainConfig, num_devices: int = 1) -> None:
    """Raise ValueError with a clear message for any inconsistent setting."""
    pos = (
        "num_envs",
        "num_steps",
        "num_minibatches",
        "update_epochs",
        "hidden_dim",
        "log_interval",
    )
    for name in pos:
        if getattr(cfg, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(cfg, name)}")
    if cfg.num_layers < 0:
        raise ValueError("--num-layers must be >= 0")
    if cfg.res_blocks < 0:
        raise ValueError(f"--res-blocks must be >= 0, got {cfg.res_blocks}")
    if cfg.res_blocks and cfg.network == "mlp":
        raise ValueError("--res-blocks needs a grid network (grid, grid-twin or grid-hl), not mlp")
    if cfg.network not in NETWORKS:
        raise ValueError(f"--network must be one of {NETWORKS}, got {cfg.network!r}")
    if cfg.num_envs % num_devices:
        raise ValueError(f"--num-envs {cfg.num_envs} is not divisible by {num_devices} devices")
    per_dev = cfg.batch_size // num_devices
    if per_dev % cfg.num_minibatches:
        raise ValueError(
            f"per-device batch {per_dev} (num_envs*num_steps/devices) is not divisible by "
            f"--num-minibatches {cfg.num_minibatches}"
        )
    if cfg.num_updates < 1:
        raise ValueError(
            f"--total-timesteps {cfg.total_timesteps} is smaller than one batch "
            f"({cfg.num_envs} envs x {cfg.num_steps} steps = {cfg.batch_size})"
        )
    if not 0.0 <= cfg.gamma <= 1.0 or not 0.0 <= cfg.gae_lambda <= 1.0:
        raise ValueError("--gamma and --gae-lambda must lie in [0, 1]")
    if cfg.lr <= 0 or cfg.clip_eps <= 0 or cfg.max_grad_norm <= 0:
        raise ValueError("--lr, --clip-eps and --max-grad-norm must be > 0")
    if cfg.vf_clip_eps is not None and not (
        math.isfinite(cfg.vf_clip_eps) and cfg.vf_clip_eps >= 0
    ):
        raise ValueError(
            f"--vf-clip-eps must be >= 0 (0: no value clipping), got {cfg.vf_clip_eps}"
        )
    if not (math.isfinite(cfg.value_target_tau) and 0.0 <= cfg.value_target_tau <= 1.0):
        raise ValueError(f"--value-target-tau must lie in [0, 1] (0: off), "
                         f"got {cfg.value_target_tau}")  # fmt: skip
    if cfg.network == "grid-hl" and cfg.vf_clip_eps is not None:
        raise ValueError("--vf-clip-eps clips a scalar value's squared error: grid-hl's "
                         "histogram is fitted by cross-entropy, never clipped")  # fmt: skip
    if cfg.network == "grid-hl" and cfg.reward_scale != 1.0:
        raise ValueError("grid-hl's histogram spans returns in the canonical reward's units: "
                         "it takes --reward-scale 1 only")  # fmt: skip
    for name in ("explore_floor", "explore_floor_end"):
        value = getattr(cfg, name)
        if value is not None and not 0.0 <= value < 1.0:
            raise ValueError(f"--{name.replace('_', '-')} must lie in [0, 1), got {value}")
    if not 0.0 <= cfg.explore_floor_start < 1.0:
        raise ValueError(
            f"--explore-floor-start must lie in [0, 1) (a fraction of the run), "
            f"got {cfg.explore_floor_start}"
        )
    if not 0.0 <= cfg.explore_floor_ramp <= 1.0 - cfg.explore_floor_start:
        raise ValueError(
            f"--explore-floor-ramp must lie in [0, 1 - --explore-floor-start] (a fraction of "
            f"the run after the switch-on), got {cfg.explore_floor_ramp}"
        )
    if cfg.final_eval_episodes < 0:
        raise ValueError(f"--final-eval-episodes must be >= 0, got {cfg.final_eval_episodes}")
    if cfg.explore_coef < 0:
        raise ValueError(f"--explore-coef must be >= 0, got {cfg.explore_coef}")
    if cfg.explore_floor_end is not None and cfg.explore_floor == 0:
        raise ValueError("--explore-floor-end needs --explore-floor > 0 (the start value)")
    if cfg.explore_floor_ramp > 0 and cfg.explore_floor == 0:
        raise ValueError("--explore-floor-ramp needs --explore-floor > 0")
    if cfg.time_budget is not None and not (math.isfinite(cfg.time_budget) and cfg.time_budget > 0):
        raise ValueError(f"--time-budget must be > 0 minutes, got {cfg.time_budget}")
    if cfg.program_potential < 0:
        raise ValueError(f"--program-potential must be >= 0, got {cfg.program_potential}")
    if cfg.program_bonus < 0:
        raise ValueError(f"--program-bonus must be >= 0, got {cfg.program_bonus}")
    if not (math.isfinite(cfg.away_penalty) and cfg.away_penalty >= 0):
        raise ValueError(f"--away-penalty must be >= 0 (0: off), got {cfg.away_penalty}")
    if cfg.program_bonus_end is not None:
        if not (math.isfinite(cfg.program_bonus_end) and cfg.program_bonus_end >= 0):
            raise ValueError(f"--program-bonus-end must be >= 0, got {cfg.program_bonus_end}")
        if cfg.program_bonus == 0 and cfg.program_bonus_end == 0:
            raise ValueError("--program-bonus-end changes nothing without --program-bonus")
    if not cfg.program_bonus_kept_at_death and not has_program_bonus(cfg):
        raise ValueError("--no-program-bonus-kept-at-death changes nothing without --program-bonus")
    if cfg.program_terms_skip_undo and not has_program_term(cfg):
        raise ValueError(
            "--program-terms-skip-undo changes nothing without --program-bonus or "
            "--program-potential"
        )
    validate_guide(cfg)
    if cfg.history_depth < 1:
        raise ValueError(f"--history-depth must be >= 1, got {cfg.history_depth}")
    disabled_actions(cfg)  # a clear error for an unknown program name


def disabled_actions(cfg: TrainConfig) -> tuple[int, ...]:
    """The action indices of ``cfg.disabled_programs`` (HackMatrix's), sorted."""
    unknown = sorted(set(cfg.disabled_programs) - set(PROGRAM_NAMES))
    if unknown:
        raise ValueError(
            f"--disabled-programs: unknown program names {unknown}; choose from {list(PROGRAM_NAMES)}"
        )
    return tuple(sorted(FIRST_PROGRAM + PROGRAM_NAMES.index(n) for n in set(cfg.disabled_programs)))


def network_layout(cfg: TrainConfig) -> tuple[str, int]:
    """The network's kind and blocks: another layout's start is grown (``adapt_params``)."""
    return cfg.network, cfg.res_blocks


def has_program_bonus(cfg: TrainConfig) -> bool:
    """Whether the program bonus is ever non-zero during the run (a static choice)."""
    return cfg.program_bonus > 0 or (cfg.program_bonus_end or 0.0) > 0


def has_program_term(cfg: TrainConfig) -> bool:
    """Whether the run has a program term (bonus or potential) for ``--program-terms-skip-undo``
    to act on."""
    return has_program_bonus(cfg) or cfg.program_potential > 0


def plan(
    cfg: TrainConfig,
    explicit: frozenset[str] = frozenset(),
    num_devices: int = 1,
    platform: str = "cpu",
) -> TrainConfig:
    """Return the config to train with: auto-tune and auto-scaling applied, notes filled in.

    * ``--auto-tune`` picks ``num_envs`` for the hardware (``AUTO_TUNE_ENVS`` per device)
      unless ``--num-envs`` was given.
    * Auto-scaling (always on): when a minibatch would exceed ``TARGET_MINIBATCH``, raise
      ``num_minibatches`` to the smallest divisor of the batch giving minibatches <= target, and
      lower ``update_epochs`` so the number of gradient steps per update stays near the default
      (epochs * minibatches), never below ``MIN_EPOCHS``.
    Flags named in ``explicit`` (dest names) are never changed.
    """
    notes: list[str] = []
    if cfg.auto_tune and "num_envs" not in explicit:
        per = AUTO_TUNE_ENVS["cpu" if platform == "cpu" else "accelerator"]
        if cfg.num_envs != per * num_devices:
            notes.append(f"auto-tune: num_envs {cfg.num_envs} -> {per * num_devices} ({platform})")
            cfg = cfg.replace(num_envs=per * num_devices)
    batch = cfg.batch_size
    per_dev_batch = batch // max(num_devices, 1)
    if "num_minibatches" not in explicit and batch // cfg.num_minibatches > TARGET_MINIBATCH:
        want = math.ceil(batch / TARGET_MINIBATCH)
        mb = next(m for m in range(want, per_dev_batch + 1) if per_dev_batch % m == 0)
        notes.append(
            f"auto-scale: num_minibatches {cfg.num_minibatches} -> {mb} (minibatch {batch // mb})"
        )
        if "update_epochs" not in explicit:
            steps = cfg.update_epochs * cfg.num_minibatches
            ep = max(MIN_EPOCHS, min(cfg.update_epochs, round(steps / mb)))
            if ep != cfg.update_epochs:
                notes.append(f"auto-scale: update_epochs {cfg.update_epochs} -> {ep}")
            cfg = cfg.replace(update_epochs=ep)
        cfg = cfg.replace(num_minibatches=mb)
    return cfg.replace(notes=tuple(notes))


def describe_plan(cfg: TrainConfig, num_devices: int = 1) -> str:
    """A few human lines: batch geometry, updates, gradient steps."""
    lines = list(cfg.notes)
    length = (
        f"{cfg.num_updates} updates = {cfg.num_updates * cfg.batch_size:,} env steps"
        if cfg.time_budget is None
        else f"as many updates as fit --time-budget {cfg.time_budget:g} min"
    )
    lines.append(
        f"plan: {cfg.num_envs} envs x {cfg.num_steps} steps = batch {cfg.batch_size} "
        f"on {num_devices} device(s); {cfg.num_minibatches} minibatches of "
        f"{cfg.batch_size // cfg.num_minibatches}, {cfg.update_epochs} epochs; "
        f"{length}; network={cfg.network} hidden={cfg.hidden_dim}x{cfg.num_layers}"
        + (f" res_blocks={cfg.res_blocks}" if cfg.res_blocks else "")
    )
    if cfg.disabled_programs:
        names = ", ".join(cfg.disabled_programs)
        lines.append(f"disabled programs (out of the agent's mask, the game unchanged): {names}")
    return "\n".join(lines)
