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
from hackmatrix_train.schedules import Schedule, make_optimizer, make_schedule
from hackmatrix_train.stats import EnvNames, env_names, episode_metrics, init_episode_acc
from hackmatrix_train.symmetry import viewed_by_state
from hackmatrix_train.update import Learner, RunnerState, add_metrics

AXIS = "data"


def spec_tree() -> RunnerState:
    """The runner state's partition specs: envs, observations, accumulators and keys split over
    the mesh's axis, parameters, optimizer state and the update count replicated."""
    d = P(AXIS)
    return RunnerState(
        params=P(), opt_state=P(), env_state=d, obs=d, acc=d, key=d, update=P()
    )  # fmt: skip


def check_env_flags(cfg: TrainConfig, env, env_params, names: EnvNames) -> None:
    """A ``ValueError`` for a loss term the env cannot serve (HackMatrix-only flags)."""
    obs1, state1 = jax.eval_shape(env.reset, jax.random.key(0), env_params)
    for flag, used in (("--program-potential", cfg.program_potential > 0),
                       ("--program-bonus", has_program_bonus(cfg))):  # fmt: skip
        if used and not hasattr(obs1, "programs"):
            raise ValueError(f"{flag} needs an observation with a `programs` field (HackMatrix)")
    if cfg.away_penalty > 0 and not hasattr(state1, "game"):
        raise ValueError("--away-penalty needs HackMatrix's state (its exit and distances)")
    if cfg.random_views and not names.is_hackmatrix:
        raise ValueError("--random-views needs HackMatrix's board and actions (its 6x6 grid, "
                         f"moves, ROW and COL); this env has {names.num_actions} actions")  # fmt: skip
    if cfg.explore_floor > 0 and not names.is_hackmatrix:
        raise ValueError(
            "--explore-floor needs the HackMatrix action space (its siphon and program "
            f"groups); this env has {names.num_actions} actions"
        )


class Trainer:
    """A compiled trainer for one (config, env, env_params, learner) on all devices.

    ``learner`` (``update.Learner``) builds the update; ``actor`` and ``loss`` go to it as its
    injection points (None: the learner's own). The learner's frozen arrays (``frozen``: a
    guided run's teacher) are the chunk's fourth argument, so one compiled chunk serves any
    of their values.
    """

    def __init__(
        self, cfg: TrainConfig, env, env_params, devices=None, *, learner: Learner,
        actor=None, loss=None,
    ):  # fmt: skip
        self.devices = list(devices) if devices is not None else jax.devices()
        self.num_devices = len(self.devices)
        validate(cfg, self.num_devices)
        self.cfg, self.env, self.env_params, self.learner = cfg, env, env_params, learner
        self.schedule = make_schedule(cfg, cfg.num_updates)
        self.mesh = Mesh(np.array(self.devices), (AXIS,))

        self.names = env_names(env, env_params)
        self.num_actions = self.names.num_actions
        self.num_components = len(self.names.component_names)
        self.component_names = self.names.component_names
        self.program_names = self.names.program_names
        check_env_flags(cfg, env, env_params, self.names)

        self.network = make_network(
            cfg.network, self.num_actions, cfg.hidden_dim, cfg.num_layers, cfg.res_blocks
        )
        self.tx = make_optimizer(cfg, self.num_updates)  # for the optimizer state's init
        # the update is built inside the chunk's trace, from the config it was compiled for
        self._update_cfg, self._actor, self._loss = cfg, actor, loss

        # sharding: envs, observations, accumulators and keys split over the mesh's axis
        self.spec = spec_tree()
        self.shardings = jax.tree.map(
            lambda s: NamedSharding(self.mesh, s), self.spec, is_leaf=lambda x: isinstance(x, P)
        )
        self._init = jax.jit(self._init_fn, out_shardings=self.shardings)
        # the learner's frozen arrays, replicated: an argument of the chunk, not its constants
        self.frozen = () if learner.frozen is None else jax.device_put(
            learner.frozen(cfg, env, env_params), NamedSharding(self.mesh, P())
        )  # fmt: skip
        self.make_update(self.frozen)  # a learner refuses a config as it builds: here, not later
        chunk = jax.shard_map(
            self._chunk_local,
            mesh=self.mesh,
            in_specs=(self.spec, P(), P(), P()),
            out_specs=(self.spec, P()),
            # env code (any gymnax env) is not written for varying-manual-axes typing: a scan
            # carry initialised from constants would be rejected. Replication of params is
            # guaranteed by construction (pmean-ed gradients), and tested.
            check_vma=False,
        )
        self.chunk = jax.jit(chunk)  # (runner, n, schedule arrays, frozen) -> (runner, metrics)
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
    def make_update(self, frozen=()):
        """The learner's ``update(runner, sched)``, built with ``frozen`` (the chunk's argument,
        traced inside it) when the learner has frozen arrays."""
        extra = {} if self.learner.frozen is None else {"frozen": frozen}
        apply = self.network.apply  # with --random-views, each state through its own view
        apply = viewed_by_state(apply) if self._update_cfg.random_views else apply
        return self.learner.make_update(
            self._update_cfg, apply, self.env, self.env_params, axis_name=AXIS,
            actor=self._actor, loss=self._loss, **extra,
        )  # fmt: skip

    def _chunk_local(self, runner: RunnerState, n, sched: Schedule, frozen):
        runner = runner.replace(key=runner.key[0])
        update = self.make_update(frozen)
        zero = jax.tree.map(
            lambda s: jnp.zeros(s.shape, s.dtype), jax.eval_shape(update, runner, sched)[1]
        )

        def body(_, carry):
            runner, (episodes, metrics) = carry
            runner, (ep, m) = update(runner, sched)
            return runner, (add_metrics(episodes, ep), add_metrics(metrics, m))

        runner, sums = jax.lax.fori_loop(0, n, body, (runner, zero))
        metrics = finalize_metrics(sums, n, runner.update, self.names)
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

    def schedule_arrays(self) -> Schedule:
        """The run's ``Schedule`` as the chunk takes it: int32 scalars."""
        return jax.tree.map(jnp.int32, self.schedule)

    def compile(self, runner: RunnerState):
        """Ahead-of-time compile the chunk; returns the compiled callable (cached)."""
        if self._compiled is None:
            lowered = self.chunk.lower(runner, jnp.int32(1), self.schedule_arrays(), self.frozen)
            self._compiled = lowered.compile()
        return self._compiled

    def run_chunk(self, runner: RunnerState, n: int):
        """Run ``n`` updates; returns ``(runner, metrics)`` (device arrays, dispatched async)."""
        # no-op for arrays already placed; fixes e.g. empty arrays that come back replicated
        runner = jax.device_put(runner, self.shardings)
        return self.compile(runner)(runner, jnp.int32(n), self.schedule_arrays(), self.frozen)


