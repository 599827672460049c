"""The differential engine: Swift vs JAX, step by step, over random scenarios (specs/parity.md).

Scenarios run in ``B`` lanes in lockstep (one Swift process per lane), so the
JAX side steps ``B x K`` candidates in one jitted call. For each step:

1. Swift: ``step`` + ``getValidActions`` + ``getInternalState`` (+ ``getFullState``
   on our binary).
2. JAX: the lane's state stepped under ``K`` keys.
3. A candidate *matches* when reward, the 15 breakdown values, done, the info
   flags, the three tensors, the mask, the observation JSON and the internal
   state all agree (and, on our binary, the full state). The lane continues
   from the first matching candidate: ``first_key`` if it was key 0,
   ``key_search`` otherwise.
4. No candidate matches: the elements on which all K candidates agree are
   *determined* (no key can change them). If Swift agrees with candidate 0 on
   all of them, the difference is random (WARP/POLY/spawn cells/enemy order/stage
   generation) and the lane is *resynced* from Swift's full state; otherwise it
   is a *mismatch*, reported with the determined differences. A resync after a
   stage completion also checks the generation invariants.

Against a binary without the full-state extension (canonical mode) the lane keeps the
JAX guesses of what Swift hides (transmission types, the order of one placement); before
each JAX step, what Swift's reply reveals of them is written into the lane's state
(``hackmatrix_parity.hidden``), and such a step that matches is a *hidden_reveal*.
"""

from __future__ import annotations

import itertools
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from hackmatrix_parity import compare as cmp
from hackmatrix_parity import jax_side
from hackmatrix_parity import swift_full as swift_full_mod
from hackmatrix_parity.client import (
    SwiftCommandError,
    SwiftError,
    SwiftGame,
    SwiftProtocolError,
)
from hackmatrix_parity.hidden import HiddenTypes, first_appended, with_placement_cells
from hackmatrix_parity.scenarios import scenario_stream
from hackmatrix_parity.tensor import REWARD_COMPONENTS, SWIFT_BREAKDOWN_KEYS

PROGRAM_NAMES = (
    "push", "pull", "crash", "warp", "poly", "wait", "debug", "row", "col", "undo",
    "step", "siph+", "exch", "show", "reset", "calm", "d_bom", "delay", "anti-v",
    "score", "reduc", "atk+", "hack",
)  # fmt: skip
ACTION_NAMES = ("up", "down", "left", "right", "siphon", *PROGRAM_NAMES)
# hidden_reveal: matched once the type of a transmission that canonical mode had to guess
# was read from Swift's reply (hackmatrix_parity.hidden).
CLASSES = ("first_key", "key_search", "hidden_reveal", "resync", "mismatch")
# Full-state leaves a random draw can set while the observation hides them.
RANDOM_HIDDEN = ("full.transmissions.enemyType",)


@dataclass
class Config:
    scenarios: int = 100
    steps: int = 20
    seed: int = 0
    num_keys: int = 16
    batch: int = 8
    invalid_prob: float = 0.03
    full_check: bool = True  # compare getFullState on our binary
    extra_rounds: int = 15  # more K-key rounds for a random step before judging it
    # Before a step is reported as a mismatch: up to this many more keys for that lane
    # alone (0 turns it off); see Engine._deep_search.
    deep_keys: int = 65_536
    # When the deep search finds no exact match: accept the step (resync) if every element
    # of Swift's vector outcome was produced by some deep candidate (per-element support);
    # see Engine._decide. False: any step without an exact match is a mismatch.
    marginal: bool = True
    timeout: float = 20.0
    # Global index of the first scenario passed to ``run`` (a chunk of a longer run, see
    # ``random_scenarios``): Swift's per-scenario seed and the action stream depend on it.
    first_index: int = 0


# What reading a malformed Swift reply raises (parsing it, comparing it, resyncing from it).
UNREADABLE = (KeyError, TypeError, ValueError, IndexError, AttributeError)


def _unreadable(e: Exception) -> SwiftProtocolError:
    return SwiftProtocolError(f"unreadable reply ({type(e).__name__}: {e})")


def _read(parse, *args):
    """``parse(*args)`` over Swift's replies; a malformed reply is a ``SwiftProtocolError``."""
    try:
        return parse(*args)
    except UNREADABLE as e:
        raise _unreadable(e) from e


