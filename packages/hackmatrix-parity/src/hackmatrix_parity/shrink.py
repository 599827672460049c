"""Shrink a mismatching (scenario, actions) pair to a minimal repro (delta debugging).

The predicate re-runs both sides through the engine with the actions as a
script; a candidate reduction is kept if it still produces a mismatch in one
of the original failure's categories. Reductions tried, in rounds until none
applies or the budget is spent: cut the action list after the failing step,
drop chunks of actions, drop entries of the entity lists (enemies,
transmissions, blocks, resources, ownedPrograms), drop optional keys.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hackmatrix_parity.engine import Engine, Failure

LIST_KEYS = ("enemies", "transmissions", "blocks", "resources", "ownedPrograms")
OPTIONAL_TOP = ("stage", "turn", "showActivated", "scheduledTasksDisabled")
OPTIONAL_PLAYER = ("hp", "credits", "energy", "dataSiphons", "attackDamage", "score")


class Shrinker:
    def __init__(self, engine: Engine, budget: int = 150):
        self.engine = engine
        self.budget = budget
        self.calls = 0

    def failure(self, scenario: dict[str, Any], actions: list[int]) -> Failure | None:
        self.calls += 1
        rep = self.engine.run([scenario], [actions])
        return rep.failures[0] if rep.failures else None

    def shrink(self, fail: Failure) -> Failure:
        cats = {d.category for d in fail.diffs} or {fail.note.split(":")[0]}

        def still(sc: dict[str, Any], acts: list[int]) -> Failure | None:
            if self.calls >= self.budget:
                return None
            f = self.failure(sc, acts)
            if f is None:
                return None
            fc = {d.category for d in f.diffs} or {f.note.split(":")[0]}
            return f if fc & cats else None

        best = fail
        sc, acts = copy.deepcopy(fail.scenario), list(fail.actions[: max(fail.step, 0)])
        f = still(sc, acts)
        if f is None:
            return best
        best = f
        changed = True
        while changed and self.calls < self.budget:
            changed = False
            # actions: drop chunks, largest first
            n = len(acts)
            size = max(1, n // 2)
            while size >= 1 and self.calls < self.budget:
                i = 0
                while i < len(acts) and self.calls < self.budget:
                    trial = acts[:i] + acts[i + size :]
                    f = still(sc, trial)
                    if f is not None:
                        acts, best, changed = trial[: f.step], f, True
                    else:
                        i += size
                size //= 2
            # entity lists
            for key in LIST_KEYS:
                i = 0
                while key in sc and i < len(sc[key]) and self.calls < self.budget:
                    trial_sc = copy.deepcopy(sc)
                    del trial_sc[key][i]
                    if not trial_sc[key]:
                        del trial_sc[key]
                    f = still(trial_sc, acts)
                    if f is not None:
                        sc, acts, best, changed = trial_sc, acts[: f.step], f, True
                    else:
                        i += 1
            for key in OPTIONAL_TOP:
                if key in sc and self.calls < self.budget:
                    trial_sc = {k: v for k, v in sc.items() if k != key}
                    f = still(trial_sc, acts)
                    if f is not None:
                        sc, acts, best, changed = trial_sc, acts[: f.step], f, True
            for key in OPTIONAL_PLAYER:
                if key in sc["player"] and self.calls < self.budget:
                    trial_sc = copy.deepcopy(sc)
                    del trial_sc["player"][key]
                    f = still(trial_sc, acts)
                    if f is not None:
                        sc, acts, best, changed = trial_sc, acts[: f.step], f, True
        return best


def repro_json(f: Failure) -> str:
    """A regression-test JSON (tests/parity/regressions/*.json)."""
    d = {
        "scenario": f.scenario,
        "actions": f.actions,
        "expect": "match",
        "found": [x.as_json() for x in f.diffs[:10]],
        "note": f.note,
    }
    return json.dumps(d, indent=1, sort_keys=True, default=str)
