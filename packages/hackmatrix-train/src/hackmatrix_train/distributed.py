"""Multi-host and CPU-device set-up: what must happen before JAX starts a backend.

``set_cpu_devices`` gives a CPU run one JAX device per usable core (``--cpu-devices``), so the
envs and minibatches split over the cores; ``init_distributed`` joins a multi-host run
(``--distributed``, specs/train.md §6); ``agree`` makes a host decision process 0's on every
process.
"""

from __future__ import annotations

import argparse

from hackmatrix_train.config import TrainConfig

# hm-train's flags of the process, not of the run (not TrainConfig fields)
ARG_NAMES = frozenset({"cpu_devices", "distributed", "coordinator_address", "num_processes",
                       "process_id"})  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--cpu-devices`` and the multi-host flags (``ARG_NAMES``)."""
    for flag, text, kw in (
        ("--cpu-devices", "on CPU, JAX devices to split envs and minibatches over (default: one "
         "per usable core; 1: one device)", {"type": int}),
        ("--distributed", "multi-host: call jax.distributed.initialize() first; SLURM / Open MPI "
         "set the process layout, else the three flags below do (specs/train.md §6)",
         {"action": "store_true"}),
        ("--coordinator-address", "with --distributed: process 0's address, the same for every "
         "process (default: $JAX_COORDINATOR_ADDRESS or the cluster's)", {"metavar": "HOST:PORT"}),
        ("--num-processes", "with --distributed: how many processes train (default: the "
         "cluster's)", {"type": int}),
        ("--process-id", "with --distributed: this process's index, 0..N-1; 0 writes every file "
         "(default: the cluster's)", {"type": int}),
    ):  # fmt: skip
        parser.add_argument(flag, default=None, help=text, **kw)


def cpu_device_count(cfg: TrainConfig, cores: int) -> int:
    """The most CPU devices, at most ``cores``, that split the envs and minibatches evenly."""
    for n in range(max(cores, 1), 0, -1):
        if cfg.num_envs % n == 0 and (cfg.batch_size // n) % cfg.num_minibatches == 0:
            return n
    return 1


def set_cpu_devices(
    cpu_devices: int | None, distributed: bool, cfg: TrainConfig, explicit=frozenset(),
    saved_devices: int | None = None,
) -> None:  # fmt: skip
    """One JAX device per CPU core (``--cpu-devices`` overrides), before any backend starts.

    Multi-host runs (``--distributed``) keep JAX's own devices, one per process on CPU, unless
    ``--cpu-devices`` is given (specs/train.md §6). A resumed run keeps the device count of its
    checkpoint (``saved_devices``). A batch that does not divide over the devices asked for
    (``--cpu-devices``, or the cores when ``--num-envs``, ``--num-steps`` or
    ``--num-minibatches`` is given) is a ``ValueError`` naming both numbers and the fix, never a
    quiet fallback; the default batch on an odd core count falls back with a printed note.
    """
    if distributed and cpu_devices is None:
        return
    from hackmatrix_env.devices import usable_cores, use_cpu_cores

    wanted = cpu_devices or saved_devices
    if wanted is not None:
        if wanted < 1:
            raise ValueError(f"--cpu-devices must be >= 1, got {wanted}")
        if cpu_device_count(cfg, wanted) != wanted:
            raise ValueError(indivisible(cfg, wanted))
        use_cpu_cores(wanted)
        return
    cores = usable_cores()
    n = cpu_device_count(cfg, cores)
    if n < cores:
        if explicit & {"num_envs", "num_steps", "num_minibatches"}:
            raise ValueError(indivisible(cfg, cores))
        print(f"note: {indivisible(cfg, cores).split(':')[0]}; training on {n} device(s)")
    use_cpu_cores(n)


def indivisible(cfg: TrainConfig, n: int) -> str:
    """Why ``cfg``'s batch does not split over ``n`` CPU devices, and the fix."""
    fewer = cpu_device_count(cfg, n)
    envs = -(-cfg.num_envs // n) * n
    return (
        f"--num-envs {cfg.num_envs} x --num-steps {cfg.num_steps} in {cfg.num_minibatches} "
        f"minibatches does not divide over {n} CPU devices: give --num-envs a multiple of {n} "
        f"(e.g. {envs}) with minibatches that divide each device's share, or --cpu-devices "
        f"{fewer}"
    )


def init_distributed(
    coordinator_address: str | None, num_processes: int | None, process_id: int | None
) -> None:
    """``jax.distributed.initialize`` with the flags given; the cluster (SLURM, ...) fills the rest.

    On CPU the processes exchange gradients over gloo (``jax_cpu_collectives_implementation``,
    JAX 0.10's default; set here when unset, since a CPU cluster without cross-process
    collectives cannot run the chunk).
    """
    import jax

    if num_processes is not None and num_processes < 1:
        raise ValueError(f"--num-processes must be >= 1, got {num_processes}")
    if jax.config.jax_cpu_collectives_implementation is None:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=coordinator_address,
        num_processes=num_processes,
        process_id=process_id,
    )


def agree(value: int) -> int:
    """Process 0's ``value`` on every process: a host decision that gates a collective.

    A multi-host run must take such decisions (the time budget's length, a timer's save)
    together, or one process waits in a gather the others never start.
    """
    import jax

    if jax.process_count() == 1:
        return value
    import numpy as np
    from jax.experimental import multihost_utils

    return int(multihost_utils.broadcast_one_to_all(np.int32(value)))