def finalize_metrics(sums, n, update, names: EnvNames) -> dict:
    """A chunk's sums of ``n`` updates as the logged float32 scalars: the episodes' metrics
    (``stats.episode_metrics``), the learner's own averaged over the chunk as ``train/<name>``,
    and ``train/update``."""
    episodes, learner = sums
    n = jnp.maximum(n, 1).astype(jnp.float32)
    m = episode_metrics(episodes, names) if episodes else {}
    m["train/update"] = update.astype(jnp.float32)
    m.update({f"train/{k}": v / n for k, v in learner.items()})
    return {k: jnp.asarray(v, jnp.float32) for k, v in m.items()}


def make_env(cfg: TrainConfig):
    """HackMatrix as the config's agent sees it: without ``cfg.disabled_programs`` in its mask."""
    from hackmatrix_env import HackMatrix
    from hackmatrix_env.action_set import DisabledActionsWrapper

    from hackmatrix_train.config import disabled_actions

    disabled = disabled_actions(cfg)
    return DisabledActionsWrapper(HackMatrix(), disabled) if disabled else HackMatrix()


def make_train(
    cfg: TrainConfig, env=None, env_params=None, devices=None, *, learner: Learner | None = None,
    actor=None, loss=None, make_env=make_env,
) -> Trainer:  # fmt: skip
    """The trainer for ``cfg``: the injection points that replace every run-time patch.

    * ``env``, ``env_params``: any gymnax 1.0 env whose observation carries ``action_mask``;
      None: ``make_env(cfg)`` (default: HackMatrix as the config's agent sees it) with the
      config's env params (``env.default_params`` for a given env).
    * ``learner``: an ``update.Learner``; None: the config's (``guided.learner_of``: PPO's,
      or PPO guided by the search with ``--guide-kl``).
    * ``actor``: ``(cfg, apply_fn) -> act(params, obs, env_state, key) -> (action, log_prob,
      value, extra)``, the learner's rollout actor (None: its own).
    * ``loss``: the learner's loss, with the learner's signature (None: its own).
    """
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
    if learner is None:
        from hackmatrix_train.guided import learner_of

        learner = learner_of(cfg)
    elif cfg.guide_kl > 0:
        raise ValueError(f"--guide-kl chooses the guided learner, and this run's is "
                         f"{learner.name}: give one or the other")  # fmt: skip
    return Trainer(cfg, env, env_params, devices, learner=learner, actor=actor, loss=loss)
