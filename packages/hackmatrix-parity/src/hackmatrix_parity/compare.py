"""Field-by-field comparison of one Swift step with JAX candidates.

Exact equality for integers and booleans, floats within ``atol + rtol*|swift|``
(1e-6 each). Every difference is a ``Diff(category, path, swift, jax)``;
the category is the path with indices dropped, so a report can count
mismatches per reward component, observation field, tensor channel and mask entry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from hackmatrix_parity.tensor import REWARD_COMPONENTS, breakdown15, mask_from_valid, swift_tensor

ATOL = 1e-6
RTOL = 1e-6
FLAGS = ("invalid_action", "stage_complete", "death")
PLAYER_NAMES = (
    "row", "col", "hp", "credits", "energy", "stage", "siphons", "attack", "show", "calm",
)  # fmt: skip
CHANNEL_NAMES = (
    ["virus", "daemon", "glitch", "cryptog", "enemy_hp", "stunned", "from_siphon",
     "data", "program", "question", "points", "siphoned"]
    + [f"prog{a}" for a in range(5, 28)]
    + ["spawn_count", "countdown", "credits", "energy", "data_siphon", "exit", "center"]
)  # fmt: skip


@dataclass(frozen=True)
class Diff:
    category: str  # e.g. "breakdown.kills", "obs.cells.enemy.hp", "mask[14]", "tensor.grid.exit"
    path: str  # full location, e.g. "obs.cells[2][3].enemy.hp"
    swift: Any
    jax: Any

    def as_json(self) -> dict[str, Any]:
        return {"category": self.category, "path": self.path, "swift": self.swift, "jax": self.jax}


def _category(path: str) -> str:
    return re.sub(r"\[\d+\]", "", path)


def close(a: float, b: float) -> bool:
    return abs(float(a) - float(b)) <= ATOL + RTOL * abs(float(a))


def json_diffs(swift: Any, jax_: Any, path: str) -> list[Diff]:
    """Recursive diff of two JSON values (dict key sets, list lengths, scalars)."""
    out: list[Diff] = []
    if isinstance(swift, dict) and isinstance(jax_, dict):
        for k in sorted(set(swift) | set(jax_)):
            p = f"{path}.{k}"
            if k not in swift or k not in jax_:
                out.append(Diff(_category(p), p, swift.get(k, "<absent>"), jax_.get(k, "<absent>")))
            else:
                out += json_diffs(swift[k], jax_[k], p)
        return out
    if isinstance(swift, list) and isinstance(jax_, list):
        if len(swift) != len(jax_):
            return [Diff(_category(path) + ".len", path, swift, jax_)]
        for i, (a, b) in enumerate(zip(swift, jax_, strict=True)):
            out += json_diffs(a, b, f"{path}[{i}]")
        return out
    if isinstance(swift, bool) or isinstance(jax_, bool):
        if (swift is not jax_ and swift != jax_) or type(swift) is not type(jax_):
            out.append(Diff(_category(path), path, swift, jax_))
        return out
    if isinstance(swift, float) or isinstance(jax_, float):
        if not (isinstance(swift, (int, float)) and isinstance(jax_, (int, float))) or not close(
            swift, jax_
        ):
            out.append(Diff(_category(path), path, swift, jax_))
        return out
    if swift != jax_:
        out.append(Diff(_category(path), path, swift, jax_))
    return out


@dataclass
class SwiftStep:
    """Everything one Swift step reveals, in comparable form."""

    obs: dict[str, Any]
    reward: float
    breakdown: np.ndarray  # float64[15], REWARD_COMPONENTS order
    player: np.ndarray  # float32[10]
    programs: np.ndarray  # float32[23]
    grid: np.ndarray  # float32[6,6,42]
    mask: np.ndarray  # bool[28]
    done: bool
    flags: dict[str, bool]
    internal: dict[str, Any] | None
    extra_breakdown: dict[str, float]

    @classmethod
    def from_reply(
        cls, reply: dict[str, Any], valid: list[int], internal: dict[str, Any] | None
    ) -> SwiftStep:
        obs = reply["observation"]
        info = reply.get("info", {})
        bd = breakdown15(float(reply["reward"]), info)
        player, programs, grid = swift_tensor(obs)
        return cls(
            obs=obs,
            reward=float(reply["reward"]),
            breakdown=np.array([bd[n] for n in REWARD_COMPONENTS], np.float64),
            player=player,
            programs=programs.astype(np.float32),
            grid=grid,
            mask=mask_from_valid(valid),
            done=bool(reply["done"]),
            flags={f: info.get(f) is True for f in FLAGS},
            internal=internal,
            extra_breakdown={k[1:]: v for k, v in bd.items() if k.startswith("?")},
        )

    @classmethod
    def initial(
        cls, obs: dict[str, Any], valid: list[int], internal: dict[str, Any] | None
    ) -> SwiftStep:
        player, programs, grid = swift_tensor(obs)
        return cls(
            obs=obs,
            reward=0.0,
            breakdown=np.zeros(len(REWARD_COMPONENTS)),
            player=player,
            programs=programs.astype(np.float32),
            grid=grid,
            mask=mask_from_valid(valid),
            done=False,
            flags=dict.fromkeys(FLAGS, False),
            internal=internal,
            extra_breakdown={},
        )


def _fclose(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a.astype(np.float64) - b.astype(np.float64)) <= ATOL + RTOL * np.abs(
        a.astype(np.float64)
    )


def vector_agreement(sw: SwiftStep, out: dict[str, np.ndarray], *, initial: bool = False):
    """Per-element agreement of K candidates with Swift: dict name -> bool[K, ...]."""
    agree = {
        "tensor.player": _fclose(sw.player[None], out["player"]),
        "tensor.programs": _fclose(sw.programs[None], out["programs"]),
        "tensor.grid": _fclose(sw.grid[None], out["grid"]),
        "mask": sw.mask[None] == out["mask"],
    }
    if not initial:
        agree["reward"] = _fclose(np.array([sw.reward]), out["reward"][:, None])[:, 0]
        agree["breakdown"] = _fclose(sw.breakdown[None], out["breakdown"])
        agree["done"] = out["done"] == sw.done
        for f in FLAGS:
            agree[f"info.{f}"] = out[f] == sw.flags[f]
    return agree


def candidate_ok(agree: dict[str, np.ndarray]) -> np.ndarray:
    """bool[K]: candidate k agrees with Swift on every vector element."""
    ok = None
    for a in agree.values():
        a2 = a.reshape(a.shape[0], -1).all(axis=1)
        ok = a2 if ok is None else ok & a2
    assert ok is not None
    return ok


def vector_diffs(
    sw: SwiftStep, out: dict[str, np.ndarray], k: int, only: dict[str, np.ndarray] | None = None
) -> list[Diff]:
    """Diffs of candidate k; ``only`` restricts to elements marked True (bool masks [...])."""
    agree = vector_agreement(sw, out, initial="reward" not in out)
    diffs: list[Diff] = []

    def keep(name: str, idx: tuple[int, ...]) -> bool:
        return only is None or bool(only[name][idx])

    for i in np.argwhere(~agree["tensor.player"][k]):
        (j,) = i
        if keep("tensor.player", (j,)):
            diffs.append(
                Diff(f"tensor.player.{PLAYER_NAMES[j]}", f"tensor.player[{j}]",
                     float(sw.player[j]), float(out["player"][k, j]))
            )  # fmt: skip
    for (j,) in np.argwhere(~agree["tensor.programs"][k]):
        if keep("tensor.programs", (j,)):
            diffs.append(
                Diff("tensor.programs", f"tensor.programs[{j}]",
                     float(sw.programs[j]), float(out["programs"][k, j]))
            )  # fmt: skip
    for r, c, ch in np.argwhere(~agree["tensor.grid"][k]):
        if keep("tensor.grid", (r, c, ch)):
            diffs.append(
                Diff(f"tensor.grid.{CHANNEL_NAMES[ch]}", f"tensor.grid[{r}][{c}][{ch}]",
                     float(sw.grid[r, c, ch]), float(out["grid"][k, r, c, ch]))
            )  # fmt: skip
    for (a,) in np.argwhere(~agree["mask"][k]):
        if keep("mask", (a,)):
            diffs.append(
                Diff(f"mask[{a}]", f"mask[{a}]", bool(sw.mask[a]), bool(out["mask"][k, a]))
            )
    if "reward" in agree:
        if not agree["reward"][k] and keep("reward", ()):
            diffs.append(Diff("reward", "reward", sw.reward, float(out["reward"][k])))
        for (j,) in np.argwhere(~agree["breakdown"][k]):
            if keep("breakdown", (j,)):
                name = REWARD_COMPONENTS[j]
                diffs.append(
                    Diff(f"breakdown.{name}", f"breakdown.{name}",
                         float(sw.breakdown[j]), float(out["breakdown"][k, j]))
                )  # fmt: skip
        if not agree["done"][k] and keep("done", ()):
            diffs.append(Diff("done", "done", sw.done, bool(out["done"][k])))
        for f in FLAGS:
            if not agree[f"info.{f}"][k] and keep(f"info.{f}", ()):
                diffs.append(Diff(f"info.{f}", f"info.{f}", sw.flags[f], bool(out[f][k])))
    for key, v in sw.extra_breakdown.items():
        diffs.append(Diff("breakdown.unknown_key", f"breakdown.{key}", v, None))
    return diffs


def determined(out: dict[str, np.ndarray], *, initial: bool = False) -> dict[str, np.ndarray]:
    """Elements on which all K candidates agree (the key cannot change them)."""

    def same(x: np.ndarray) -> np.ndarray:
        return (x == x[:1]).all(axis=0)

    d = {
        "tensor.player": same(out["player"]),
        "tensor.programs": same(out["programs"]),
        "tensor.grid": same(out["grid"]),
        "mask": same(out["mask"]),
    }
    if not initial:
        d["reward"] = same(out["reward"])
        d["breakdown"] = same(out["breakdown"])
        d["done"] = same(out["done"])
        for f in FLAGS:
            d[f"info.{f}"] = same(out[f])
    return d


def stage_invariants(obs: dict[str, Any], prev_stage: int, num_trans_before: int) -> list[str]:
    """Generation invariants of a freshly generated stage, checked on an observation (rules §10.2)."""
    bad: list[str] = []
    cells = obs["cells"]
    corners = [(0, 0), (0, 5), (5, 0), (5, 5)]
    pr, pc = obs["playerRow"], obs["playerCol"]
    if obs["stage"] != prev_stage + 1:
        bad.append(f"stage {obs['stage']} after completing {prev_stage}")
    if obs["turn"] != 0:
        bad.append(f"turn {obs['turn']} != 0")
    if obs.get("showActivated") or obs.get("scheduledTasksDisabled"):
        bad.append("SHOW/CALM not reset")
    exits = [(r, c) for r in range(6) for c in range(6) if cells[r][c]["isExit"]]
    if len(exits) != 1 or exits[0] not in corners or exits[0] == (pr, pc):
        bad.append(f"exit cells {exits} (player {(pr, pc)})")
    if (pr, pc) not in corners:
        bad.append(f"player {(pr, pc)} not on a corner")
    sip = [(r, c) for r in range(6) for c in range(6) if cells[r][c]["isDataSiphon"]]
    if sorted(sip) != sorted(x for x in corners if x not in exits and x != (pr, pc)):
        bad.append(f"data siphons at {sip}")
    blocks = [(r, c) for r in range(6) for c in range(6) if "block" in cells[r][c]]
    if not (5 <= len(blocks) <= 11 or len(blocks) == 0):
        bad.append(f"{len(blocks)} blocks")
    if any(b in corners for b in blocks):
        bad.append("block on a corner")
    progs = []
    for r, c in blocks:
        b = cells[r][c]["block"]
        if b["isSiphoned"] or cells[r][c].get("credits") or cells[r][c].get("energy"):
            bad.append(f"block {(r, c)} siphoned or with resources")
        if b["blockType"] == "data" and not (
            1 <= b.get("points", 0) <= 9 and b.get("transmissionSpawnCount") == b.get("points")
        ):
            bad.append(f"data block {(r, c)} points/spawn {b}")
        if b["blockType"] == "program":
            progs.append(b.get("programActionIndex"))
    if len(progs) != len(set(progs)):
        bad.append(f"repeated programs {progs}")
    for r in range(6):
        for c in range(6):
            cell = cells[r][c]
            if "block" in cell or cell["isExit"]:
                continue
            amount = cell.get("credits", 0) + cell.get("energy", 0)
            if not 1 <= amount <= 3 or ("credits" in cell and "energy" in cell):
                bad.append(f"resources at {(r, c)}: {amount}")
            if cell["siphonCenter"]:
                bad.append(f"siphon centre at {(r, c)}")
    n_trans = sum("transmission" in cells[r][c] for r in range(6) for c in range(6))
    if n_trans > num_trans_before + obs["stage"]:
        bad.append(f"{n_trans} transmission cells > {num_trans_before} + stage")
    return bad
