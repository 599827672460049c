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

import dataclasses
import math
import warnings
from dataclasses import dataclass, field

from hackmatrix_env.constants import FIRST_PROGRAM, HISTORY_DEPTH, PROGRAM_NAMES

from hackmatrix_train.search_config import SearchConfig

# --auto-tune's envs per device (the measured speeds that chose them: specs/train.md §5, §10)
AUTO_TUNE_ENVS = {"cpu": 256, "accelerator": 16384}
TARGET_MINIBATCH = 8192  # auto-scaling keeps num_envs * num_steps / num_minibatches near this
MIN_EPOCHS = 2  # auto-scaling never lowers update_epochs below this
NETWORKS = ("mlp", "grid")

# Fields that name, log or checkpoint a run and change nothing it learns: --resume may change
# them (run.RESUME_MUTABLE), and runs that differ only in these, their names and their seeds are
# runs of one config (learnbench.BOOKKEEPING_FIELDS).
RUN_BOOKKEEPING = frozenset({
    "log_interval", "no_wandb", "project", "entity", "save_interval", "save_interval_minutes",
    "checkpoint_dir", "keep_checkpoints", "no_artifact", "resume", "rewind", "run_suffix",
})  # fmt: skip

# Fields of earlier configs, with the value that meant "off": the start-stage and start-kit
# training curricula, dropped for measuring no benefit (experiments/findings.md). Checkpoints
# saved before still carry them; ``TrainConfig.from_dict`` drops them (with a warning when
# the run used one) so those checkpoints still load, evaluate and resume on the bare game.
REMOVED_FIELDS: dict[str, object] = {
    "start_stage": 1,
    "start_stage_max": None,
    "kit_siphons": 0,
    "kit_credits": 0,
    "kit_energy": 0,
    "kit_programs": 0,
    "kit_prob": 1.0,
    "kit_pool": None,
}


# The value a saved config lacking the field was trained with: the field's default before the
# defaults became the default recipe (fields added since then were saved by every run), so an
# older checkpoint loads as the run it was (``TrainConfig.from_dict``, ``saved_config``).
SAVED_DEFAULTS: dict[str, object] = {
    "num_steps": 128,
    "total_timesteps": 10_000_000,
    "time_budget": None,
    "lr": 2.5e-4,
    "anneal_lr": False,
    "vf_coef": 0.5,
    "ent_coef": 0.15,
    "ent_coef_end": None,
    "explore_floor": 0.0,
    "explore_floor_end": None,
    "program_bonus": 0.0,
    "program_terms_skip_undo": False,
    "disabled_programs": (),
    "network": "mlp",
}


ALGORITHMS = ("ppo", "search")
SEARCH_TARGETS = ("improved", "raw", "overrides", "action")

# The search's flags, the same in every command, and the ``SearchConfig`` field each sets
# (``hm-eval`` and ``hm-watch`` take the simulations as ``--search N``). A saved config or a
# recipe may give them as flat keys (configs saved before the nesting did): ``nest_search``.
SEARCH_FLAGS = {
    "search_simulations": "num_simulations",
    "search_mode": "mode",
    "search_depth": "max_depth",
    "search_gumbel_scale": "gumbel_scale",
    "search_considered": "max_num_considered_actions",
    "search_value_scale": "value_scale",
    "search_target_value_scale": "target_value_scale",
    "search_selection": "selection",
    "search_chance": "chance",
    "search_determinizations": "determinizations",
    "search_track_cryptogs": "track_cryptogs",
}
# ``SearchConfig`` fields that come from the run, not from the search's settings: its units
# (``search_config_from_train``) and the target's Q (from ``search_target``). A saved config
# does not carry them in its ``search`` table.
SEARCH_FROM_RUN = frozenset({
    "gamma", "reward_scale", "max_steps_in_episode", "disabled", "program_bonus",
    "program_bonus_skips_undo", "target_q",
})  # fmt: skip


