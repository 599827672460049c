"""``search_bonus.py``'s JSON files as one table: each run's rows per key, and their means.

Every file holds one checkpoint's greedy row and its search rows on one key's games
(``search_bonus.py --json F``). This prints, per run and key, wins, mean stage, games ended in
stages 1-2, programs acquired and blocks siphoned per game for each row; then each run's and
all runs' means over ``--keys`` (the protocol's 0, 1 and 13 by default) for the rows every one
of those keys has. ``--json OUT`` writes the rows as one record (``results/summary_*.json``).
Two files of the same run and key hold the same greedy games (same key, same trajectory), so
a later file's greedy row replaces an earlier one's.

    uv run python experiments/bonus_table.py runs/sb_*.json --keys 0 1 13
    uv run python experiments/bonus_table.py runs/sb_*.json --json results/summary_x.json \
        --what "..." --meta train="uv run hm-train ..." box=amd-epyc
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

# The figures of a row the record keeps (``policy.evaluate_checkpoint``'s summary keys)
RECORD_KEYS = (
    "block_siphons_per_episode", "block_siphons_se", "data_blocks_siphoned_per_episode",
    "episodes", "episodes_at_step_limit", "episodes_ended_by_an_illegal_move", "length_mean",
    "program_blocks_siphoned_per_episode", "programs_acquired_per_episode",
    "programs_acquired_se", "return_mean", "stage_3plus_frac", "stage_5plus_frac",
    "stage_distribution", "stage_mean", "stage_se", "win_rate", "win_rate_se",
)  # fmt: skip


def row_name(search: dict | None) -> str:
    """``greedy``, or ``search_32_honest_4x8[_tree_bonus_B[_from_stage_S][_given_back]]`` from
    a row's search settings (simulations, mode, trees x simulations per tree, the tree's bonus,
    given back at death)."""
    if search is None:
        return "greedy"
    sims, trees = search["num_simulations"], search.get("determinizations", 1)
    name = f"search_{sims}_{search['mode']}_{trees}x{sims // trees}"
    bonus = search.get("program_bonus", 0.0)
    first = search.get("program_bonus_from_stage") or 1  # older records: None
    if bonus:
        name += f"_tree_bonus_{bonus:g}" + (f"_from_stage_{first}" if first > 1 else "")
        if not search.get("program_bonus_kept_at_death", True):
            name += "_given_back"
    return name


def training_seed(run: str) -> int | None:
    """The seed in a run directory's name (``guided-...-s4-hour-...``), None without one."""
    found = re.search(r"-s(\d+)-", run + "-")
    return int(found.group(1)) if found else None


def load_rows(paths: list[str]) -> dict[tuple[str, int], dict[str, dict]]:
    """``{(run, key): {row name: summary}}`` from ``search_bonus.py`` JSON files."""
    table: dict[tuple[str, int], dict[str, dict]] = {}
    for path in paths:
        try:
            record = json.loads(Path(path).read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise SystemExit(f"bonus_table.py: {path}: not a readable JSON file ({e})") from None
        if not isinstance(record, dict) or not {"checkpoint", "seed", "summary"} <= set(record):
            raise SystemExit(
                f"bonus_table.py: {path}: not search_bonus.py's record (its --json writes the "
                "checkpoint, the key and the summary)"
            )
        run = Path(record["checkpoint"] or "the-shipped-agent").name
        summary = record["summary"]
        rows = table.setdefault((run, record["seed"]), {})
        rows["greedy"] = summary
        for row in summary["search"]:
            rows[row_name(row["search"])] = row
    return table


def record_row(run: str, key: int, name: str, row: dict) -> dict:
    """One row of the ``--json`` record: where it comes from and ``RECORD_KEYS``' figures."""
    where = {"seed": training_seed(run), "key": key, "run": run, "row": name}
    return {**where, **{k: row[k] for k in RECORD_KEYS}}


def early_ends(row: dict) -> int:
    """Games that ended in stage 1 or 2."""
    stages = row["stage_distribution"]
    return stages.get("1", 0) + stages.get("2", 0)


FIGURES = {
    "wins %": lambda r: 100 * r["win_rate"],
    "stage": lambda r: r["stage_mean"],
    "ends 1-2": early_ends,
    "programs": lambda r: r["programs_acquired_per_episode"],
    "blocks": lambda r: r["block_siphons_per_episode"],
}


def line(label: str, rows: list[dict]) -> str:
    """One table line: each figure's mean over ``rows``."""
    means = [sum(f(r) for r in rows) / len(rows) for f in FIGURES.values()]
    return f"{label:84s} " + " ".join(f"{m:8.2f}" for m in means)


def means_over(table, runs: list[str], keys: list[int]) -> dict[str, list[dict]]:
    """``{row name: rows}`` over ``runs`` x ``keys`` for the rows every pair has."""
    pairs = [table.get((run, key), {}) for run in runs for key in keys]
    names = set.intersection(*(set(rows) for rows in pairs)) if pairs else set()
    return {name: [rows[name] for rows in pairs] for name in sorted(names)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+", help="search_bonus.py --json files")
    p.add_argument("--keys", type=int, nargs="+", default=[0, 1, 13],
                   help="the keys the means run over")  # fmt: skip
    p.add_argument("--json", default=None, help="write the rows as one record here")
    p.add_argument("--what", default="", help="the record's description")
    p.add_argument("--meta", nargs="*", default=[], metavar="KEY=TEXT",
                   help="more fields of the record (train=..., evaluate=..., box=...)")  # fmt: skip
    args = p.parse_args()
    if bad := [item for item in args.meta if "=" not in item]:
        p.error(f"--meta takes KEY=TEXT, got {bad[0]!r}")
    table = load_rows(args.files)
    print(f"{'run, key, row':84s} " + " ".join(f"{h:>8s}" for h in FIGURES))
    for (run, key), rows in sorted(table.items()):
        for name, row in rows.items():
            print(line(f"{run} k{key} {name}", [row]))
    runs = sorted({run for run, _ in table})
    print(f"\nmeans over keys {', '.join(map(str, args.keys))}")
    for group in [[run] for run in runs] + ([runs] if len(runs) > 1 else []):
        label = group[0] if len(group) == 1 else f"all {len(group)} runs"
        for name, rows in means_over(table, group, args.keys).items():
            print(line(f"{label} {name}", rows))
    if args.json:
        rows = [
            record_row(run, key, name, row)
            for (run, key), named in sorted(table.items())
            for name, row in named.items()
        ]
        meta = dict(item.split("=", 1) for item in args.meta)
        record = {"what": args.what, **meta, "rows": rows}
        Path(args.json).write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
