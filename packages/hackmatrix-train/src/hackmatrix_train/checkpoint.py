"""Checkpoints (host only): the whole runner state, atomically, plus a params-only export.

Layout of a run directory ``<checkpoint_dir>/<run_name>/``::

    ckpt_00000120.msgpack   every leaf of RunnerState keyed by its tree path (msgpack, numpy)
    ckpt_00000120.json      sidecar: format version, config, update, env_steps, sha256, leaf specs
    params.msgpack          latest params only (inference export), with params.json

Each file is written to a temporary name and renamed, so a crash never leaves a half checkpoint
under a final name; a checkpoint counts only once its sidecar exists (written after the blob),
and a params export whose two files disagree (killed between them) is passed over for the latest
full checkpoint. So a ``kill -9`` at any moment of a save leaves the run resumable from the
checkpoint before it or the one being written (tested by killing at every file operation).
Loading checks the sha256, the presence, shape and dtype of every leaf against the trainer's
own runner state, and raises ``CheckpointError`` with a clear message on any mismatch or
corruption. ``set_aside_later`` keeps a rewound run's later files under a named subfolder.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

import jax
import numpy as np

FORMAT = "hackmatrix-train-ckpt/1"
PARAMS_FORMAT = "hackmatrix-train-params/1"
_CKPT_RE = re.compile(r"^ckpt_(\d{8})\.msgpack$")
_TEMP_RE = re.compile(r"^\.(ckpt_\d{8}\.(msgpack|json)|params\.(msgpack|json))\..*\.tmp$")
REWOUND_PREFIX = "rewound_from_"  # subfolder of a run directory: the files a rewind set aside


class CheckpointError(RuntimeError):
    """A checkpoint is missing, corrupt, or does not fit the current trainer."""


def _is_key(x) -> bool:
    return isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def _is_key_spec(x) -> bool:
    return hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def _gather(x):
    """A host numpy copy of a (possibly sharded, possibly multi-host) array."""
    if isinstance(x, jax.Array) and not x.is_fully_addressable:
        from jax.experimental import multihost_utils

        return np.asarray(multihost_utils.process_allgather(x, tiled=True))
    return np.asarray(jax.device_get(x))


def flatten_state(tree) -> dict[str, np.ndarray]:
    """``{tree path: numpy array}``; PRNG keys become their uint32 key data."""
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    out = {}
    for path, leaf in leaves:
        if _is_key(leaf):
            leaf = jax.random.key_data(leaf)
        out[jax.tree_util.keystr(path)] = _gather(leaf)
    return out


def _leaf_specs(template) -> list[tuple[str, tuple, str, bool]]:
    specs = []
    for path, leaf in jax.tree_util.tree_flatten_with_path(template)[0]:
        if _is_key_spec(leaf):
            data = jax.eval_shape(jax.random.key_data, leaf)
            specs.append((jax.tree_util.keystr(path), tuple(data.shape), str(data.dtype), True))
        else:
            specs.append((jax.tree_util.keystr(path), tuple(leaf.shape), str(leaf.dtype), False))
    return specs


def unflatten_state(flat: dict[str, np.ndarray], template, source: str = "checkpoint"):
    """Rebuild a pytree like ``template`` (arrays or ShapeDtypeStructs) from ``flatten_state``."""
    treedef = jax.tree_util.tree_structure(template)
    specs = _leaf_specs(template)
    missing = [p for p, *_ in specs if p not in flat]
    extra = sorted(set(flat) - {p for p, *_ in specs})
    if missing or extra:
        raise CheckpointError(
            f"{source} does not match this trainer's state: missing {missing[:5]}"
            f"{'...' if len(missing) > 5 else ''}, unexpected {extra[:5]}"
            f"{'...' if len(extra) > 5 else ''} (different network, env or version?)"
        )
    leaves = []
    for path, shape, dtype, is_key in specs:
        arr = np.asarray(flat[path])
        if tuple(arr.shape) != shape or str(arr.dtype) != dtype:
            raise CheckpointError(
                f"{source}: leaf {path} is {arr.dtype}{list(arr.shape)} but this trainer expects "
                f"{dtype}{list(shape)} (different --num-envs, --network, --hidden-dim, "
                f"--num-layers or device count?)"
            )
        leaves.append(jax.random.wrap_key_data(arr) if is_key else arr)
    return jax.tree_util.tree_unflatten(treedef, leaves)


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def list_checkpoints(run_dir: str | Path) -> list[tuple[int, Path]]:
    """``[(update, path)]`` of the full checkpoints in ``run_dir``, oldest first."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return []
    found = []
    for p in run_dir.iterdir():
        m = _CKPT_RE.match(p.name)
        if m and p.with_suffix(".json").exists():
            found.append((int(m.group(1)), p))
    return sorted(found)


