"""Spread a batch of games over several devices, e.g. one per CPU core (layer 0: jax only).

XLA:CPU runs one compiled program with a small thread pool, but this game's
step is hundreds of small dependent kernels, so on a 2-core box the second
core idles much of the time (one core alone gives ~70 % of the two-core
throughput, specs/env-shell.md §7.8). Exposing the CPU as one JAX device per
core and giving each device its own slice of the envs runs one program per
core side by side:

    from hackmatrix_env.devices import use_cpu_cores, sharded_vmap
    use_cpu_cores()                      # first, before JAX runs anything
    import jax
    from hackmatrix_env import HackMatrix
    env = HackMatrix()
    step = jax.jit(sharded_vmap(env.step, in_axes=(0, 0, 0, None)))

This module imports nothing from the game, so importing it does not start a
JAX backend (gymnax's import does); ``use_cpu_cores`` must come before that.
"""

from __future__ import annotations

import os

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def use_cpu_cores(num_devices: int | None = None) -> int:
    """Expose the CPU as ``num_devices`` JAX devices (default: ``usable_cores()``); returns the count.

    Must run before JAX executes anything in this process (``jax_num_cpu_devices``
    cannot change once a backend is up, and importing gymnax or ``hackmatrix_env``'s
    game modules starts one). Calling it later is fine when the count already
    matches; otherwise ``RuntimeError`` says so. Accelerator backends are unaffected
    (their devices stay the default ones).
    """
    n = int(num_devices) if num_devices is not None else usable_cores()
    if n < 1:
        raise ValueError(f"use_cpu_cores: num_devices must be >= 1, got {num_devices}")
    try:
        jax.config.update("jax_num_cpu_devices", n)
    except RuntimeError as e:
        have = len(jax.devices("cpu"))
        if have != n:
            raise RuntimeError(
                f"use_cpu_cores({n}) must run before JAX executes anything (import it and "
                f"call it before importing gymnax or HackMatrix); this process already "
                f"has {have} CPU device(s)"
            ) from e
    return n


def batch_sharding(devices=None, axis_name: str = "envs") -> NamedSharding:
    """Leading axis split over ``devices`` (default: local), the layout ``sharded_vmap`` uses.

    ``jax.device_put(batched_tree, batch_sharding())`` places inputs where the sharded
    step wants them (``jit`` reshards other inputs itself, at a copy per call).
    """
    devs = list(devices) if devices is not None else jax.local_devices()
    return NamedSharding(Mesh(np.array(devs), (axis_name,)), P(axis_name))


def sharded_vmap(fn, in_axes=0, devices=None, axis_name: str = "envs"):
    """``jax.vmap(fn, in_axes)`` with the batch split evenly over ``devices`` by ``shard_map``.

    Each device runs ``vmap(fn)`` on its own contiguous slice of the rows, so the
    result equals the plain ``vmap``'s bit for bit (every row runs the same
    per-row program and nothing crosses rows; the game's sparse helpers only
    regroup rows, specs/env-shell.md §4) and randomness stays a function of each
    row's key. ``in_axes`` is ``0`` or ``None`` per positional argument (one value
    for all, or a tuple); every output is batched on axis 0. ``devices`` defaults
    to ``jax.local_devices()``; with one device this is ``jax.vmap``. Raises
    ``ValueError`` for other ``in_axes``, a batched scalar, batched arguments of
    different sizes, or a batch that does not split evenly over the devices.
    """

    def wrapped(*args):
        axes = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
        if len(axes) != len(args) or any(a not in (0, None) for a in axes):
            raise ValueError(
                f"sharded_vmap: in_axes must be 0 or None for each of the {len(args)} "
                f"arguments, got {in_axes!r}"
            )
        devs = list(devices) if devices is not None else jax.local_devices()
        vmapped = jax.vmap(fn, in_axes=axes)
        batched = [
            np.shape(leaf)
            for arg, a in zip(args, axes, strict=True)
            if a == 0
            for leaf in jax.tree.leaves(arg)
        ]
        if any(len(shape) == 0 for shape in batched):
            raise ValueError("sharded_vmap: a batched argument has a scalar leaf (no batch axis)")
        sizes = sorted({shape[0] for shape in batched})
        if len(sizes) > 1:
            raise ValueError(f"sharded_vmap: batched arguments disagree on the batch size {sizes}")
        if len(devs) == 1 or not sizes:
            return vmapped(*args)
        if sizes[0] % len(devs):
            raise ValueError(
                f"sharded_vmap: a batch of {sizes[0]} rows does not split evenly over "
                f"{len(devs)} devices"
            )
        mesh = batch_sharding(devs, axis_name).mesh
        specs = tuple(P(axis_name) if a == 0 else P() for a in axes)
        # check_vma=False: the game's conds and loops mix per-row and replicated operands.
        return jax.shard_map(
            vmapped, mesh=mesh, in_specs=specs, out_specs=P(axis_name), check_vma=False
        )(*args)

    return wrapped
