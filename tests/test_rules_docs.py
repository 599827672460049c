"""Every rules citation in the repository resolves to a heading of ``docs/rules/``.

Code, tests and notes cite the rules as ``rules §7.6``, ``rules.md §10.2``, ``programs §4.10``
or ``interface.md §3.5`` (the file name may sit in backticks). Each such citation must name a
numbered heading of ``docs/rules/rules.md``, ``programs.md`` or ``interface.md``: ``§4.2``
needs a heading numbered ``4.2``, ``§4`` a heading numbered ``4``. Ranges (``§4.5-4.9``,
``§2–§4``) and lists (``§2, §4``) are checked at every number they name. One level below a
subsection heading, ``§3.5.3`` names item ``3.`` of the numbered list in section 3.5, and
resolves if that section has such an item.

Which file a citation means:

* ``specs/programs.md §5`` (a ``specs/`` directory right before the name) is our design note
  and is checked against its own numbered headings;
* every other form, including a bare ``programs.md §2`` inside ``specs/``, means
  ``docs/rules/``. Our design notes therefore always cite themselves with the ``specs/``
  prefix.

A second test keeps the rules inside the repository: no tracked file outside ``.ci/``
points at the old out-of-tree copy of the spec.
"""

from __future__ import annotations

import re
from pathlib import Path

from repo_files import tracked_files

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "docs" / "rules"
DOCS = ("rules", "programs", "interface")
CITING_SUFFIXES = (".py", ".md", ".swift")

_NUM = r"\d+(?:\.\d+)*"
# `prefix/`? name(.md)? `? §N, then any number of "-N", "–§N", ", §N", " and §N".
CITATION = re.compile(
    r"(?P<prefix>[\w./-]*/)?(?<![\w-])(?P<doc>rules|programs|interface)(?:\.md)?`?\s*§\s*"
    rf"(?P<first>{_NUM})(?P<more>(?:\s*(?:[-–]\s*§?|,\s*§|\s(?:and|or)\s+§)\s*{_NUM})*)"
)
MORE = re.compile(_NUM)
HEADING = re.compile(r"^#{1,6}\s+(?P<num>\d+(?:\.\d+)*)\.?(?:\s|$)")
LIST_ITEM = re.compile(r"^(?P<item>\d+)\.\s")

# Written in pieces so that this file does not match itself.
OLD_SPEC = "shared" + "/spec"


def section_numbers(path: Path) -> set[str]:
    """What ``path`` lets a citation name: its heading numbers (``## 4. X`` gives 4,
    ``### 4.2 Y`` 4.2) and the numbered list items of its subsections (item ``3.`` of
    section 3.5 gives 3.5.3; a top-level section's items are not numbers, or ``§3.1`` would
    pass as step 1 of section 3)."""
    numbers = set()
    section = None
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        elif in_fence:
            continue
        elif m := HEADING.match(line):
            section = m["num"]
            numbers.add(section)
        elif section and "." in section and (m := LIST_ITEM.match(line)):
            numbers.add(f"{section}.{m['item']}")
    return numbers


def citations(text: str) -> list[tuple[int, str, str, str]]:
    """``(line, prefix, doc, section)`` for every section number cited in ``text``."""
    found = []
    for m in CITATION.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        prefix = m["prefix"] or ""
        for sec in [m["first"], *MORE.findall(m["more"])]:
            found.append((line, prefix, m["doc"], sec))
    return found


def target(prefix: str, doc: str) -> Path:
    """The file a citation points at (see the module docstring)."""
    if prefix.endswith("specs/") and doc == "programs":
        return ROOT / "specs" / "programs.md"
    return RULES / f"{doc}.md"


def test_citation_regex_reads_the_usual_forms():
    text = (
        "rules §4.2; `rules.md` §10.2 G4; interface.md §3.5 / programs §4.5-4.9, §4.17–4.23;\n"
        "programs.md §2-§4 and specs/programs.md §5; (interface §2.2) ++ siphon (§2.3)."
    )
    got = [(p, d, s) for _, p, d, s in citations(text)]
    assert got == [
        ("", "rules", "4.2"),
        ("", "rules", "10.2"),
        ("", "interface", "3.5"),
        ("", "programs", "4.5"),
        ("", "programs", "4.9"),
        ("", "programs", "4.17"),
        ("", "programs", "4.23"),
        ("", "programs", "2"),
        ("", "programs", "4"),
        ("specs/", "programs", "5"),
        ("", "interface", "2.2"),
    ]
    assert target("specs/", "programs") == ROOT / "specs" / "programs.md"
    assert target("", "programs") == RULES / "programs.md"
    assert [s for *_, s in citations("interface §3.5.3")] == ["3.5.3"]
    assert {"3.5", "3.5.3"} <= section_numbers(RULES / "interface.md")
    assert "3.1" not in section_numbers(RULES / "rules.md")  # step 1 of §3 is no section


def test_every_rules_citation_resolves():
    for doc in DOCS:
        assert (RULES / f"{doc}.md").is_file(), f"docs/rules/{doc}.md is missing"
    headings: dict[Path, set[str]] = {}
    unresolved = []
    count = 0
    for name in tracked_files():
        path = ROOT / name
        if not name.endswith(CITING_SUFFIXES) or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for line, prefix, doc, sec in citations(text):
            count += 1
            file = target(prefix, doc)
            if file not in headings:
                headings[file] = section_numbers(file)
            if sec not in headings[file]:
                rel = file.relative_to(ROOT)
                unresolved.append(f"{name}:{line}: {prefix}{doc} §{sec} (no heading in {rel})")
    assert count > 100, f"only {count} citations found: is the pattern still right?"
    assert not unresolved, "rules citations without a heading:\n" + "\n".join(unresolved)


def test_no_tracked_file_points_at_the_old_spec_copy():
    found = []
    for name in tracked_files():
        path = ROOT / name
        if name.startswith(".ci/") or not path.is_file():
            continue
        raw = path.read_bytes()
        if b"\0" in raw[:8192]:
            continue
        for number, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), 1):
            if OLD_SPEC in line:
                found.append(f"{name}:{number}: {line.strip()[:100]}")
    assert not found, f"tracked files still point at {OLD_SPEC} (use docs/rules/):\n" + "\n".join(
        found
    )