@dataclass(frozen=True)
class TrainConfig:
    """Every hyperparameter of a run. Field names are the CLI flags with ``-`` -> ``_``.

    The field defaults are the default recipe, HackMatrix's (``hm-train`` with no flag): the grid
    encoder, a program bonus and UNDO out of the agent's mask, and a time budget in place of a
    fixed length (set ``time_budget=None`` for ``total_timesteps``). Plain PPO, for any gymnax
    env, is the shipped recipe ``reference`` (``recipe.py``).
    """

    # rollout / batch
    num_envs: int = 256
    num_steps: int = 32
    total_timesteps: int = 25_000_000  # the length when time_budget is None
    # minutes for compiling and training: when set, the trainer times its compiled chunk and
    # replaces total_timesteps with what fits (cli.plan_time_budget); None: total_timesteps
    time_budget: float | None = 50.0
    # optimisation
    lr: float = 1e-3
    anneal_lr: bool = True  # linear LR decay to 0 over the run
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    clip_eps: float = 0.2
    # the value loss's clip range around the rollout's value, in return units: None = the
    # policy's clip_eps (the PPO2 convention), 0 = no value clipping (ppo.value_loss)
    vf_clip_eps: float | None = None
    vf_coef: float = 0.125
    ent_coef: float = 0.02
    ent_coef_end: float | None = 0.002  # None: constant; else linear from ent_coef to this
    max_grad_norm: float = 0.5
    # exploration floor on the siphon action and on the program actions taken together
    # (ppo.floor_penalty): 0 = off; else a penalty keeps each group's probability >= this
    explore_floor: float = 0.003
    explore_floor_end: float | None = 0.001  # None: constant; else linear from explore_floor
    # fraction of the run before the floor switches on: movement is learned first, then the
    # floor (annealed from explore_floor to explore_floor_end over the rest) adds siphons and
    # programs (specs/train.md §5)
    explore_floor_start: float = 0.0
    explore_coef: float = 0.1  # weight of the floor penalty in the loss
    # fraction of the run over which that weight rises linearly from 0 to explore_coef after
    # the switch-on (0: a step), so the penalty does not hit the policy all at once
    explore_floor_ramp: float = 0.0
    reward_scale: float = 1.0  # rewards are multiplied by this inside the loss only
    # potential-based shaping in the loss only: phi = this x programs owned (specs/train.md §5);
    # 0 = off. The game's reward and every logged or evaluated return stay canonical.
    program_potential: float = 0.0
    # intrinsic reward in the loss only: this x the change in programs owned, kept when the
    # episode ends (unlike the potential), so it pays for ending with programs; 0 = off
    program_bonus: float = 5.0
    # None: the bonus stays at program_bonus; else it moves linearly to this over the run, so
    # a bonus that keeps programs in play early can hand the policy back to the game's reward
    program_bonus_end: float | None = None
    # both program terms count every program but UNDO, whose cross-stage quirk (rules §11.4)
    # the game's reward already pays for
    program_terms_skip_undo: bool = True
    # programs taken out of the agent's action mask in training and in every evaluation
    # (hackmatrix_env.adapters.DisabledActionsWrapper), by name, e.g. ("undo",): an ablation
    # of the agent, the game is unchanged
    disabled_programs: tuple[str, ...] = ("undo",)
    # network
    network: str = "grid"
    hidden_dim: int = 256
    num_layers: int = 2
    # env
    max_steps_in_episode: int = 1000
    history_depth: int = HISTORY_DEPTH  # UNDO ring size (EnvParams.history_depth, static)
    # the algorithm: "ppo", or "search" (Gumbel AlphaZero with the game as model: the search
    # acts, the network learns its improved policy and lambda-returns; specs/search.md)
    algo: str = "ppo"
    # how the search acts (algo "search") and how hm-eval, hm-watch and hm-play search with the
    # run's policy: simulations, mode, depth, ... (flags: SEARCH_FLAGS); the units are the run's
    search: SearchConfig = field(default_factory=SearchConfig)
    # the policy target: "improved" (mctx's completed-Q improved policy), "raw" (the same with the
    # Q values in the value's units, not min-max rescaled: small Q differences move it little)
    # "overrides" (the improved policy, learnt only where the search played another move than
    # the network's argmax) or "action" (one-hot of the move the search played)
    search_target: str = "improved"
    # logging / checkpoints
    log_interval: int = 10  # updates per jitted chunk; log after each chunk
    no_wandb: bool = False
    project: str = "hackmatrix"
    entity: str | None = None
    run_name: str | None = None
    run_suffix: str | None = None
    resume: str | None = None
    init_params: str | None = None  # warm start: params of this checkpoint, fresh optimizer
    rewind: int | None = None
    save_interval: int | None = None  # updates; None: only time-based + final
    save_interval_minutes: float = 10.0
    checkpoint_dir: str = "checkpoints"
    keep_checkpoints: int = 5
    no_artifact: bool = False
    seed: int = 0
    auto_tune: bool = False
    # end-of-run evaluation (evaluate.py): greedy episodes from stage 1 with a fixed key
    final_eval_episodes: int = 256
    final_eval_seed: int = 0
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
        """The config of a saved dict; ``REMOVED_FIELDS`` are dropped, other unknown keys refused,
        and a field the dict lacks gets ``SAVED_DEFAULTS``' value (what the run used). Flat
        ``search_*`` keys (configs saved before ``search`` was nested) move into ``search``."""
        d = saved_config(nest_search(d))
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


