"""The import DAG of ``hackmatrix_env`` (style.md §2), checked by parsing every module."""

from __future__ import annotations

import ast
from pathlib import Path

import hackmatrix_env
import pytest

PKG = Path(hackmatrix_env.__file__).parent

LAYER = {
    "constants": 0,
    "devices": 0,  # jax only: importable before anything starts a JAX backend
    "gymnax_base": 0,  # gymnax's environment and spaces modules, without gymnax's package
    "eager": 0,  # jax only: the env methods' quick compile for eager calls
    "types": 1,
    "action_set": 1.5,  # the agent's action set (mask narrowing): constants and types only
    "rng": 1,  # the counter-based random stream (twin of Rng.swift): jax only
    "board": 1.5,  # base of layer 2: "shared helpers move down to board.py" (style.md §2)
    "batching": 1.6,  # vmap helpers over board.select_tree, used by layers 3-6
    "pathfinding": 2,
    "placement": 2,
    "history": 2,
    "movement": 3,
    "siphon": 3,
    "enemies": 3,
    "programs": 3,
    "mask": 4,
    "stage": 4,
    "reward": 4,
    "observation": 4,
    "hidden": 4,  # the hidden parts of a state re-drawn, for planners (interface §3.5)
    "game": 5,
    "transition": 5.5,  # one env-state transition (game step + UNDO ring), for env and jumanji
    "env": 6,
    "jumanji": 6,
    "adapters": 7,  # gymnax wrappers over env
    "vector": 7,  # key-chained batched reset/step over env
    "gymnasium": 8,  # Gymnasium envs over vector
}
SIDE = {"scenario", "render", "viewer", "argparsing"}  # host-side: layers 0-1 plus observation/mask
# The adapters' host-only render methods import the viewer inside the method.
RENDER_HOOKS = {("env", "viewer"), ("jumanji", "viewer")}
TOOLS = {"__init__"}  # entry points: may import any layer, never jumanji
SAME_LAYER_ALLOWED = {("programs", "history"), ("observation", "mask")}
# Host-side adapters (never jitted) may use the host-side renderer.
SIDE_IMPORTERS = {"gymnasium"}
# Third-party frameworks: each is imported by its own adapter module only (optional extras).
FRAMEWORK_ADAPTER = {"jumanji": "jumanji", "gymnasium": "gymnasium"}


def _package_imports(path: Path) -> set[str]:
    """Sibling modules imported by ``path`` (absolute or relative, at any depth)."""
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 or (node.module or "").startswith("hackmatrix_env"):
                mod = (node.module or "").removeprefix("hackmatrix_env").lstrip(".")
                if mod:
                    out.add(mod.split(".")[0])
                else:  # from hackmatrix_env import x
                    out.update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("hackmatrix_env."):
                    out.add(a.name.split(".")[1])
    return out


def _external_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


MODULES = sorted(p.stem for p in PKG.glob("*.py"))


def test_every_module_is_classified():
    unknown = set(MODULES) - set(LAYER) - SIDE - TOOLS
    assert not unknown, f"add {unknown} to the layer table of style.md §2 and this test"


def test_every_classified_module_exists():
    """A module that is renamed or removed leaves the tables too (no stale names)."""
    named = set(LAYER) | SIDE | TOOLS | {m for pair in SAME_LAYER_ALLOWED for m in pair}
    named |= (
        {m for pair in RENDER_HOOKS for m in pair}
        | SIDE_IMPORTERS
        | set(FRAMEWORK_ADAPTER.values())
    )
    assert named <= set(MODULES), f"no such module: {sorted(named - set(MODULES))}"


@pytest.mark.parametrize("module", MODULES)
def test_import_edges_follow_layers(module):
    deps = _package_imports(PKG / f"{module}.py") - {module}
    assert deps <= set(LAYER) | SIDE | TOOLS, deps
    if module in SIDE:
        allowed = {m for m, layer in LAYER.items() if layer <= 1} | {"observation", "mask"}
        assert deps <= allowed, f"{module} imports {deps - allowed}"
        return
    if module in TOOLS:
        assert not deps & SIDE or module == "__init__"
        return
    hooks = {d for m, d in RENDER_HOOKS if m == module}
    for dep in deps:
        if dep in SIDE:
            assert dep in hooks or module in SIDE_IMPORTERS, (
                f"{module} (layer {LAYER[module]}) imports side module {dep}"
            )
            continue
        lower = LAYER[dep] < LAYER[module]
        assert lower or (module, dep) in SAME_LAYER_ALLOWED, (
            f"{module} (layer {LAYER[module]}) imports {dep} (layer {LAYER[dep]})"
        )


@pytest.mark.parametrize("module", MODULES)
@pytest.mark.parametrize("framework", sorted(FRAMEWORK_ADAPTER))
def test_only_the_adapter_imports_its_framework(module, framework):
    uses = framework in _external_imports(PKG / f"{module}.py")
    assert uses == (module == FRAMEWORK_ADAPTER[framework])


# The sparse scheduler (batching.compute_where, ragged_fori_loop) is named by the step
# pipeline and the env shell only; the rule modules take a loop or a sparse evaluation as an
# argument where they have one (enemies.move_enemies, enemies.place_scheduled_and_owed).
SCHEDULER_USERS = {"game", "env"}


def test_only_the_pipeline_and_the_shell_import_the_batching_machinery():
    users = {m for m in MODULES if "batching" in _package_imports(PKG / f"{m}.py") - {m}}
    assert users == SCHEDULER_USERS, users


def test_package_init_does_not_pull_in_jumanji():
    # gymnasium and matplotlib are not checked: gymnax itself imports both.
    import subprocess
    import sys

    code = "import sys, hackmatrix_env; hackmatrix_env.HackMatrix; print('jumanji' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert set(hackmatrix_env.__all__) >= {"HackMatrix", "EnvState", "EnvParams", "Observation"}
