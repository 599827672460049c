"""gymnax's ``environment`` and ``spaces`` modules, loaded without gymnax's package import.

``from gymnax.environments import environment`` first runs ``gymnax/__init__`` and
``gymnax/environments/__init__``, which import every bundled environment and through them
seaborn, pandas, scipy and matplotlib; the game needs two modules of plain jax and flax.
``gymnax_module`` executes such a module's file under its own name
(``gymnax.environments.environment``) and registers it in ``sys.modules`` as the import system
would, so:

- the classes are gymnax's own: ``HackMatrix`` is a ``gymnax.environments.environment.Environment``;
- a later ``import gymnax`` (the adapters, a user's own code) runs gymnax's ``__init__`` as
  usual and finds these modules already loaded: one class object either way;
- once gymnax is imported, or the module loaded, it is returned as it is.

The measured gain (``hm-bench import-start``) is in specs/env-shell.md §7.13.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def gymnax_module(name: str) -> ModuleType:
    """``gymnax.environments.<name>``, executed alone when neither it nor gymnax is loaded."""
    full = f"gymnax.environments.{name}"
    if full in sys.modules:
        return sys.modules[full]
    if "gymnax" in sys.modules:  # gymnax's own import has run or is running: go through it
        return importlib.import_module(full)
    package = importlib.util.find_spec("gymnax")  # finds the package without running it
    if package is None or not package.submodule_search_locations:
        raise ImportError("hackmatrix_env needs gymnax (pip install gymnax)")
    path = Path(next(iter(package.submodule_search_locations))) / "environments" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(full, path)
    if not path.is_file() or spec is None or spec.loader is None:
        raise ImportError(f"gymnax has no module {full} (no file {path})")
    module = importlib.util.module_from_spec(spec)
    sys.modules[full] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[full]
        raise
    return module


environment = gymnax_module("environment")
spaces = gymnax_module("spaces")
