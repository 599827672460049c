"""Configs saved by earlier versions of the trainer: what their missing fields meant and which
of their fields are gone, so every checkpoint ever written still loads as the run it was
(``config.TrainConfig.from_dict``)."""

from __future__ import annotations

import warnings

# Fields of earlier configs, with the value that meant "off": the start-stage and start-kit
# training curricula, dropped for measuring no benefit (experiments/findings.md), and the
# learner choice (``algo``, ``search_target``): the search trainer left hm-train for
# experiments/search_trainer.py, which ends worse than it starts (experiments/search.md).
# Checkpoints saved before still carry them; ``TrainConfig.from_dict`` drops them (with a
# warning when the run used one) so those checkpoints still load and evaluate.
REMOVED_FIELDS: dict[str, object] = {
    "algo": "ppo",
    "search_target": "improved",
    "start_stage": 1,
    "start_stage_max": None,
    "kit_siphons": 0,
    "kit_credits": 0,
    "kit_energy": 0,
    "kit_programs": 0,
    "kit_prob": 1.0,
    "kit_pool": None,
}


LEARNER_FIELDS = ("algo", "search_target")  # the removed learner choice, warned of apart

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


def saved_config(d: dict, names: set[str]) -> dict:
    """A saved config dict completed to every field: ``SAVED_DEFAULTS`` for a field it lacks,
    else the field default (of ``names``, the fields); ``REMOVED_FIELDS`` dropped
    (``drop_removed_fields``)."""
    unknown = sorted(set(d) - names - set(REMOVED_FIELDS))
    if unknown:
        raise ValueError(f"unknown config keys: {unknown}")
    missing = {k: v for k, v in SAVED_DEFAULTS.items() if k not in d}
    return {**missing, **drop_removed_fields(d)}


# What a removed field that held a setting other than "off" means for the loaded run: the
# warning of each kind ("{}": the settings), the learner's fields first, the rest curricula.
REMOVED_WARNINGS = (
    (LEARNER_FIELDS, "a saved config of the search trainer ({}): its params evaluate as any "
     "policy's; it resumes with experiments/search_trainer.py's learner, not hm-train's"),
    (tuple(REMOVED_FIELDS), "ignoring removed training-curriculum settings of a saved config "
     "({}): the trainer no longer has start-stage or start-kit curricula, so the run "
     "evaluates and resumes on the bare game from stage 1"),
)  # fmt: skip


def drop_removed_fields(d: dict) -> dict:
    """``d`` without ``REMOVED_FIELDS``; warns when one held a setting other than "off".

    A run that trained with a removed curriculum still loads: it evaluates, and resumes, on
    the bare game from stage 1, which the warning says. A search trainer's run evaluates; a
    resume refuses any learner but its own (``run.check_learner``).
    """
    used = {k: d[k] for k in REMOVED_FIELDS if k in d and d[k] != REMOVED_FIELDS[k]}
    for fields, message in REMOVED_WARNINGS:
        these = {k: used.pop(k) for k in fields if k in used}
        if these:
            settings = ", ".join(f"{k}={v!r}" for k, v in these.items())
            warnings.warn(message.format(settings), UserWarning, stacklevel=3)
    return {k: v for k, v in d.items() if k not in REMOVED_FIELDS}
