"""Evaluation summaries as text: aligned tables, one column per policy row (``hm-eval``, the
final evaluation of ``hm-train``). ``TERMS`` explains them (``hm-eval -h``)."""

from __future__ import annotations

from hackmatrix_train.search_config import SearchConfig

DEFAULT_CONSIDERED = SearchConfig().max_num_considered_actions


def format_table(summary: dict, title: str = "evaluation") -> str:
    """A plain-text table of one summary (``format_summaries``)."""
    return format_summaries([summary], title)


def _pct(x) -> str:
    return f"{100 * x:.1f} %"


def _with_se(s: dict, key: str, se_key: str, fmt) -> str:
    """``s[key]`` formatted, with ``± `` its standard error where the summary has one (a summary
    written before they were recorded has none)."""
    if se_key in s:
        return f"{fmt(s[key])} ± {fmt(s[se_key])}"
    return fmt(s[key])


TERMS = """\
the summary's terms:
  ± s.e.               one standard error of the mean over the episodes; the difference of two
                       rows of as many episodes has about 1.4 times it
  wins                 episodes that won the game (the victory bonus), by any route
  UNDO quirk           a stage completed from a board that UNDO restored across a stage change,
                       whose exit is not at the exit cell (rules §11.4); "episodes using the
                       UNDO quirk" have at least one such completion
  wins by the exit     wins of the episodes that never used the quirk
  completions          stages completed by the exit / through the UNDO quirk, all episodes
  unfinished           episodes the step limit cut while alive
  illegal move         episodes that ended on a move the game's mask refused (0 for a policy
                       that plays from the mask it sees)
  blocks siphoned      siphons that reached a block (the others took only credits, energy)
  programs acquired    programs gained by siphoning program blocks, per episode
  stage 3+ / 5+        episodes that reached stage 3 (5) or beyond
"""

# (label, the cell of a summary, or None where the summary lacks it); terms: TERMS
SUMMARY_ROWS = (
    ("episodes", lambda s: f"{s['episodes']}"),
    ("return, mean ± std", lambda s: f"{s['return_mean']:+.2f} ± {s['return_std']:.2f}"),
    ("return, min / max", lambda s: f"{s['return_min']:+.2f} / {s['return_max']:+.2f}"),
    ("length, mean", lambda s: f"{s['length_mean']:.1f}"),
    ("stage, mean ± s.e.", lambda s: _with_se(s, "stage_mean", "stage_se", "{:.2f}".format)),
    ("stage 3+ / 5+", lambda s: f"{_pct(s['stage_3plus_frac'])} / {_pct(s['stage_5plus_frac'])}"),
    ("wins ± s.e.", lambda s: _with_se(s, "win_rate", "win_rate_se", _pct)),
    ("wins by the exit", lambda s: _pct(s["win_rate_without_quirk"])),
    ("episodes using the UNDO quirk", lambda s: f"{s['episodes_using_the_quirk']}"),
    ("completions: exit / UNDO quirk",
     lambda s: f"{s['stage_completions_by_exit']} / {s['stage_completions_by_undo_quirk']}"),
    ("unfinished (step limit)", lambda s: f"{s['unfinished']}"),
    ("ended by an illegal move", lambda s: f"{s['episodes_ended_by_an_illegal_move']}"),
    ("moves / siphons / programs",
     lambda s: " / ".join(f"{100 * s[k]:.0f}%" for k in ("move_frac", "siphon_frac", "program_frac"))),
    ("siphons per episode", lambda s: f"{s['siphons_per_episode']:.2f}"),
    ("blocks siphoned per episode",
     lambda s: _with_se(s, "block_siphons_per_episode", "block_siphons_se", "{:.2f}".format)),
    ("programs acquired per episode",
     lambda s: _with_se(s, "programs_acquired_per_episode", "programs_acquired_se", "{:.2f}".format)),
    ("programs used per episode", lambda s: f"{s['programs_per_episode']:.2f}"),
    ("distinct programs used", lambda s: f"{s['distinct_programs_used']}"),
    ("ms per decision", lambda s: f"{1e3 * s['seconds_per_decision']:.2f}"),
    ("compile seconds", lambda s: f"{s['compile_seconds']:.1f}"),
)  # fmt: skip


def column_name(summary: dict) -> str:
    """A summary's column header: its policy, or its search's simulations and mode, and where
    they are not one tree and ``SearchConfig``'s considered actions, its trees (``2x4``: 2
    determinizations of 4 simulations) and considered actions, and a program bonus in its
    tree. A policy's run may carry other search settings than the protocol's (a learner's
    teacher): its rows say so."""
    search = summary.get("search")
    if not isinstance(search, dict):
        return str(summary.get("policy", "policy"))
    sims = search["num_simulations"]
    name = f"search {sims} {search['mode']}"
    trees = search.get("determinizations") or 1
    if trees > 1:
        name += f" {trees}x{sims // trees}"
    considered = search.get("max_num_considered_actions")
    if considered is not None and considered != DEFAULT_CONSIDERED:
        name += f", {considered} considered"
    if search.get("program_bonus"):  # the tree's reward is not the game's alone
        name += f", tree bonus {search['program_bonus']:g}"
        if search.get("program_bonus_from_stage", 1) > 1:
            name += f" from stage {search['program_bonus_from_stage']}"
        if not search.get("program_bonus_kept_at_death", True):
            name += " given back at death"
    if search.get("away_penalty"):
        name += f", away penalty {search['away_penalty']:g}"
    return name


def format_summaries(summaries: list[dict], title: str = "evaluation") -> str:
    """Summaries side by side, one column each, one aligned line per figure (``SUMMARY_ROWS``;
    a figure no summary has is left out), then each one's stages reached and program use."""
    names = [column_name(s) for s in summaries]
    lines = []
    for label, cell in SUMMARY_ROWS:
        cells = []
        for s in summaries:
            try:
                cells.append(cell(s))
            except KeyError:
                cells.append("-")
        if any(c != "-" for c in cells):
            lines.append((label, cells))
    width = max(len(label) for label, _ in lines)
    cols = [max(len(n), *(len(c[i]) for _, c in lines)) for i, n in enumerate(names)]
    out = [title, "-" * len(title)]
    out.append(" " * width + "".join(f"  {n:>{w}}" for n, w in zip(names, cols, strict=True)))
    out += [f"{label:<{width}}" + "".join(f"  {c:>{w}}" for c, w in zip(cells, cols, strict=True))
            for label, cells in lines]  # fmt: skip
    for name, s in zip(names, summaries, strict=True):
        stages = " ".join(f"{k}:{v}" for k, v in s["stage_distribution"].items())
        out.append(f"{name}: episodes ending at each stage  {stages}")
        if "program_use" in s:
            used = ", ".join(f"{k} {v}" for k, v in s["program_use"].items() if v) or "none"
            out.append(f"{name}: program use  {used}")
    return "\n".join(out)
