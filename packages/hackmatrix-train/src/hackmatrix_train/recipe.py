"""Recipes: TOML files of a config's differences from ``TrainConfig``'s defaults.

``hm-train --recipe NAME`` takes a recipe shipped with the package (``recipes/NAME.toml``:
``depth``, ``guided``, ``hour``, ``programs``, ``reference``), ``--recipe FILE`` any file. A key
is a ``TrainConfig`` field or a search flag's name (``search_config.SEARCH_FLAGS``); a ``[search]``
table takes ``SearchConfig`` field names. ``base = "NAME"`` starts from another recipe (a shipped
name, or a file beside this one) and overrides its keys, so a recipe states only how it differs
from the one it refines. An unknown key is an error that suggests the close field name.
"""

from __future__ import annotations

import difflib
import tomllib
import types
import typing
from pathlib import Path

from hackmatrix_train.config import (
    SEARCH_FLAGS,
    TrainConfig,
    has_program_term,
    replace_search,
)
from hackmatrix_train.search_config import SearchConfig

SHIPPED = Path(__file__).resolve().parent / "recipes"  # the recipes in the package
NOT_RECIPE_FIELDS = frozenset({"notes", "resume", "rewind", "search"})
BASE_KEY = "base"  # a recipe's key naming the recipe it refines


def shipped_recipes() -> tuple[str, ...]:
    """The names ``--recipe`` accepts besides a file path."""
    return tuple(sorted(p.stem for p in SHIPPED.glob("*.toml")))


def recipe_path(name_or_path: str | Path) -> Path:
    """A shipped recipe's file for its name, else the path given."""
    shipped = SHIPPED / f"{name_or_path}.toml"
    return shipped if str(name_or_path) in shipped_recipes() else Path(name_or_path)


def _field_types() -> dict[str, tuple[type, ...]]:
    """Each recipe key's accepted TOML value types (``None`` for an optional one)."""
    hints = {**typing.get_type_hints(TrainConfig)}
    search_hints = typing.get_type_hints(SearchConfig)
    hints.update({flag: search_hints[name] for flag, name in SEARCH_FLAGS.items()})
    out = {}
    for name, hint in hints.items():
        if name in NOT_RECIPE_FIELDS:
            continue
        args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        out[name] = tuple(typing.get_origin(a) or a for a in args)
    return out


def unknown_key(key: str, known) -> str:
    """``'key' is not a recipe field``, with the close name when there is one."""
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    if not close:  # "learning_rate" -> "lr": match the initials of the words too
        initials = "".join(w[0] for w in key.split("_") if w)
        close = [k for k in sorted(known) if k == initials or k.replace("_", "") == initials]
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"{key!r} is not a recipe field{hint}"


def load_recipe(path: str | Path, _refining: tuple[Path, ...] = ()) -> dict:
    """The settings of a recipe (a shipped name or a file): ``field = value`` for each field that
    differs from the defaults, keyed as flags are (search settings by ``SEARCH_FLAGS``' names),
    its ``base`` recipe's settings first. TOML has no null: the string ``"none"`` sets an
    optional field to ``None``. An unknown key, a value of the wrong type or a ``base`` that
    cannot be read or refines itself is a ``ValueError``."""
    path = recipe_path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ValueError(f"cannot read recipe {path}: {e}") from None
    inherited = {}
    if BASE_KEY in raw:
        inherited = _base_settings(path, raw.pop(BASE_KEY), _refining)
    table = raw.pop("search", {})  # [search]: SearchConfig field names
    flag_of = {v: k for k, v in SEARCH_FLAGS.items()}
    for key, value in table.items() if isinstance(table, dict) else [("search", table)]:
        if key not in flag_of:
            raise ValueError(f"recipe {path}: [search] {unknown_key(key, flag_of)}")
        if flag_of[key] in raw:
            raise ValueError(f"recipe {path}: {flag_of[key]} and [search] {key} both given")
        raw[flag_of[key]] = value
    kinds = _field_types()
    recipe = {}
    for key, value in raw.items():
        if key not in kinds:
            raise ValueError(f"recipe {path}: {unknown_key(key, kinds)}")
        allowed = kinds[key]
        if value == "none" and type(None) in allowed:
            value = None
        elif isinstance(value, list) and tuple in allowed:
            value = tuple(value)
        elif isinstance(value, int) and not isinstance(value, bool) and float in allowed:
            value = float(value)
        if not isinstance(value, allowed):
            raise ValueError(f"recipe {path}: {key} = {raw[key]!r} is not a {allowed}")
        recipe[key] = value
    try:  # a bad search value fails here, naming its flag
        replace_search(SearchConfig(), {k: v for k, v in recipe.items() if k in SEARCH_FLAGS})
    except ValueError as e:
        raise ValueError(f"recipe {path}: {e}") from None
    return {**inherited, **recipe}


def _base_settings(path: Path, base, refining: tuple[Path, ...]) -> dict:
    """The settings of the recipe ``path`` names as its ``base``: a shipped name, else a file
    relative to ``path``'s folder."""
    if not isinstance(base, str) or not base:
        raise ValueError(f"recipe {path}: {BASE_KEY} = {base!r} is not a recipe name or file")
    base_path = recipe_path(base) if base in shipped_recipes() else path.parent / base
    chain = (*refining, path.resolve())
    if base_path.resolve() in chain:
        names = " -> ".join(p.name for p in (*chain, base_path))
        raise ValueError(f"recipe {path}: its bases refine themselves ({names})")
    return load_recipe(base_path, chain)


def apply_recipe(
    cfg: TrainConfig, recipe: dict, explicit: frozenset[str] = frozenset()
) -> TrainConfig:
    """``cfg`` with ``recipe``'s values for every field not in ``explicit`` (flags given), then
    the settings that a value given (by a flag or by the recipe) switches off:

    * a ``total_timesteps`` given replaces the time budget (unless one is given too);
    * ``explore_floor`` 0 drops the floor's anneal and ramp;
    * no program term left drops ``program_terms_skip_undo``.
    """
    cfg = cfg.replace(**{k: v for k, v in recipe.items() if k not in explicit})
    given = explicit | set(recipe)
    if "total_timesteps" in given and "time_budget" not in given:
        cfg = cfg.replace(time_budget=None)
    if cfg.explore_floor == 0 and "explore_floor_end" not in given:
        cfg = cfg.replace(explore_floor_end=None)
    if cfg.explore_floor == 0 and "explore_floor_ramp" not in given:
        cfg = cfg.replace(explore_floor_ramp=0.0)
    if not has_program_term(cfg) and "program_terms_skip_undo" not in given:
        cfg = cfg.replace(program_terms_skip_undo=False)
    return cfg