@dataclass
class Failure:
    """A mismatching scenario: the setState dict, the actions up to the failing one, diffs."""

    scenario: dict[str, Any]
    actions: list[int]
    step: int  # 0 = the initial setState observation
    diffs: list[cmp.Diff]
    note: str = ""
    # Full state (getFullState schema, with history) before the failing step, when known:
    # Swift's own state there, so the step can be re-sampled offline (setFullState + step).
    pre_state: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        out = {
            "scenario": self.scenario,
            "actions": self.actions,
            "step": self.step,
            "note": self.note,
            "diffs": [d.as_json() for d in self.diffs[:20]],
        }
        if self.pre_state is not None:
            out["pre_state"] = self.pre_state
        return out


@dataclass
class Report:
    steps: Counter = field(default_factory=Counter)  # class -> count
    mismatch_categories: Counter = field(default_factory=Counter)
    actions_valid: Counter = field(default_factory=Counter)
    actions_invalid: Counter = field(default_factory=Counter)
    areas: Counter = field(default_factory=Counter)
    stagegen_violations: Counter = field(default_factory=Counter)
    # "found" (exact match), "marginal" (no exact match, every element in the support:
    # resynced), "not_found" (an element outside the support: mismatch)
    deep_searches: Counter = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    scenarios_run: int = 0
    scenarios_failed: int = 0
    scenarios_stopped_hidden: int = 0
    initial_mismatches: int = 0
    swift_errors: int = 0
    seconds: float = 0.0

    @property
    def compared(self) -> int:
        return sum(self.steps.values())

    @property
    def matches(self) -> int:
        return sum(self.steps[c] for c in CLASSES if c != "mismatch")

    @property
    def mismatches(self) -> int:
        return self.steps["mismatch"] + self.initial_mismatches

    def merge(self, other: Report) -> None:
        for name in ("steps", "mismatch_categories", "actions_valid", "actions_invalid", "areas",
                     "stagegen_violations", "deep_searches"):  # fmt: skip
            getattr(self, name).update(getattr(other, name))
        self.failures += other.failures
        for name in ("scenarios_run", "scenarios_failed", "scenarios_stopped_hidden",
                     "initial_mismatches", "swift_errors", "seconds"):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class _Lane:
    game: SwiftGame
    scenario: dict[str, Any] | None = None
    script: list[int] | None = None
    actions: list[int] = field(default_factory=list)
    prev: cmp.SwiftStep | None = None
    active: bool = False
    hidden: HiddenTypes | None = None  # canonical mode: guessed transmission types


def _step_tags(prev: cmp.SwiftStep, sw: cmp.SwiftStep, action: int) -> list[str]:
    """Rule areas a step exercised, read from Swift's side only."""
    tags = []
    po, o = prev.obs, sw.obs
    if sw.flags["invalid_action"]:
        return ["invalid"]
    if action < 4:
        moved = (po["playerRow"], po["playerCol"]) != (o["playerRow"], o["playerCol"])
        tags.append("move" if moved else "attack")
    bd = dict(zip(REWARD_COMPONENTS, sw.breakdown, strict=True))
    for name in SWIFT_BREAKDOWN_KEYS.values():
        if bd[name] != 0:
            tags.append(f"reward.{name}")
    for f in ("stage_complete", "death"):
        if sw.flags[f]:
            tags.append(f)
    if sw.done and not sw.flags["death"]:
        tags.append("victory")
    pi, i = prev.internal, sw.internal
    if pi is not None and i is not None:
        if i["turnCount"] != pi["turnCount"] and not sw.flags["stage_complete"]:
            tags.append("enemy_phase")
        if len(i["enemies"]) > len(pi["enemies"]):
            tags.append("hatch")

        def n_trans(obs: dict[str, Any]) -> int:
            return sum("transmission" in cell for row in obs["cells"] for cell in row)

        if action == 4 and n_trans(o) > n_trans(po):
            tags.append("siphon_spawns_placed")
        if (
            i["nextScheduledTaskTurn"] > pi["nextScheduledTaskTurn"]
            and action != 4
            and not sw.flags["stage_complete"]
        ):
            tags.append("scheduled_spawn")
        cells = [(e["row"], e["col"]) for e in pi["enemies"]]
        if len(cells) != len(set(cells)):
            tags.append("stacked_enemies")
        if any(e["isStunned"] for e in pi["enemies"]):
            tags.append("stunned_enemy")
        if po["cryptogHints"]:
            tags.append("hidden_cryptog")
    if po.get("showActivated"):
        tags.append("show_active")
    if po.get("scheduledTasksDisabled"):
        tags.append("calm_active")
    return tags