def saved_config(d: dict) -> dict:
    """A saved config dict completed to every field: ``SAVED_DEFAULTS`` for a field it lacks,
    else the field default; ``REMOVED_FIELDS`` dropped (``drop_removed_fields``)."""
    names = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(d) - names - set(REMOVED_FIELDS))
    if unknown:
        raise ValueError(f"unknown config keys: {unknown}")
    missing = {k: v for k, v in SAVED_DEFAULTS.items() if k not in d}
    return {**missing, **drop_removed_fields(d)}


def drop_removed_fields(d: dict) -> dict:
    """``d`` without ``REMOVED_FIELDS``; warns when one held a setting other than "off".

    A run that trained with a removed curriculum still loads: it evaluates, and resumes, on
    the bare game from stage 1, which the warning says.
    """
    used = {k: d[k] for k in REMOVED_FIELDS if k in d and d[k] != REMOVED_FIELDS[k]}
    if used:
        settings = ", ".join(f"{k}={v!r}" for k, v in used.items())
        warnings.warn(
            f"ignoring removed training-curriculum settings of a saved config ({settings}): "
            "the trainer no longer has start-stage or start-kit curricula, so the run "
            "evaluates and resumes on the bare game from stage 1",
            UserWarning,
            stacklevel=3,
        )
    return {k: v for k, v in d.items() if k not in REMOVED_FIELDS}


def validate(cfg: TrainConfig, num_devices: int = 1) -> None:
    """Raise ValueError with a clear message for any inconsistent setting."""
    if cfg.algo not in ALGORITHMS:
        raise ValueError(f"--algo must be one of {ALGORITHMS}, got {cfg.algo!r}")
    if cfg.algo == "search" and cfg.search.track_cryptogs:
        raise ValueError("--search-track-cryptogs follows one game's history: the trainer's "
                         "search has none; drop it")  # fmt: skip
    if cfg.algo == "search" and cfg.program_bonus_end not in (None, cfg.program_bonus):
        raise ValueError(
            "--algo search adds the program bonus to the tree's rewards, so it must stay "
            "constant: drop --program-bonus-end"
        )
    if cfg.algo == "search" and cfg.program_potential > 0:
        raise ValueError("--algo search plans without --program-potential; set it to 0")
    if cfg.search_target not in SEARCH_TARGETS:
        raise ValueError(
            f"--search-target must be one of {SEARCH_TARGETS}, got {cfg.search_target!r}"
        )
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
    if cfg.program_bonus_end is not None:
        if not (math.isfinite(cfg.program_bonus_end) and cfg.program_bonus_end >= 0):
            raise ValueError(f"--program-bonus-end must be >= 0, got {cfg.program_bonus_end}")
        if cfg.program_bonus == 0 and cfg.program_bonus_end == 0:
            raise ValueError("--program-bonus-end changes nothing without --program-bonus")
    if cfg.program_terms_skip_undo and not has_program_term(cfg):
        raise ValueError(
            "--program-terms-skip-undo changes nothing without --program-bonus or "
            "--program-potential"
        )
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
    )
    if cfg.disabled_programs:
        names = ", ".join(cfg.disabled_programs)
        lines.append(f"disabled programs (out of the agent's mask, the game unchanged): {names}")
    return "\n".join(lines)
