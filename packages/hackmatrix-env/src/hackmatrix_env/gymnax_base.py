"""gymnax's ``environment`` and ``spaces`` modules, loaded without gymnax's package import.

``from gymnax.environments import environment`` first runs ``gymnax/__init__`` and
``gymnax/environments/__init__``, which import every bundled environment and through them
seaborn, pandas, scipy and matplotlib; the game needs two modules of plain jax and flax.
``gymnax_module`` executes such a module's file under its own name
(``gymnax.environments.environment``) and registers it in ``sys.modules`` as the import system
would, so:

- the classes are gymnax's own: ``HackMatrix`` is a ``gymnax.environments.environment.Environment``;
- a later ``import gymnax`` (the adapters, a user's own code) runs gymnax's ``__init__`` as
  usual and finds these modules already loaded: one class object either way. The import
  system binds a submodule to its package only when it loads the submodule itself, so a
  one-shot finder (``_BindLoaded``) binds the loaded ones to ``gymnax.environments`` when
  gymnax's import creates it (``gymnax.environments.spaces`` is read by rejax, say);
- once gymnax is imported, or the module loaded, it is returned as it is.

The measured gain (``hm-bench import-start``) is in specs/env-shell.md §7.13.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

PACKAGE = "gymnax.environments"


class _BindLoaded(importlib.abc.MetaPathFinder):
    """Finds ``gymnax.environments`` as the path finder does, and has its loader set the
    submodules already in ``sys.modules`` as the package's attributes before it runs the
    package's ``__init__``. Removes itself after its one use."""

    def find_spec(self, name, path=None, target=None):
        if name != PACKAGE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _BindingLoader(spec.loader)
        return spec


class _BindingLoader(importlib.abc.Loader):
    """``loader``, with the loaded submodules bound to the package before it executes."""

    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name: str):  # get_source, get_filename, ...: the real loader's
        if name == "_loader":
            raise AttributeError(name)
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        for full, loaded in list(sys.modules.items()):
            if full.startswith(PACKAGE + ".") and "." not in full[len(PACKAGE) + 1 :]:
                setattr(module, full[len(PACKAGE) + 1 :], loaded)
        self._loader.exec_module(module)


def gymnax_module(name: str) -> ModuleType:
    """``gymnax.environments.<name>``, executed alone when neither it nor gymnax is loaded."""
    full = f"{PACKAGE}.{name}"
    if full in sys.modules:
        return sys.modules[full]
    if "gymnax" in sys.modules:  # gymnax's own import has run or is running: go through it
        return importlib.import_module(full)
    if not any(isinstance(f, _BindLoaded) for f in sys.meta_path):
        sys.meta_path.insert(0, _BindLoaded())
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