def full_diffs(swift_full: dict[str, Any], jax_state: Any) -> list[cmp.Diff]:
    """Hidden-state diffs: Swift ``getFullState`` (no history) vs the JAX state in that schema."""
    mine = swift_full_mod.from_jax(jax_state, include_history=False)
    theirs = {k: v for k, v in swift_full.items() if k != "history"}
    return cmp.json_diffs(theirs, mine, "full")


class Engine:
    """Runs scenarios against one Swift binary; see the module docstring."""

    def __init__(
        self, config: Config, swift_bin: str | None = None, command: list[str] | None = None
    ):
        self.cfg = config
        self.swift_bin = swift_bin
        self.command = command
        self.stepper = jax_side.get_stepper(config.batch, config.num_keys)
        self.lanes = [self._new_game() for _ in range(config.batch)]
        self.full = config.full_check and self.lanes[0].game.supports_full_state
        self.extensions = self.lanes[0].game.extensions
        self._tick = 0
        self._failed_pre: dict[int, dict[str, Any]] = {}  # lane -> full state before a mismatch

    @staticmethod
    def _hidden_types(state: Any) -> HiddenTypes:
        host = jax.device_get(state)
        return HiddenTypes(
            jax_side.transmission_entries(host),
            jax_side.history_counters(host),
            jax_side.history_depth(host),
        )

    def _new_game(self) -> _Lane:
        return _Lane(SwiftGame(self.swift_bin, command=self.command, timeout=self.cfg.timeout))

    def close(self) -> None:
        for lane in self.lanes:
            lane.game.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ swift side
    def _swift_after(self, lane: _Lane) -> tuple[list[int], dict[str, Any], dict[str, Any] | None]:
        valid = lane.game.valid_actions()
        internal = lane.game.internal_state()
        full = lane.game.full_state() if self.full else None
        return valid, internal, full

    # ------------------------------------------------------------------ public API
    def run(
        self, scenarios: list[dict[str, Any]], scripts: list[list[int]] | None = None
    ) -> Report:
        """Run every scenario for ``cfg.steps`` steps (or its script); returns the report."""
        t0 = time.monotonic()
        report = Report()
        queue = list(range(len(scenarios)))[::-1]
        rng = np.random.default_rng(self.cfg.seed + 7919 + 7_777_777 * self.cfg.first_index)
        batch_states: list[Any] = [None] * self.cfg.batch
        batch = None

        def load(b: int) -> bool:
            """Put the next scenario into lane b; False when none is left."""
            lane = self.lanes[b]
            lane.active = False
            while queue:
                i = queue.pop()
                sc = scenarios[i]
                lane.scenario, lane.actions = sc, []
                lane.script = None if scripts is None else list(scripts[i])
                report.scenarios_run += 1
                try:
                    if not lane.game.alive:
                        lane.game.restart()
                    if self.extensions and self.command is None:
                        # Our binary: its generator otherwise starts from a system seed
                        # and survives setState, so Swift's draws (and the run) would
                        # vary from run to run. A seeded reset per scenario makes them a
                        # function of (seed, scenario index) alone. Explicit commands
                        # (tests that pin a Swift seed with --seed) are left alone.
                        lane.game.reset(seed=scenario_seed(self.cfg.seed, self.cfg.first_index + i))
                    obs = lane.game.set_state(sc)
                    valid, internal, full = self._swift_after(lane)
                    sw = _read(cmp.SwiftStep.initial, obs, valid, internal)
                except SwiftCommandError as e:
                    report.failures.append(Failure(sc, [], 0, [], f"swift rejected setState: {e}"))
                    report.scenarios_failed += 1
                    report.initial_mismatches += 1
                    continue
                except SwiftError as e:
                    report.swift_errors += 1
                    report.failures.append(Failure(sc, [], 0, [], f"swift error: {e}"))
                    report.scenarios_failed += 1
                    self._restart(lane)
                    continue
                try:
                    state = jax_side.load_scenario(sc)
                except ValueError as e:
                    report.failures.append(Failure(sc, [], 0, [], f"JAX rejected scenario: {e}"))
                    report.scenarios_failed += 1
                    report.initial_mismatches += 1
                    continue
                try:
                    diffs = self._initial_diffs(sw, state, full)
                except UNREADABLE as e:  # a malformed getFullState
                    report.swift_errors += 1
                    report.failures.append(Failure(sc, [], 0, [], f"swift error: {_unreadable(e)}"))
                    report.scenarios_failed += 1
                    self._restart(lane)
                    continue
                if diffs:
                    report.initial_mismatches += 1
                    report.scenarios_failed += 1
                    report.mismatch_categories.update({d.category for d in diffs})
                    report.failures.append(Failure(sc, [], 0, diffs, "initial observation"))
                    continue
                if lane.script is not None and not lane.script:
                    continue  # nothing to step: the initial comparison was the test
                lane.prev = sw
                lane.active = True
                lane.hidden = None if self.full else self._hidden_types(state)
                batch_states[b] = state
                return True
            return False

        for b in range(self.cfg.batch):
            load(b)
        template = next((s for s in batch_states if s is not None), None)
        if template is None:
            report.seconds = time.monotonic() - t0
            return report
        batch_states = [s if s is not None else template for s in batch_states]
        batch = self.stepper.stack(batch_states)

        while any(lane.active for lane in self.lanes):
            actions = np.zeros(self.cfg.batch, np.int32)
            replies: dict[int, cmp.SwiftStep] = {}
            fulls: dict[int, dict[str, Any] | None] = {}
            for b, lane in enumerate(self.lanes):
                if not lane.active:
                    continue
                a = self._choose(lane, rng)
                actions[b] = a
                lane.actions.append(a)
                try:
                    reply = lane.game.step(a)
                    valid, internal, full = self._swift_after(lane)
                    replies[b] = _read(cmp.SwiftStep.from_reply, reply, valid, internal)
                except SwiftError as e:
                    self._swift_failed(lane, e, report)
                    continue
                fulls[b] = full
            revealed: set[int] = set()
            for b, sw in replies.items():
                hidden = self.lanes[b].hidden
                shown = hidden.reveal(sw.obs, sw.internal) if hidden is not None else None
                if shown is not None:  # the step shows what the lane only guessed: take it
                    assert hidden is not None
                    pre = jax_side.with_transmissions(self.stepper.lane(batch, b), shown[0])
                    batch = self.stepper.set_lane(batch, b, pre)
                    hidden.rewrite(*shown)
                    revealed.add(b)
            keys = jax_side.make_keys(self.cfg.seed, self._tick, self.cfg.batch, self.cfg.num_keys)
            nxt, out = self.stepper.step(batch, actions, keys)
            nxt_host = jax_side.Candidates(self.stepper, nxt)
            choice = np.zeros(self.cfg.batch, np.int32)
            resync: dict[int, Any] = {}
            finished: list[int] = []
            decisions: dict[int, tuple[str, int, list[cmp.Diff], Any]] = {}
            pending: dict[int, list[tuple[dict[str, np.ndarray], jax_side.Candidates]]] = {}
            for b, sw in list(replies.items()):
                ob = {k: v[b] for k, v in out.items()}
                try:
                    k = self._match(b, sw, ob, nxt_host, fulls[b])
                except UNREADABLE as e:  # Swift's reply parsed but cannot be compared
                    self._swift_failed(self.lanes[b], _unreadable(e), report)
                    del replies[b]
                    continue
                if k is not None:
                    decisions[b] = ("first_key" if k == 0 else "key_search", k, [], None)
                else:
                    pending[b] = [(ob, nxt_host)]
            # More keys for random steps that K keys did not reproduce (no recompilation).
            for r in range(self.cfg.extra_rounds):
                need = [b for b, rs in pending.items() if self._wants_more(replies[b], rs)]
                if not need:
                    break
                keys = jax_side.make_keys(
                    self.cfg.seed + 7_000_003 * (r + 1), self._tick, self.cfg.batch,
                    self.cfg.num_keys,
                )  # fmt: skip
                nxt2, out2 = self.stepper.step(batch, actions, keys)
                nxt2_host = jax_side.Candidates(self.stepper, nxt2)
                for b in need:
                    ob = {k: v[b] for k, v in out2.items()}
                    try:
                        k = self._match(b, replies[b], ob, nxt2_host, fulls[b])
                    except UNREADABLE as e:
                        self._swift_failed(self.lanes[b], _unreadable(e), report)
                        del replies[b], pending[b]
                        continue
                    if k is not None:
                        found = nxt2_host.full(b, k)
                        decisions[b] = ("key_search", 0, [], found)
                        del pending[b]
                    else:
                        pending[b].append((ob, nxt2_host))
            self._tick += 1
            for b, rounds in pending.items():
                pre = (batch, b, int(actions[b]))
                try:
                    decisions[b] = self._decide(
                        b, self.lanes[b], replies[b], rounds, fulls[b], report, pre
                    )
                except UNREADABLE as e:
                    self._swift_failed(self.lanes[b], _unreadable(e), report)
                    del replies[b]
            for b, sw in replies.items():
                lane = self.lanes[b]
                cls, k, diffs, new_state = decisions[b]
                if b in revealed and cls in ("first_key", "key_search"):
                    cls = "hidden_reveal"
                report.steps[cls] += 1
                a = lane.actions[-1]
                if sw.flags["invalid_action"]:
                    report.actions_invalid[ACTION_NAMES[a]] += 1
                else:
                    report.actions_valid[ACTION_NAMES[a]] += 1
                report.areas.update(_step_tags(lane.prev, sw, a))  # type: ignore[arg-type]
                if cls == "mismatch":
                    report.mismatch_categories.update({d.category for d in diffs})
                    report.failures.append(
                        Failure(lane.scenario or {}, list(lane.actions), len(lane.actions), diffs,
                                pre_state=self._failed_pre.pop(b, None))
                    )  # fmt: skip
                    report.scenarios_failed += 1
                    finished.append(b)
                    continue
                if cls == "resync" and new_state is None:
                    report.scenarios_stopped_hidden += 1
                    finished.append(b)
                    continue
                if new_state is not None:
                    resync[b] = new_state
                else:
                    choice[b] = k
                if lane.hidden is not None:
                    post = new_state if new_state is not None else nxt_host.get(b, k)
                    lane.hidden.advance(
                        jax_side.transmission_entries(post),
                        jax_side.history_counters(post),
                        bool(post.game.show_flag),
                    )
                lane.prev = sw
                limit = len(lane.script) if lane.script is not None else self.cfg.steps
                if (sw.done and not sw.flags["invalid_action"]) or len(lane.actions) >= limit:
                    finished.append(b)
            batch = self.stepper.select(nxt, choice)
            for b, st in resync.items():
                batch = self.stepper.set_lane(batch, b, st)
            for b in finished:
                self.lanes[b].active = False
            for b in range(self.cfg.batch):
                if not self.lanes[b].active and queue and load(b):
                    batch = self.stepper.set_lane(batch, b, batch_states[b])
        report.seconds = time.monotonic() - t0
        return report

    # ------------------------------------------------------------------ helpers
    def _restart(self, lane: _Lane) -> None:
        """A fresh binary for the lane; one that cannot start is closed (``load`` retries)."""
        try:
            lane.game.restart()
        except SwiftError:
            lane.game.close()

    def _swift_failed(self, lane: _Lane, err: SwiftError, report: Report) -> None:
        """The lane's binary died, hung or answered garbage mid-scenario: report, restart.

        The step counts as a mismatch (``swift_error``), never as a match, and the scenario
        ends there; the lane goes on with the next scenario on a fresh process.
        """
        report.swift_errors += 1
        report.scenarios_failed += 1
        report.steps["mismatch"] += 1
        report.mismatch_categories["swift_error"] += 1
        report.failures.append(
            Failure(lane.scenario or {}, list(lane.actions), len(lane.actions), [],
                    f"swift error: {err}")
        )  # fmt: skip
        lane.active = False
        self._restart(lane)

    def _choose(self, lane: _Lane, rng: np.random.Generator) -> int:
        if lane.script is not None:
            i = len(lane.actions)
            return int(lane.script[i]) if i < len(lane.script) else 10
        assert lane.prev is not None
        mask = lane.prev.mask
        valid = np.flatnonzero(mask)
        invalid = np.flatnonzero(~mask)
        if len(valid) == 0 or (len(invalid) and rng.random() < self.cfg.invalid_prob):
            return int(rng.choice(invalid))
        # Weight programs up: they are most of the rule surface but rarely the only choice.
        w = np.where(valid >= 5, 3.0, 1.0)
        return int(rng.choice(valid, p=w / w.sum()))

    def _initial_diffs(self, sw: cmp.SwiftStep, state: Any, full: dict | None) -> list[cmp.Diff]:
        one = self.stepper.initial(self.stepper.stack([state]))
        out = {k: v[0][None] for k, v in one.items()}
        agree = cmp.vector_agreement(sw, out, initial=True)
        diffs = cmp.vector_diffs(sw, out, 0) if not cmp.candidate_ok(agree)[0] else []
        host = jax.device_get(state)
        diffs += cmp.json_diffs(sw.obs, jax_side.observation_json(host), "obs")
        diffs += cmp.json_diffs(sw.internal, jax_side.internal_state_json(host), "internal")
        if full is not None:
            diffs += full_diffs(full, host)
        return diffs

    def _match(self, b, sw, ob, nxt, full) -> int | None:
        """The first candidate that agrees with Swift on everything, or None."""
        ok = cmp.candidate_ok(cmp.vector_agreement(sw, ob))
        for k in np.flatnonzero(ok)[:4]:
            host = nxt.get(b, int(k))
            if not self._record_diffs(sw, host, full):
                return int(k)
        return None

    @staticmethod
    def _stagegen(sw: cmp.SwiftStep) -> bool:
        return sw.flags["stage_complete"] and not sw.done

    def _wants_more(self, sw, rounds) -> bool:
        """More keys can help: no candidate matched, or (stage generated) none completed it.

        Asked even when the first round's K candidates all agree: an outcome that
        only a few enemy processing orders produce (4+ enemies blocking each other)
        can be missed by every one of K keys, and judging the step on that round
        alone reported such steps as mismatches (1 in 26,175 steps of the CI suite).
        A real bug costs the extra rounds only once, on the step that shows it.

        A stage-generating step never matches (the new grid is random as a whole),
        so it is judged on the candidates that completed the stage too; more rounds
        are drawn until one does (WARP onto an entity standing on the exit completes
        the stage for only 1 key in 7-11: all 16 first-round keys can miss it).
        """
        if not self._stagegen(sw):
            return True
        return not any(bool(ob["stage_complete"].any()) for ob, _ in rounds)

    def _record_diffs(self, sw, host, full) -> list[cmp.Diff]:
        """JSON-level diffs of one candidate state: observation, internal, full state."""
        diffs = cmp.json_diffs(sw.obs, jax_side.observation_json(host), "obs")
        diffs += cmp.json_diffs(sw.internal, jax_side.internal_state_json(host), "internal")
        if full is not None:
            diffs += full_diffs(full, host)
        return diffs

    def _decide(self, b, lane, sw, rounds, full, report, pre):
        """No candidate matched: mismatch on a determined element, else resync (docstring).

        ``rounds`` holds (outcome arrays, candidate states) per key round. After a
        stage generation only the candidates that completed the stage are judged
        (when any did): the others took another random branch (e.g. a WARP that
        landed elsewhere), and the new stage itself is random as a whole.
        """
        stagegen = self._stagegen(sw)
        completed_only = stagegen and not self._wants_more(sw, rounds)
        cands: list[tuple[dict[str, np.ndarray], int, jax_side.Candidates]] = []
        for ob, host in rounds:
            keep = ob["stage_complete"] if completed_only else np.ones_like(ob["stage_complete"])
            cands += [(ob, int(k), host) for k in np.flatnonzero(keep)]
        out = {k: np.stack([ob[k][i] for ob, i, _ in cands]) for k in rounds[0][0]}
        det = cmp.determined(out)
        if stagegen:  # the new grid is random as a whole: checked after the resync instead
            det["tensor.grid"] = np.zeros_like(det["tensor.grid"])
            det["mask"] = np.zeros_like(det["mask"])
        diffs = cmp.vector_diffs(sw, out, 0, only=det)
        # JSON-level: paths on which the (first K) judged candidates all agree.
        states = [host.get(b, i) for _, i, host in cands[: self.cfg.num_keys]]
        base = states[0]
        recs = self._record_diffs(sw, base, full)
        varying: set[str] = set()
        obs0, int0 = jax_side.observation_json(base), jax_side.internal_state_json(base)
        full0 = swift_full_mod.from_jax(base) if full is not None else None
        for c in states[1:]:
            for d in cmp.json_diffs(obs0, jax_side.observation_json(c), "obs"):
                varying.add(d.path)
            for d in cmp.json_diffs(int0, jax_side.internal_state_json(c), "internal"):
                varying.add(d.path)
            if full0 is not None:
                for d in cmp.json_diffs(full0, swift_full_mod.from_jax(c), "full"):
                    varying.add(d.path)
        random_prefixes = ("obs.cells", "obs.cryptogHints", "full.cells", "full.transmissions",
                           "full.exitPos") if stagegen else ()  # fmt: skip
        # Elements that vary among *all* rounds' candidates mark the JSON parts they encode as
        # random too (the JSON variation above sees only the first round's K candidates).
        grid_var = ~det["tensor.grid"] if not stagegen else np.ones((6, 6, 42), bool)
        ent_var = bool(grid_var[..., 0:7].any() or grid_var[..., 36].any())
        ent_prefixes = ("internal.enemies", "full.enemies", "full.transmissions",
                        "obs.cryptogHints")  # fmt: skip
        for d in recs:
            if d.path in varying or d.path.startswith(random_prefixes):
                continue
            m = re.match(r"obs\.cells\[(\d)\]\[(\d)\]", d.path)
            if m and grid_var[int(m.group(1)), int(m.group(2))].any():
                continue
            if ent_var and d.path.startswith(ent_prefixes):
                continue
            if any(d.path.startswith(v + "[") or d.path.startswith(v + ".") for v in varying):
                continue
            if d.category in RANDOM_HIDDEN:
                continue
            diffs.append(d)
        if diffs and not stagegen and self.cfg.deep_keys > 0:
            found, support, whole = self._deep_search(sw, full, *pre)
            if found is not None:
                report.deep_searches["found"] += 1
                return "key_search", 0, [], found
            # No candidate equals Swift's outcome as a whole. On a board with ~20 enemies one
            # enemy phase has thousands of equally likely outcomes (Swift itself repeats a
            # drawn outcome in 0 of 2,000 re-draws, specs/parity.md), so no key budget finds
            # it. The evidence of a rule difference is then an element of Swift's outcome
            # that no candidate produces; without one the step is resynced from Swift.
            # Unless some candidate did produce Swift's vector outcome as a whole: then
            # what differs is JSON-only (e.g. a hidden cryptog's hp), and is reported.
            outside = {name: ~s for name, s in support.items()}
            beyond = cmp.vector_diffs(sw, out, 0, only=outside)
            whole = whole or any(
                cmp.candidate_ok(cmp.vector_agreement(sw, ob)).any() for ob, _ in rounds
            )
            if not beyond and self.cfg.marginal and not whole:
                report.deep_searches["marginal"] += 1
                diffs = []
            else:
                report.deep_searches["not_found"] += 1
                diffs = beyond + [d for d in diffs if d not in beyond]
        if diffs:
            self._failed_pre[b] = jax_side.full_state_json(self.stepper.lane(pre[0], pre[1]))
            return "mismatch", 0, diffs, None
        if stagegen:
            n_before = sum(
                "transmission" in lane.prev.obs["cells"][r][c] for r in range(6) for c in range(6)
            )
            for v in cmp.stage_invariants(sw.obs, lane.prev.obs["stage"], n_before):
                report.stagegen_violations[v.split(" ")[0]] += 1
        if full is None:
            rebuilt = None if stagegen else self._placement_resync(b, lane, sw, cands)
            return "resync", 0, [], rebuilt
        state = swift_full_mod.to_jax(lane.game.full_state(include_history=True))
        # The resynced state must give Swift's observation, tensors, mask and internal state.
        post = self._initial_diffs(sw, state, full)
        if post:
            return "mismatch", 0, post, None
        return "resync", 0, [], state

    def _placement_resync(self, b, lane, sw, cands) -> Any:
        """Canonical mode: the step's outcome rebuilt when only its new placement differs.

        A placement of several transmissions (the owed siphon spawns) lands on one of
        hundreds of cell sets, so no key budget reproduces it, and without a full state the
        lane could not continue. The cells are visible, though: a candidate that agrees
        with Swift on everything but the countdown channel (where transmissions are) gets
        the appended entries moved to Swift's new transmission cells, and is taken when its
        observation, tensors, mask and internal state then equal Swift's. Their types and
        order stay guesses (``hidden``). None when no candidate qualifies.
        """
        if lane.hidden is None:
            return None
        grid = np.ones((6, 6, len(cmp.CHANNEL_NAMES)), bool)
        grid[..., cmp.CHANNEL_NAMES.index("countdown")] = False
        for ob, k, host in cands[:64]:
            agree = cmp.vector_agreement(sw, {name: v[k : k + 1] for name, v in ob.items()})
            agree["tensor.grid"] |= ~grid
            agree.pop("mask")  # may depend on the cells (CRASH, WARP): checked below
            if not cmp.candidate_ok(agree)[0]:
                continue
            state = host.full(b, k)
            post = jax_side.transmission_entries(state)
            survivors = {e[:2] for e in post[: first_appended(lane.hidden.entries, post)]}
            cells = [
                (r, c)
                for r in range(6)
                for c in range(6)
                if "transmission" in sw.obs["cells"][r][c] and (r, c) not in survivors
            ]
            entries = with_placement_cells(lane.hidden.entries, post, cells)
            if entries is None:
                continue
            rebuilt = jax_side.with_transmissions(state, entries)
            rebuilt = jax_side.with_top_snapshot_cells(rebuilt, post, entries)
            if not self._initial_diffs(sw, rebuilt, None):
                return rebuilt
        return None

    def _deep_search(self, sw, full, batch, b: int, action: int):
        """Many more keys for one lane before reporting a mismatch.

        Returns ``(state, support, whole)``: the matching state or None, per vector
        element whether some candidate had Swift's value there (``_decide`` uses it
        when no candidate matches as a whole), and whether some candidate had all of
        Swift's vector elements (so only the JSON-level comparison failed).

        With ~10 enemies a step has hundreds of distinct outcomes (processing
        orders that block each other differently), some rarer than 1 in 256, so
        the first rounds can miss the one Swift drew (both CI-seed cases in
        tests/parity/regressions/crowded_*: Swift's outcome was in the JAX support when sampled with 16k
        keys, on every one of 20 replayed pre-states). The lane's pre-step state
        is copied into all ``B`` lanes of the same compiled stepper (no new
        compilation), ``B x K`` keys a round, up to ``deep_keys`` keys. A real
        rule difference costs this once, on the step that shows it.
        """
        pre = self.stepper.lane(batch, b)
        copies = self.stepper.stack([pre] * self.cfg.batch)
        actions = np.full(self.cfg.batch, action, np.int32)
        per_round = self.cfg.batch * self.cfg.num_keys
        support: dict[str, np.ndarray] = {}
        whole = False
        for r in range(-(-self.cfg.deep_keys // per_round)):
            keys = jax_side.make_keys(
                self.cfg.seed + 1_000_003 * (r + 1) + 17, self._tick, self.cfg.batch,
                self.cfg.num_keys,
            )  # fmt: skip
            nxt, out = self.stepper.step(copies, actions, keys)
            elements = cmp.vector_agreement(
                sw, {name: v.reshape(per_round, *v.shape[2:]) for name, v in out.items()}
            )
            for name, a in elements.items():
                seen = a.any(axis=0)
                support[name] = seen if name not in support else support[name] | seen
            agree = cmp.candidate_ok(elements)
            whole = whole or bool(agree.any())
            # Several vector matches can differ in the JSON only (two same-type enemies that
            # swapped cells): check up to 64 of them before calling the step JSON-only.
            host = jax_side.Candidates(self.stepper, nxt)
            for flat in np.flatnonzero(agree)[:64]:
                lane, k = divmod(int(flat), self.cfg.num_keys)
                if not self._record_diffs(sw, host.get(lane, k), full):
                    return host.full(lane, k), support, True
        return None, support, whole


def scenario_seed(seed: int, index: int) -> int:
    """The Swift generator's seed for scenario ``index`` of a run seeded ``seed`` (< 2**63)."""
    return (int(seed) * 1_000_003 + int(index) * 7_919 + 17) % (1 << 63)


def random_scenarios(n: int, seed: int, start: int = 0) -> list[dict[str, Any]]:
    """Scenarios ``start .. start + n - 1`` of the sequence seeded ``seed``.

    A chunk of a long run is the same as the corresponding slice of one big run's
    scenarios, so chunks can be run separately (and resumed) and their reports merged.
    """
    return list(itertools.islice(scenario_stream(seed, start + n), start, None))


def _run_shard(config: Config, swift_bin: str | None, scenarios: list[dict[str, Any]]) -> Report:
    with Engine(config, swift_bin) as eng:
        return eng.run(scenarios)


def run_sharded(
    config: Config, scenarios: list[dict[str, Any]], swift_bin: str | None, workers: int
) -> Report:
    """Run ``scenarios`` in ``workers`` processes (scenario i in shard i mod workers), merged.

    The JAX side uses about one core per engine, so on a multi-core box shards
    run side by side (each compiles once). Deterministic for a given
    ``workers``: shard w runs with seed ``config.seed + w`` for its keys and
    action choices. Processes are spawned, never forked (JAX is multithreaded).
    """
    if workers <= 1:
        return _run_shard(config, swift_bin, scenarios)
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    from dataclasses import replace

    shards = [scenarios[w::workers] for w in range(workers)]
    cfgs = [replace(config, seed=config.seed + w) for w in range(workers)]
    report = Report()
    with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as pool:
        futures = [
            pool.submit(_run_shard, c, swift_bin, sh)
            for c, sh in zip(cfgs, shards, strict=True)
            if sh
        ]
        for f in futures:
            part = f.result()
            seconds = max(report.seconds, part.seconds)
            report.merge(part)
            report.seconds = seconds  # wall time: the shards ran side by side
    return report
