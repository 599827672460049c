"""The tracked text files name no absolute path of a particular machine.

A committed file that names a home directory or a checkpoint path under a temp dir is
meaningful on one box only, and leaks how it was made. Every file ``git ls-files``
lists is read (binary files, detected by a NUL byte, are skipped); a finding names
``file:line`` and the path. ``/tmp/...`` is allowed in code and prose (an example
command may write there) but not in data files, where it is a recorded path.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from repo_files import tracked_files

ROOT = Path(__file__).resolve().parents[1]

# Written in pieces so that this file does not match itself.
_HOME = r"/(?:home|Users)/(?!<)[A-Za-z0-9_.-]+/"
_MACHINE_ROOTS = "/" + r"(?:work|root|private/var|var/folders|mnt/c/Users)/"
MACHINE_PATH = re.compile(r"(?<![\w.~-])(?:" + _HOME + "|" + _MACHINE_ROOTS + ")")
TMP_PATH = re.compile(r"(?<![\w.~-])/" + r"tmp/")
DATA_SUFFIXES = {".json", ".jsonl", ".csv", ".txt", ".log", ".yaml", ".yml", ".toml"}


def machine_paths(name: str, text: str) -> list[str]:
    """``file:line: path`` for every absolute machine path in ``text`` (file ``name``)."""
    data = Path(name).suffix in DATA_SUFFIXES
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        hit = MACHINE_PATH.search(line) or (data and TMP_PATH.search(line))
        if hit:
            found.append(f"{name}:{number}: {line[hit.start() : hit.start() + 60].strip()}")
    return found


def test_no_tracked_file_names_a_machine_path():
    found = []
    for name in tracked_files():
        path = ROOT / name
        if not path.is_file():  # deleted in the working tree, not yet committed
            continue
        raw = path.read_bytes()
        if b"\0" in raw[:8192]:
            continue
        found += machine_paths(name, raw.decode("utf-8", errors="replace"))
    assert not found, "absolute machine paths in tracked files:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("name", "text", "hits"),
    [
        ("a.json", '{"checkpoint": "/' + 'work/notes/ck"}', 1),
        ("a.md", "see /" + "root/out/x.csv", 1),
        ("a.py", "p = '/" + "home/alice/run'", 1),
        ("a.md", "open /" + "Users/bob/Desktop", 1),
        ("a.txt", "wrote /" + "tmp/s3/curves.csv", 1),
        ("a.py", "git worktree add /" + "tmp/base", 0),
        ("a.md", "relative packages/work/x and ~/.cache/hackmatrix", 0),
        ("a.md", "a URL https://example.org/" + "home/alice/ is not a path", 0),
    ],
)
def test_detector(name, text, hits):
    assert len(machine_paths(name, text)) == hits


CITING = (
    "README.md",
    "specs/*.md",
    "docs/**/*.md",
    "experiments/**/*.md",
    "benchmarks/README.md",
    "tests/**/*.py",
)


def cited_patterns() -> list[str]:
    """Every ``docs/...`` path named in the README, specs, docs pages or tests (``*`` kept)."""
    found = []
    for pattern in CITING:
        for path in ROOT.glob(pattern):
            found += re.findall(r"docs/[\w./*{},-]+\w\*?", path.read_text(encoding="utf-8"))
    return found


def is_cited(name: str, patterns: list[str]) -> bool:
    """``name`` (a tracked path) matches a cited path, a glob like ``docs/train/grid_12m_*``
    or a cited folder."""
    for pattern in patterns:
        regex = re.escape(pattern.rstrip("/")).replace(r"\*", "[^/]*")
        if re.fullmatch(regex, name) or name.startswith(pattern.rstrip("/") + "/"):
            return True
    return False


def test_every_file_in_docs_is_cited():
    patterns = cited_patterns()
    docs = [n for n in tracked_files() if n.startswith("docs/") and (ROOT / n).is_file()]
    uncited = [n for n in docs if not n.startswith("docs/rules/") and not is_cited(n, patterns)]
    assert not uncited, "files under docs/ that nothing cites:\n" + "\n".join(uncited)


def test_citation_matching():
    patterns = ["docs/train/grid_12m_*", "docs/bench/", "docs/a.json"]
    assert is_cited("docs/train/grid_12m_curve.png", patterns)
    assert is_cited("docs/bench/x.txt", patterns)
    assert is_cited("docs/a.json", patterns)
    assert not is_cited("docs/train/other.png", patterns)
    assert not is_cited("docs/a.json.bak", patterns)


# Markdown whose relative links and cited repository paths must resolve (docs/rules/ has its
# own test, tests/test_rules_docs.py).
LINKING = ("README.md", "specs/*.md", "docs/*.md", "docs/results/*.md", "experiments/**/*.md",
           "policies/README.md", "benchmarks/README.md")  # fmt: skip
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
CITED_PATH = re.compile(r"(?<![\w./-])((?:docs|experiments)/[\w./*-]*[\w*])(?![{\w])")


def broken_references(name: str, text: str) -> list[str]:
    """``file: target`` for each relative link or cited ``docs/`` or ``experiments/`` path
    (a glob like ``experiments/train/grid_12m_*`` allowed) in ``text`` (file ``name``) that
    names nothing in the checkout."""
    base = (ROOT / name).parent
    broken = []
    for target in LINK.findall(text):
        external = "://" in target or target.startswith("mailto:")
        if not external and not (base / target).exists():
            broken.append(f"{name}: {target}")
    for cited in CITED_PATH.findall(text):
        if "<" in cited or "{" in cited:
            continue
        if not any(ROOT.glob(cited)) and not (ROOT / cited).exists():
            broken.append(f"{name}: {cited}")
    return broken


def test_every_link_and_cited_path_resolves():
    found = []
    for pattern in LINKING:
        for path in sorted(ROOT.glob(pattern)):
            name = str(path.relative_to(ROOT))
            found += broken_references(name, path.read_text(encoding="utf-8"))
    assert not found, "links or paths that name nothing:\n" + "\n".join(found)