def save_checkpoint(run_dir, runner, config: dict, meta: dict, keep: int = 5) -> Path:
    """Write ``ckpt_<update>.msgpack`` + ``.json`` and the params export; prune old ones.

    Every process gathers the state; only process 0 writes.
    """
    run_dir = Path(run_dir)
    flat = flatten_state(runner)
    params_flat = flatten_state(runner.params)
    update = int(np.asarray(flat[".update"]))
    if jax.process_index() != 0:
        return run_dir / f"ckpt_{update:08d}.msgpack"
    from flax import serialization  # here: the commands import this module before saying a word

    blob = serialization.msgpack_serialize(flat)
    path = run_dir / f"ckpt_{update:08d}.msgpack"
    sidecar = {
        "format": FORMAT,
        "update": update,
        "sha256": hashlib.sha256(blob).hexdigest(),
        "config": config,
        **meta,
    }
    _atomic_write(path, blob)
    _atomic_write(path.with_suffix(".json"), json.dumps(sidecar, indent=1).encode())
    # inference export: params only
    pblob = serialization.msgpack_serialize(params_flat)
    _atomic_write(run_dir / "params.msgpack", pblob)
    pside = {
        "format": PARAMS_FORMAT,
        "update": update,
        "sha256": hashlib.sha256(pblob).hexdigest(),
        "config": config,
        **meta,
    }
    _atomic_write(run_dir / "params.json", json.dumps(pside, indent=1).encode())
    if keep > 0:
        for _, old in list_checkpoints(run_dir)[:-keep]:
            old.with_suffix(".json").unlink(missing_ok=True)  # first: it stops counting
            old.unlink(missing_ok=True)
    return path


def resolve_checkpoint(path: str | Path, rewind: int | None = None) -> Path:
    """A checkpoint file from a file or run-directory path (latest, or latest <= ``rewind``)."""
    p = Path(path)
    if not p.exists():
        raise CheckpointError(f"no such file or directory: {p}")
    if p.is_file():
        if rewind is not None:
            raise CheckpointError("--rewind needs a run directory, not a single checkpoint file")
        return p
    if not p.is_dir():
        raise CheckpointError(f"no checkpoint at {p} (neither a file nor a run directory)")
    found = list_checkpoints(p)
    if rewind is not None:
        found = [(u, f) for u, f in found if u <= rewind]
    if not found:
        extra = f" at or before update {rewind}" if rewind is not None else ""
        raise CheckpointError(f"no checkpoint in {p}{extra}")
    return found[-1][1]


