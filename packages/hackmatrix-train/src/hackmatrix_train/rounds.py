"""Rounds of guided runs (``hm-train --guide-rounds R``): expert iteration's outer loop.

A guided run's teacher is its start, frozen (``--guide-teacher start``): the search's targets do
not follow the network they train. Round 1 is the run the flags describe, from
``--init-params``; round k + 1 is the same run from round k's final network, which is also its
teacher, so each round's search plans with a stronger prior and value than the last
(``--guide-kl-later`` pulls the later rounds toward it with a weight of their own, and
``--guide-simulations-later`` gives their teacher's search a budget of its own). The
shipped agent's second and third rounds are ``--guide-rounds 2`` from the guided policy (its
fourth, from the third, and its fifth, from the fourth, ``--gamma 0.997``); rounds shorter
than the recipe's do not compound (specs/train.md §11).

Each round is an ordinary run in its own directory (``<run>-round<k>``) with its own
checkpoints, ``progress.csv`` and final evaluation; its saved config has ``guide_rounds`` 1,
names its start in ``init_params`` and notes "round k of R", so it reads, resumes and loads as
a run of its own. Running the same command again continues the rounds: a finished round is
kept, a round with a checkpoint resumes from it bit-exactly, the rest start in turn.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hackmatrix_train.config import TrainConfig
from hackmatrix_train.search_config import SearchConfig, num_determinizations


def round_config(cfg: TrainConfig, k: int, start: str) -> TrainConfig:
    """Round ``k``'s config (1-based): one round (``guide_rounds`` 1) from ``start``, named
    ``<run>-round<k>``; from the second round on, its KL weight ``guide_kl_later`` and its
    teacher's search ``later_search`` (each when set)."""
    suffix = f"{cfg.run_suffix}-round{k}" if cfg.run_suffix else f"round{k}"
    kl_later = k > 1 and cfg.guide_kl_later is not None
    return cfg.replace(
        guide_rounds=1, init_params=start, run_suffix=suffix, guide_kl_later=None,
        guide_kl=cfg.guide_kl_later if kl_later else cfg.guide_kl,
        guide_simulations_later=None, search=later_search(cfg) if k > 1 else cfg.search,
    )  # fmt: skip


def later_search(cfg: TrainConfig) -> SearchConfig:
    """The teacher's search in rounds 2 and later: ``guide_simulations_later`` simulations as
    a tree per ``SIMULATIONS_PER_DETERMINIZATION`` of them (``num_determinizations``'
    default), the rest of ``cfg.search`` as it is; ``cfg.search`` itself when unset. A later
    round's teacher is the last round's network, sharper than the first's, so a study may
    give it the test-time search's budget (experiments/long_game.md)."""
    sims = cfg.guide_simulations_later
    if sims is None:
        return cfg.search
    trees = num_determinizations(
        dataclasses.replace(cfg.search, num_simulations=sims, determinizations=None)
    )
    return dataclasses.replace(cfg.search, num_simulations=sims, determinizations=trees)


def finished(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a run that reached its length (its last checkpoint is the
    final save): a rerun of the rounds keeps it."""
    from hackmatrix_train import checkpoint as ckpt

    found = ckpt.list_checkpoints(run_dir)
    return bool(found) and ckpt.read_meta(found[-1][1]).get("reason") == "final"


def round_place(cfg: TrainConfig, explicit: frozenset[str], k: int, rounds: int, devices):
    """``(place, state)`` of round ``k``: a new run, or the run already in its directory
    (``state`` ``"new"``, ``"resumed"`` or ``"finished"``)."""
    from hackmatrix_train import checkpoint as ckpt
    from hackmatrix_train.run import locate_run, new_run

    place = new_run(cfg, explicit, devices)
    place.cfg = place.cfg.replace(notes=(*place.cfg.notes, f"round {k} of {rounds} "
                                         f"(--guide-rounds), from {cfg.init_params}"))  # fmt: skip
    if not ckpt.list_checkpoints(place.run_dir):
        return place, "new"
    if finished(place.run_dir):
        return place, "finished"
    return locate_run(cfg.replace(resume=str(place.run_dir)), frozenset({"resume"})), "resumed"


def run_rounds(cfg: TrainConfig, explicit=frozenset(), out=print, **parts) -> dict:
    """``cfg.guide_rounds`` guided runs, each from the last one's final network (its teacher
    too). Returns the last round's ``run.run`` summary with ``rounds``, each round's
    ``{"run_dir", "state", "final_eval"}``; an interrupted round ends the rounds there."""
    import jax

    from hackmatrix_train.run import run

    explicit = frozenset(explicit) | {"init_params", "run_suffix"}
    start, done, result = cfg.init_params, [], {}
    for k in range(1, cfg.guide_rounds + 1):
        round_cfg = round_config(cfg, k, start)
        place, state = round_place(round_cfg, explicit, k, cfg.guide_rounds, jax.devices())
        out(f"round {k} of {cfg.guide_rounds} ({state}): {place.run_dir}, from {start}, "
            "its teacher")  # fmt: skip
        if state == "finished":
            result = {"run_dir": str(place.run_dir), "interrupted": False, "final_eval": None}
        else:
            result = run(round_cfg, explicit, out=out, place=place, **parts)
        done.append({"run_dir": result["run_dir"], "state": state,
                     "final_eval": result["final_eval"]})  # fmt: skip
        if result["interrupted"]:
            break
        start = result["run_dir"]
    out(describe_rounds(done))
    return {**result, "rounds": done}


def describe_rounds(done: list[dict]) -> str:
    """The rounds' final evaluations, a line each (a kept round's is its eval_final.json)."""
    lines = ["rounds (each one's final evaluation: greedy episodes from stage 1):"]
    for k, r in enumerate(done, 1):
        ev = r["final_eval"]
        if ev is not None:
            figures = (f"return {ev['return_mean']:.1f}, stage {ev['stage_mean']:.2f}, "
                       f"wins {ev['win_rate']:.1%}")  # fmt: skip
        else:
            figures = "finished before" if r["state"] == "finished" else "not evaluated"
        lines.append(f"  round {k}: {figures} ({r['run_dir']})")
    return "\n".join(lines)
