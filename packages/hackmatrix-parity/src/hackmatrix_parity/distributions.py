"""Distribution checks: Swift vs JAX over many samples of each random choice (rules §12).

Exact replay of a random step is impossible against an unseeded binary, so
these checks compare *distributions*: the same random situation is sampled
``n`` times on each side, the outcomes are tallied into categories, and a
chi-square test of homogeneity (2 x C contingency table) gives a p-value.
Where the spec fixes the distribution analytically (block count uniform on
5..11, resource amounts 0.45/0.45/0.10, uniform starting bonus, WARP uniform
over entities, POLY uniform over the three other types) each side is also
tested against it (goodness of fit).

Samples: stage generation at ``reset`` (our binary reseeded per sample, the
canonical one simply re-reset), WARP targets, POLY types, and the cells and
types of siphon-owed transmissions (SHOW on, so the JSON shows types).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from hackmatrix_parity.client import SwiftGame

ENEMY_TYPES = ("virus", "daemon", "glitch", "cryptog")


@dataclass
class DistResult:
    name: str
    swift: Counter
    jax: Counter
    p_homogeneity: float  # chi-square test Swift vs JAX
    p_swift_fit: float | None  # Swift vs the spec's analytic distribution
    p_jax_fit: float | None

    def row(self) -> str:
        fit = lambda p: "-" if p is None else f"{p:.3g}"  # noqa: E731
        return (
            f"{self.name:<28}{sum(self.swift.values()):>7}{sum(self.jax.values()):>7}"
            f"{self.p_homogeneity:>11.3g}{fit(self.p_swift_fit):>11}{fit(self.p_jax_fit):>11}"
        )


def homogeneity(a: Counter, b: Counter) -> float:
    """p-value of a chi-square test that two samples come from one distribution."""
    cats = sorted(set(a) | set(b), key=str)
    if len(cats) < 2:
        return 1.0
    table = np.array([[a[c] for c in cats], [b[c] for c in cats]], float)
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2:
        return 1.0
    return float(stats.chi2_contingency(table, correction=False).pvalue)


def goodness_of_fit(obs: Counter, expected: dict[Any, float]) -> float:
    """p-value of observed counts against expected probabilities (mass outside -> p = 0)."""
    n = sum(obs.values())
    if n == 0:
        return 1.0
    if any(k not in expected for k in obs):
        return 0.0
    keys = list(expected)
    f_obs = np.array([obs[k] for k in keys], float)
    f_exp = np.array([expected[k] for k in keys], float) * n
    return float(stats.chisquare(f_obs, f_exp).pvalue)


# ----------------------------------------------------------------------------- tallies from a JSON


def stage_stats(obs: dict[str, Any]) -> dict[str, list[Any]]:
    """Per-category observations of one freshly generated stage (rules §10)."""
    cells = obs["cells"]
    out: dict[str, list[Any]] = {
        "block_count": [], "block_kind": [], "data_points": [], "resource_amount": [],
        "resource_kind": [], "start_bonus": [], "exit_offset": [],
    }  # fmt: skip
    blocks = [cells[r][c]["block"] for r in range(6) for c in range(6) if "block" in cells[r][c]]
    if blocks:  # 0 = all 100 layouts failed: legal but ~4e-6 (rules §10.2), too rare to test
        out["block_count"].append(len(blocks))
    for b in blocks:
        out["block_kind"].append(b["blockType"])
        if b["blockType"] == "data":
            out["data_points"].append(b["points"])
    pr, pc = obs["playerRow"], obs["playerCol"]
    for r in range(6):
        for c in range(6):
            cell = cells[r][c]
            if "block" in cell or cell["isExit"] or (r, c) == (pr, pc):
                continue
            if "credits" in cell:
                out["resource_amount"].append(cell["credits"])
                out["resource_kind"].append("credits")
            elif "energy" in cell:
                out["resource_amount"].append(cell["energy"])
                out["resource_kind"].append("energy")
    if obs["stage"] == 1 and obs["turn"] == 0:
        bonus = (obs["credits"], obs["energy"], obs["dataSiphons"])
        out["start_bonus"].append({(10, 0, 0): "credits", (0, 11, 0): "energy",
                                   (0, 0, 1): "siphon"}.get(bonus, str(bonus)))  # fmt: skip
    ex = [(r, c) for r in range(6) for c in range(6) if cells[r][c]["isExit"]]
    if ex:
        out["exit_offset"].append(f"{abs(ex[0][0] - pr)},{abs(ex[0][1] - pc)}")
    return out


EXPECTED = {
    "block_count": {k: 1 / 7 for k in range(5, 12)},
    "block_kind": {"data": 0.45, "program": 0.45, "question": 0.10},
    "data_points": {k: 1 / 9 for k in range(1, 10)},
    "resource_amount": {1: 0.45, 2: 0.45, 3: 0.10},
    "resource_kind": {"credits": 0.5, "energy": 0.5},
    "start_bonus": {"credits": 1 / 3, "energy": 1 / 3, "siphon": 1 / 3},
    "exit_offset": {"0,5": 1 / 3, "5,0": 1 / 3, "5,5": 1 / 3},
}


def _tally(samples: Iterable[dict[str, list[Any]]]) -> dict[str, Counter]:
    out: dict[str, Counter] = {}
    for s in samples:
        for k, v in s.items():
            out.setdefault(k, Counter()).update(v)
    return out


# ----------------------------------------------------------------------------- scenarios

WARP_SCENARIO = {
    "player": {"row": 0, "col": 0, "credits": 9, "energy": 9},
    "ownedPrograms": [8],
    "scheduledTasksDisabled": True,
    "enemies": [
        {"type": "virus", "row": 3, "col": 3, "hp": 2},
        {"type": "daemon", "row": 3, "col": 3, "hp": 3},  # stacked: twice as likely
        {"type": "glitch", "row": 1, "col": 4, "hp": 1},
    ],
    "transmissions": [{"row": 4, "col": 1, "turnsRemaining": 2, "enemyType": "virus"}],
}
POLY_SCENARIO = {
    "player": {"row": 0, "col": 0, "credits": 9, "energy": 9},
    "ownedPrograms": [9],
    "showActivated": True,
    "enemies": [
        {"type": "daemon", "row": 3, "col": 3, "hp": 3},
        {"type": "virus", "row": 4, "col": 4, "hp": 1},
    ],
}
SIPHON_SCENARIO = {
    "player": {"row": 2, "col": 2, "dataSiphons": 1},
    "blocks": [{"row": 3, "col": 2, "type": "data", "points": 2}],
    "enemies": [{"type": "daemon", "row": 5, "col": 0, "hp": 3}],
    "showActivated": True,
    "scheduledTasksDisabled": True,
}


def warp_outcome(obs: dict[str, Any]) -> list[Any]:
    return [f"{obs['playerRow']},{obs['playerCol']}"]


def poly_outcome(obs: dict[str, Any]) -> list[Any]:
    out = []
    for r, c in ((3, 3), (4, 4)):
        e = obs["cells"][r][c].get("enemy")
        out.append(f"{r}{c}:{e['type']}/{e['hp']}" if e else f"{r}{c}:gone")
    return out


def siphon_outcome(obs: dict[str, Any]) -> list[Any]:
    out = []
    for r in range(6):
        for c in range(6):
            t = obs["cells"][r][c].get("transmission")
            if t is not None:
                out.append(f"cell{r},{c}")
                out.append(f"type:{t.get('enemyType')}")
    return out


# ----------------------------------------------------------------------------- samplers


def swift_reset_samples(game: SwiftGame, n: int, seed: int) -> list[dict[str, list[Any]]]:
    return [stage_stats(game.reset(seed=seed + i)) for i in range(n)]


def swift_step_samples(
    game: SwiftGame, sc: dict[str, Any], action: int, n: int, seed: int,
    outcome: Callable[[dict[str, Any]], list[Any]],
) -> list[list[Any]]:  # fmt: skip
    out = []
    for i in range(n):
        if game.extensions:
            game.reset(seed=seed + i)  # reseed our binary; setState keeps the generator
        game.set_state(sc)
        out.append(outcome(game.step(action)["observation"]))
    return out


def jax_reset_samples(n: int, seed: int) -> list[dict[str, list[Any]]]:
    import jax
    from hackmatrix_env.transition import reset_state
    from hackmatrix_env.types import EnvParams

    from hackmatrix_parity import jax_side

    keys = jax.random.split(jax.random.key(seed), n)
    states = jax.jit(jax.vmap(reset_state, in_axes=(0, None)))(keys, EnvParams())
    states = jax.device_get(states)
    return [
        stage_stats(jax_side.observation_json(jax.tree.map(lambda x, i=i: x[i], states)))
        for i in range(n)
    ]


def jax_step_samples(
    sc: dict[str, Any], action: int, n: int, seed: int,
    outcome: Callable[[dict[str, Any]], list[Any]],
    batch: int = 8, num_keys: int = 16,
) -> list[list[Any]]:  # fmt: skip
    """``n`` JAX outcomes of one step, all lanes of a shared stepper on the same state."""
    import jax

    from hackmatrix_parity import jax_side

    stepper = jax_side.get_stepper(batch, num_keys)
    state = jax_side.load_scenario(sc)
    states = stepper.stack([state] * batch)
    actions = np.full(batch, action)
    out: list[list[Any]] = []
    call = 0
    while len(out) < n:
        keys = jax_side.make_keys(seed, call, batch, num_keys)
        call += 1
        nxt, _ = stepper.step(states, actions, keys)
        host = jax.device_get(nxt)
        for b in range(batch):
            for k in range(num_keys):
                if len(out) < n:
                    out.append(outcome(jax_side.observation_json(jax_side.candidate(host, b, k))))
    return out


def run_distribution_checks(game: SwiftGame, n: int = 1000, seed: int = 0) -> list[DistResult]:
    """All checks; each ``DistResult`` has the two tallies and the p-values."""
    results = []
    sw = _tally(swift_reset_samples(game, n, seed))
    jx = _tally(jax_reset_samples(n, seed))
    for name in EXPECTED:
        a, b = sw.get(name, Counter()), jx.get(name, Counter())
        results.append(
            DistResult(
                f"stagegen.{name}",
                a,
                b,
                homogeneity(a, b),
                goodness_of_fit(a, EXPECTED[name]),
                goodness_of_fit(b, EXPECTED[name]),
            )
        )
    warp_expected = {"3,3": 0.5, "1,4": 0.25, "4,1": 0.25}
    poly_cases = [
        ("warp.target", WARP_SCENARIO, 8, warp_outcome, warp_expected),
        ("poly.types", POLY_SCENARIO, 9, poly_outcome, None),
        ("siphon_spawn.cells_types", SIPHON_SCENARIO, 4, siphon_outcome, None),
    ]
    for name, sc, action, outcome, expected in poly_cases:
        a = Counter(x for s in swift_step_samples(game, sc, action, n, seed, outcome) for x in s)
        b = Counter(x for s in jax_step_samples(sc, action, n, seed, outcome) for x in s)
        fit_a = goodness_of_fit(a, expected) if expected else None
        fit_b = goodness_of_fit(b, expected) if expected else None
        results.append(DistResult(name, a, b, homogeneity(a, b), fit_a, fit_b))
    return results


def format_results(results: list[DistResult]) -> str:
    head = (
        f"{'distribution':<28}{'swift':>7}{'jax':>7}{'p(same)':>11}{'p(swift)':>11}{'p(jax)':>11}"
    )
    return "\n".join([head, *(r.row() for r in results)])