def read_meta(path: str | Path) -> dict:
    """The JSON sidecar of a checkpoint or params export."""
    path = Path(path)
    side = path.with_suffix(".json")
    if not path.exists() and not side.exists():
        raise CheckpointError(f"no such file or directory: {path}")
    try:
        meta = json.loads(side.read_text())
    except FileNotFoundError:
        raise CheckpointError(f"missing sidecar {side} for {path}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"corrupt sidecar {side}: {e}") from None
    if meta.get("format") not in (FORMAT, PARAMS_FORMAT):
        raise CheckpointError(f"{side}: unknown format {meta.get('format')!r}")
    return meta


def read_flat(path: str | Path, meta: dict) -> dict[str, np.ndarray]:
    """Load and verify the msgpack blob of a checkpoint."""
    path = Path(path)
    try:
        blob = path.read_bytes()
    except FileNotFoundError:
        raise CheckpointError(f"missing checkpoint file {path}") from None
    if hashlib.sha256(blob).hexdigest() != meta.get("sha256"):
        raise CheckpointError(f"{path} is corrupt (sha256 mismatch: truncated or overwritten?)")
    from flax import serialization

    try:
        flat = serialization.msgpack_restore(blob)
    except Exception as e:  # msgpack raises several types
        raise CheckpointError(f"{path} is corrupt: {e}") from None
    if not isinstance(flat, dict):
        raise CheckpointError(f"{path} is corrupt: not a state dictionary")
    return flat


def load_checkpoint(path: str | Path, template):
    """``(runner numpy pytree shaped like template, meta)`` from a full checkpoint file."""
    meta = read_meta(path)
    if meta["format"] != FORMAT:
        raise CheckpointError(f"{path} is a params-only export; --resume needs a full checkpoint")
    flat = read_flat(path, meta)
    return unflatten_state(flat, template, source=str(path)), meta


def _read_params_source(path: Path) -> tuple[dict, dict, Path]:
    """``(flat, meta, file)`` of a file, or of a run directory's export or latest checkpoint."""
    if not path.is_dir():
        meta = read_meta(path)
        return read_flat(path, meta), meta, path
    export = path / "params.msgpack"
    try:
        meta = read_meta(export)
        return read_flat(export, meta), meta, export
    except CheckpointError:
        # a save killed between the export's two files leaves them disagreeing: the latest full
        # checkpoint holds the same params or the ones just before
        if not list_checkpoints(path) and export.exists():
            raise
    file = resolve_checkpoint(path)
    meta = read_meta(file)
    return read_flat(file, meta), meta, file


def load_params(path: str | Path, template=None):
    """``(params, meta)`` from a params export or a full checkpoint (its ``.params`` subtree)."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"no such file or directory: {path}")
    flat, meta, path = _read_params_source(path)
    if meta["format"] == FORMAT:
        flat = {k[len(".params") :]: v for k, v in flat.items() if k.startswith(".params")}
    if template is None:
        return flat, meta
    return unflatten_state(flat, template, source=str(path)), meta


def remove_temp_files(run_dir: str | Path) -> list[Path]:
    """Delete the temporary files of writes a kill interrupted (never a final name)."""
    run_dir = Path(run_dir)
    gone = [p for p in run_dir.iterdir() if _TEMP_RE.match(p.name)] if run_dir.is_dir() else []
    for p in gone:
        p.unlink(missing_ok=True)
    return gone


def set_aside_later(run_dir: str | Path, update: int, progress_csv: str = "progress.csv"):
    """Move what a run wrote after ``update`` into ``run_dir/rewound_from_<latest>_<time>/``.

    Resuming from ``update`` while later checkpoints exist (``--rewind``, or ``--resume`` of an
    older checkpoint file) starts another history in the same directory: the later checkpoints,
    the params export and ``eval_final.json`` if they are later, and a copy of ``progress.csv``
    if it has later rows, are kept there, never overwritten. Returns the folder, or ``None``
    when nothing is later. Each file is moved by one rename, later checkpoints newest first, so
    a kill part way leaves a resumable run (its newest remaining checkpoint).
    """
    run_dir = Path(run_dir)
    later = [(u, p) for u, p in list_checkpoints(run_dir) if u > update]
    moves: list[Path] = []
    for _, p in reversed(later):
        moves += [p.with_suffix(".json"), p]  # the sidecar first: the checkpoint stops counting
    export = run_dir / "params.json"
    if export.exists():
        try:
            newer_export = int(json.loads(export.read_text()).get("update", -1)) > update
        except (json.JSONDecodeError, UnicodeDecodeError, ValueError, TypeError):
            newer_export = True  # unreadable: keep it rather than overwrite it
        if newer_export:
            moves += [export, run_dir / "params.msgpack"]
    final_eval = run_dir / "eval_final.json"
    if final_eval.exists() and later:
        moves.append(final_eval)
    progress = run_dir / progress_csv
    later_rows = progress.exists() and _has_rows_after(progress, update)
    if not moves and not later_rows:
        return None
    top = later[-1][0] if later else update
    stamp = time.strftime("%Y%m%dT%H%M%S")
    dest = run_dir / f"{REWOUND_PREFIX}{top:08d}_{stamp}"
    n = 1
    while dest.exists():
        n += 1
        dest = run_dir / f"{REWOUND_PREFIX}{top:08d}_{stamp}_{n}"
    dest.mkdir()
    if later_rows:
        shutil.copy2(progress, dest / progress.name)  # the resumed run keeps rows <= update
    for p in moves:
        if p.exists():
            os.replace(p, dest / p.name)
    return dest


def _has_rows_after(progress: Path, update: int) -> bool:
    import csv

    with open(progress, newline="") as f:
        for row in csv.DictReader(f):
            try:
                if int(row["update"]) > update:
                    return True
            except (KeyError, TypeError, ValueError):
                return True  # unreadable: keep a copy
    return False
