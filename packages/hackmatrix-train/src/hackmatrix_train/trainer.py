"""``make_train``: runner-state init and a jitted chunk of updates, data-parallel over devices.

The chunk runs ``n`` updates of a run of ``Schedule.num_updates`` (both traced, so one
compilation serves every chunk length and every run length) inside ``jax.shard_map`` over a
1-D mesh ``("data",)`` of all devices: envs, the last observation, episode accumulators and
PRNG keys are split across devices, parameters and optimizer state are replicated and gradients
are averaged with ``pmean``. Multi-host works the same way once ``jax.distributed.initialize()``
has run (``jax.devices()`` is then global).

Metrics come out as a flat dict of float32 scalars keyed ``train/…``, ``reward/…``,
``actions/…``, ``stats/…``; the host only formats and sends them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from hackmatrix_train.config import TrainConfig, has_program_bonus, validate
from hackmatrix_train.network import make_network
from hackmatrix_train.ppo import RunnerState, Schedule, make_optimizer, make_schedule, make_update
from hackmatrix_train.rollout import NUM_ACTION_KINDS, init_episode_acc

AXIS = "data"
HACKMATRIX_ACTIONS = 28


def _hackmatrix_names():
    """(reward component names, program names) from the env package, if installed."""
    try:
        from hackmatrix_env.constants import PROGRAM_NAMES, REWARD_COMPONENTS
    except ImportError:  # pragma: no cover - the env package is a dependency
        return None, None
    return tuple(REWARD_COMPONENTS), tuple(PROGRAM_NAMES)


def _spec_tree() -> RunnerState:
    d = P(AXIS)
    return RunnerState(
        params=P(), opt_state=P(), env_state=d, obs=d, acc=d, key=d, update=P()
    )  # fmt: skip


def _env_shapes(env, env_params):
    """(one env's observation shapes, action count, reward components), running nothing."""
    k = jax.random.key(0)
    obs1, state1 = jax.eval_shape(env.reset, k, env_params)
    num_actions = int(obs1.action_mask.shape[-1])
    info = jax.eval_shape(env.step, k, state1, jnp.int32(0), env_params)[-1]
    rb = info.get("reward_breakdown")
    return obs1, num_actions, int(rb.shape[-1]) if rb is not None else 0


def _check_env_flags(cfg: TrainConfig, obs1, num_actions: int) -> None:
    """A ``ValueError`` for a loss term the env cannot serve (HackMatrix-only flags)."""
    for flag, used in (("--program-potential", cfg.program_potential > 0),
                       ("--program-bonus", has_program_bonus(cfg))):  # fmt: skip
        if used and not hasattr(obs1, "programs"):
            raise ValueError(f"{flag} needs an observation with a `programs` field (HackMatrix)")
    if cfg.explore_floor > 0 and num_actions != HACKMATRIX_ACTIONS:
        raise ValueError(
            f"--explore-floor needs the HackMatrix action space ({HACKMATRIX_ACTIONS} "
            f"actions: siphon and program groups); this env has {num_actions}"
        )


def _make_algo_update(cfg: TrainConfig, apply_fn, env, env_params, is_hackmatrix: bool):
    """The config's ``update(runner, sched)``: PPO's, or the search trainer's."""
    if cfg.algo != "search":
        return make_update(cfg, apply_fn, env, env_params, axis_name=AXIS)
    # the search acts, the network learns its targets
    from hackmatrix_train.alphazero import make_search_update

    if not is_hackmatrix:
        raise ValueError("--algo search plans with the HackMatrix game as its model")
    return make_search_update(cfg, apply_fn, env, env_params, axis_name=AXIS)


def add_metrics(sums: dict, raw: dict) -> dict:
    """One update's raw metrics added to the chunk's sums (the highest stage: the max)."""
    return {
        k: (jnp.maximum(sums[k], v) if k == "ep_stage_max" else sums[k] + v) for k, v in raw.items()
    }


class Trainer:
    """A compiled PPO trainer for one (config, env, env_params) on all local/global devices."""

    def __init__(self, cfg: TrainConfig, env, env_params, devices=None):
        self.devices = list(devices) if devices is not None else jax.devices()
        self.num_devices = len(self.devices)
        validate(cfg, self.num_devices)
        self.cfg, self.env, self.env_params = cfg, env, env_params
        self.schedule = make_schedule(cfg, cfg.num_updates)
        self.mesh = Mesh(np.array(self.devices), (AXIS,))

        obs1, self.num_actions, self.num_components = _env_shapes(env, env_params)
        comp_names, prog_names = _hackmatrix_names()
        if comp_names is None or len(comp_names) != self.num_components:
            comp_names = tuple(f"c{i}" for i in range(self.num_components))
        self.component_names = comp_names
        self.is_hackmatrix = self.num_actions == HACKMATRIX_ACTIONS and prog_names is not None
        self.program_names = prog_names if self.is_hackmatrix else ()
        _check_env_flags(cfg, obs1, self.num_actions)

        self.network = make_network(cfg.network, self.num_actions, cfg.hidden_dim, cfg.num_layers)
        self.tx = make_optimizer(cfg, self.num_updates)  # for the optimizer state's init
        self._update = _make_algo_update(
            cfg, self.network.apply, env, env_params, self.is_hackmatrix
        )

        # sharding: envs, observations, accumulators and keys split over the mesh's axis
        self.spec = _spec_tree()
        self.shardings = jax.tree.map(
            lambda s: NamedSharding(self.mesh, s), self.spec, is_leaf=lambda x: isinstance(x, P)
        )
        self._init = jax.jit(self._init_fn, out_shardings=self.shardings)
        chunk = jax.shard_map(
            self._chunk_local,
            mesh=self.mesh,
            in_specs=(self.spec, P(), P()),
            out_specs=(self.spec, P()),
            # env code (any gymnax env) is not written for varying-manual-axes typing: a scan
            # carry initialised from constants would be rejected. Replication of params is
            # guaranteed by construction (pmean-ed gradients), and tested.
            check_vma=False,
        )
        self._chunk = jax.jit(chunk)
        self._compiled = None

    # ---- init -------------------------------------------------------------------------------
    def _init_fn(self, key):
        cfg = self.cfg
        k_net, k_env, k_run = jax.random.split(key, 3)
        obs, env_state = jax.vmap(self.env.reset, in_axes=(0, None))(
            jax.random.split(k_env, cfg.num_envs), self.env_params
        )
        params = self.network.init(k_net, jax.tree.map(lambda x: x[:1], obs))
        return RunnerState(
            params=params,
            opt_state=self.tx.init(params),
            env_state=env_state,
            obs=obs,
            acc=init_episode_acc(cfg.num_envs, self.num_components),
            key=jax.random.split(k_run, self.num_devices),
            update=jnp.int32(0),
        )

    def init(self, seed: int | None = None) -> RunnerState:
        """Fresh runner state (params, optimizer, envs, keys), placed on the mesh."""
        return self._init(jax.random.key(self.cfg.seed if seed is None else seed))

    def with_params(self, runner: RunnerState, params) -> RunnerState:
        """``runner`` with new (host) params and a fresh optimizer state for them (warm start)."""
        params = jax.tree.map(jnp.asarray, params)
        return self.place(runner.replace(params=params, opt_state=self.tx.init(params)))

    def abstract_runner(self) -> RunnerState:
        """Shapes/dtypes of the runner state (for checkpoint validation), computing nothing."""
        return jax.eval_shape(self._init_fn, jax.random.key(0))

    def place(self, runner: RunnerState) -> RunnerState:
        """Put a host (numpy) runner state onto the mesh with the trainer's shardings.

        Multi-host: every process passes the same host state (a checkpoint) and keeps the
        shards of its own devices; leaves already on the global mesh stay where they are.
        """
        if jax.process_count() == 1:
            return jax.device_put(runner, self.shardings)

        def put(x, sharding):
            if isinstance(x, jax.Array) and not x.is_fully_addressable:
                return jax.device_put(x, sharding)
            if isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
                return jax.random.wrap_key_data(put(jax.random.key_data(x), sharding))
            x = np.asarray(x)
            return jax.make_array_from_callback(x.shape, sharding, lambda index: x[index])

        return jax.tree.map(
            lambda sharding, part: jax.tree.map(lambda x: put(x, sharding), part),
            self.shardings,
            runner,
        )

    # ---- chunk ------------------------------------------------------------------------------
    def _chunk_local(self, runner: RunnerState, n, sched: Schedule):
        runner = runner.replace(key=runner.key[0])
        zero = jax.tree.map(
            lambda s: jnp.zeros(s.shape, s.dtype), jax.eval_shape(self._update, runner, sched)[1]
        )

        def body(_, carry):
            runner, sums = carry
            runner, raw = self._update(runner, sched)
            return runner, add_metrics(sums, raw)

        runner, sums = jax.lax.fori_loop(0, n, body, (runner, zero))
        metrics = finalize_metrics(sums, n, runner.update, self)
        return runner.replace(key=runner.key[None]), metrics

    def set_num_updates(self, num_updates: int) -> None:
        """Give the run another length (``--time-budget``); the compiled chunk stays valid."""
        if num_updates < 1:
            raise ValueError(f"a run needs at least one update, got {num_updates}")
        self.cfg = self.cfg.replace(total_timesteps=num_updates * self.cfg.batch_size)
        self.schedule = make_schedule(self.cfg, num_updates)

    @property
    def num_updates(self) -> int:
        """The run's length in updates (the config's ``total_timesteps`` over the batch)."""
        return self.cfg.num_updates

    def _schedule_arrays(self) -> Schedule:
        return jax.tree.map(jnp.int32, self.schedule)

    def compile(self, runner: RunnerState):
        """Ahead-of-time compile the chunk; returns the compiled callable (cached)."""
        if self._compiled is None:
            lowered = self._chunk.lower(runner, jnp.int32(1), self._schedule_arrays())
            self._compiled = lowered.compile()
        return self._compiled

    def run_chunk(self, runner: RunnerState, n: int):
        """Run ``n`` updates; returns ``(runner, metrics)`` (device arrays, dispatched async)."""
        # no-op for arrays already placed; fixes e.g. empty arrays that come back replicated
        runner = jax.device_put(runner, self.shardings)
        return self.compile(runner)(runner, jnp.int32(n), self._schedule_arrays())


def finalize_metrics(s: dict, n, update, names) -> dict:
    """Turn a chunk's sums of ``n`` updates into the logged scalar metrics.

    ``names`` (a ``Trainer``) gives the reward component and program names and whether the
    HackMatrix action groups apply.
    """
    f32 = jnp.float32
    n = jnp.maximum(n, 1).astype(f32)
    eps = jnp.maximum(s["ep_count"], 1.0)
    m = {
        "train/episode_return": s["ep_return"] / eps,
        "train/episode_length": s["ep_length"] / eps,
        "train/num_episodes": s["ep_count"],
        "train/learning_rate": s["lr"] / n,
        "train/ent_coef": s["ent_coef"] / n,
        "train/explore_floor": s["explore_floor"] / n,
        "train/explore_weight": s["explore_weight"] / n,
        "train/program_bonus": s["program_bonus"] / n,
        "train/update": update.astype(f32),
        "train/invalid_actions": s["invalid"],
        # the trainer's shaping (loss only), per env step; train/episode_return excludes it
        "train/shaping_per_step": s["shaping"] / jnp.maximum(s["action_counts"].sum(), 1.0),
    }
    for k in (
        "pg_loss", "vf_loss", "entropy", "approx_kl", "clip_frac", "explained_variance",
        "floor_loss", "grad_norm",
    ):  # fmt: skip
        m[f"train/{k}"] = s[k] / n
    for i, name in enumerate(names.component_names):
        m[f"reward/{name}"] = s["ep_breakdown"][i] / eps
    counts = s["action_counts"]
    total = jnp.maximum(counts.sum(), 1.0)
    if names.is_hackmatrix:
        m["actions/move_frac"] = counts[:4].sum() / total
        m["actions/siphon_frac"] = counts[4] / total
        m["actions/program_frac"] = counts[5:].sum() / total
        kinds = s["kind_counts"]
        ktot = jnp.maximum(kinds.sum(), 1.0)
        for i, name in enumerate(("move", "attack", "siphon", "program", "invalid")):
            if i < NUM_ACTION_KINDS:
                m[f"actions/kind_{name}_frac"] = kinds[i] / ktot
        for i, name in enumerate(names.program_names):
            m[f"actions/program/{name}"] = counts[5 + i]
        m["stats/mean_stage"] = s["ep_stage"] / eps
        m["stats/highest_stage"] = s["ep_stage_max"]
        m["stats/win_rate"] = s["ep_wins"] / eps
        m["stats/history_overflow_frac"] = s["ep_overflow"] / eps
        m["stats/programs_owned"] = s["programs_owned"] / total
    else:
        for i in range(names.num_actions):
            m[f"actions/a{i}_frac"] = counts[i] / total
    return {k: jnp.asarray(v, f32) for k, v in m.items()}


def make_env(cfg: TrainConfig):
    """HackMatrix as the config's agent sees it: without ``cfg.disabled_programs`` in its mask."""
    from hackmatrix_env import HackMatrix
    from hackmatrix_env.adapters import DisabledActionsWrapper

    from hackmatrix_train.config import disabled_actions

    disabled = disabled_actions(cfg)
    return DisabledActionsWrapper(HackMatrix(), disabled) if disabled else HackMatrix()


def make_train(cfg: TrainConfig, env=None, env_params=None, devices=None) -> Trainer:
    """The trainer for ``cfg`` on ``env`` (default: HackMatrix with the config's env params)."""
    if env is None:
        from hackmatrix_env import EnvParams

        env = make_env(cfg)
        if env_params is None:
            env_params = EnvParams(
                max_steps_in_episode=cfg.max_steps_in_episode, history_depth=cfg.history_depth
            )
    elif cfg.disabled_programs:
        raise ValueError("--disabled-programs applies to the HackMatrix env the trainer builds")
    if env_params is None:
        env_params = env.default_params
    return Trainer(cfg, env, env_params, devices)
