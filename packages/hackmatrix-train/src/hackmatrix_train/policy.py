"""A saved policy as every command loads it: the shipped agent, ``load_policy``, its search, its
evaluation.

``hm-eval``, ``hm-watch`` and ``hm-play`` read a checkpoint (``params.msgpack``, ``ckpt_*.msgpack``
or a run directory) through ``load_policy``; given none, they use the shipped agent
(``shipped_policy``). A search with the policy's network is configured by ``search_config``
(the play settings in the run's units, the flags' overrides), and ``evaluate_checkpoint`` is
``hm-eval``'s evaluation as a library function (benchmarks and experiments call it).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

from hackmatrix_train.config import TrainConfig, disabled_actions

SHIPPED_POLICY = "guided-r5-g997-cpu-6m-s3"  # the agent the README scores


def shipped_policy() -> Path:
    """The shipped agent's directory: package data in an installed wheel (``policies/`` in
    the package), else the source checkout's ``policies/`` at the repository root."""
    packaged = Path(str(resources.files("hackmatrix_train"))) / "policies" / SHIPPED_POLICY
    if packaged.exists():
        return packaged
    checkout = Path(__file__).resolve().parents[4] / "policies" / SHIPPED_POLICY
    if checkout.exists():
        return checkout
    raise ValueError(f"the shipped policy {SHIPPED_POLICY} is missing: give a checkpoint")


class Policy(NamedTuple):
    """A loaded policy: ``apply_fn(params, obs) -> (logits, value)``, its params, the env
    params its episodes run with and the checkpoint's metadata. The random masked policy
    has ``apply_fn`` and ``params`` None."""

    apply_fn: Any
    params: Any
    env_params: Any
    meta: dict

    @property
    def cfg(self) -> TrainConfig:
        return TrainConfig.from_dict(self.meta["config"])

    @property
    def disabled(self) -> tuple[int, ...]:
        """The actions the policy's run took out of its mask (none for the random policy)."""
        return () if self.apply_fn is None else disabled_actions(self.cfg)


def check_env_args(start_stage, max_steps) -> None:
    """A ``ValueError`` for a start stage outside 1..8 or a step limit below 1."""
    if not 1 <= start_stage <= 8:
        raise ValueError(f"--start-stage must be in 1..8, got {start_stage}")
    if max_steps is not None and max_steps < 1:
        raise ValueError(f"--max-steps-in-episode must be >= 1, got {max_steps}")


def env_params_of(cfg: TrainConfig, start_stage: int = 1, max_steps: int | None = None):
    """The ``EnvParams`` a run's policy plays with: its step limit (or ``max_steps``), its
    UNDO ring, from ``start_stage``."""
    from hackmatrix_env import EnvParams

    return EnvParams(
        max_steps_in_episode=cfg.max_steps_in_episode if max_steps is None else max_steps,
        start_stage=start_stage,
        history_depth=cfg.history_depth,
    )


def load_policy(
    path=None, start_stage=1, max_steps=None, env=None, env_params=None, wrap_network=None,
    views=1,
) -> Policy:  # fmt: skip
    """The policy of checkpoint ``path`` (``None``: the shipped agent).

    ``env``/``env_params``: another env whose observations the network reads (default:
    HackMatrix with ``env_params_of``). ``wrap_network(net) -> net`` lets diagnostics alter the
    network (e.g. shift logits, ``benchmarks/siphon_bias.py``); the params load into the
    unwrapped network's shapes. ``views``: the network averaged over that many of the board's
    eight symmetries (``symmetry.symmetrized``; 1: the network itself). A missing or
    mismatched checkpoint is a ``CheckpointError``.
    """
    import jax

    from hackmatrix_train import checkpoint as ckpt
    from hackmatrix_train.network import make_network
    from hackmatrix_train.symmetry import Symmetrized, check_views

    check_views(views)
    path = shipped_policy() if path is None else path
    flat, meta = ckpt.load_params(path)
    cfg = TrainConfig.from_dict(meta["config"])
    if env is None:
        from hackmatrix_env import HackMatrix

        env, env_params = HackMatrix(), env_params_of(cfg, start_stage, max_steps)
    elif env_params is None:
        env_params = env.default_params
    obs, _ = jax.eval_shape(env.reset, jax.random.key(0), env_params)
    net = make_network(
        cfg.network, obs.action_mask.shape[-1], cfg.hidden_dim, cfg.num_layers, cfg.res_blocks
    )
    one = jax.tree.map(lambda s: jax.ShapeDtypeStruct((1, *s.shape), s.dtype), obs)
    template = jax.eval_shape(net.init, jax.random.key(0), one)
    params = ckpt.unflatten_state(flat, template, source=str(path))
    if wrap_network is not None:
        net = wrap_network(net)
    if views > 1:
        net = Symmetrized(net, views)
    return Policy(net.apply, params, env_params, {**meta, "path": str(path), "views": views})


def check_random_views(random: bool, views: int) -> None:
    """A ``ValueError`` for ``--views`` beside ``--random`` (no network to average) or out of
    1..8."""
    from hackmatrix_train.symmetry import check_views

    check_views(views)
    if random and views != 1:
        raise ValueError("--views averages the checkpoint's network; --random has none")


def random_policy(start_stage=1, max_steps=None) -> Policy:
    """The uniform masked random policy, with the default recipe's env params."""
    cfg = TrainConfig()
    meta = {"config": cfg.to_dict(), "update": None, "env_steps": None, "path": None}
    return Policy(None, None, env_params_of(cfg, start_stage, max_steps), meta)


def search_config(policy: Policy, **overrides):
    """The ``SearchConfig`` a command plays with: ``SearchConfig``'s own settings (the play
    settings the sweeps chose: 2 considered actions, a tree per 8 simulations) in the policy's
    run's units (``search_config_from_train``), truncating where its episodes do; ``overrides``:
    ``SearchConfig`` fields (``None``: the default).

    A run's own ``search`` table is its learner's, not how the policy plays: a guided run's is
    its teacher (every legal action considered, 2 trees), whose improved policy is a good
    target but whose moves win less at 32 simulations (experiments/long_game.md)."""
    import dataclasses

    from hackmatrix_train.search import SearchConfig, search_config_from_train

    steps = int(policy.env_params.max_steps_in_episode)
    played = dataclasses.replace(policy.cfg, search=SearchConfig())
    return search_config_from_train(played, **{"max_steps_in_episode": steps, **overrides})


def evaluate_checkpoint(
    path=None, episodes=100, greedy=True, seed=0, start_stage=1, max_steps=None, random=False,
    env=None, env_params=None, wrap_network=None, search=(), search_fn=None, report=None,
    layout="shared", views=1,
) -> dict:  # fmt: skip
    """``hm-eval``: the summary of ``episodes`` episodes of a saved policy (``None``: the shipped
    agent), or of the random masked policy, from ``start_stage``.

    ``search``: ``SearchConfig`` overrides, one dict per search row (``summary["search"]``).
    ``search_fn``: the search those rows play (``search.run_search``'s signature; None: itself).
    ``wrap_network``, ``env``, ``env_params``, ``views``: as ``load_policy``'s. ``report``
    (``progress.Reporter``; None: silent) hears of each compile and sees the episodes' progress.
    ``layout``: how the programs of a run with search rows compile, the same summary each way
    (``hm-bench eval-start`` compares them): ``"shared"``, every row on one compiled game step,
    each row's moves compiled apart, the search rows' beside the greedy row (``play_shared``;
    a sampled or random first row plays its whole program, beside), and a greedy row alone
    too when its step compiles quick (``hackmatrix_env.eager.few_games_options``);
    ``"beside"``, each row one whole program, the search rows' compiled beside the greedy
    evaluation (``compile_beside``); ``"sequential"``, each whole program when its turn comes.
    """
    from hackmatrix_train import progress

    report = progress.QUIET if report is None else report
    if episodes < 1:
        raise ValueError("--episodes must be >= 1")
    if layout not in ("shared", "beside", "sequential"):
        raise ValueError(f"layout must be shared, beside or sequential, got {layout!r}")
    if random and not greedy:  # the same refusal as hm-watch's
        raise ValueError("--sampled chooses the checkpoint's actions; --random has none")
    check_random_views(random, views)
    check_env_args(start_stage, max_steps)
    # said before JAX and the game load (seconds): a command's first line comes at once
    name = "random" if random else ("greedy" if greedy else "sampled")
    who = Path(path).name if path is not None else "no checkpoint" if random else SHIPPED_POLICY
    rows = f"; then {len(search)} search row{'s' if len(search) > 1 else ''}" if search else ""
    report.say(f"evaluating {who}: {episodes} {name} episodes from stage {start_stage}, seed "
               f"{seed}{rows}")  # fmt: skip
    import jax
    from hackmatrix_env.eager import few_games_options

    from hackmatrix_train.evaluate import run_in_chunks, summarize
    from hackmatrix_train.search_evaluate import search_summary

    injected = env is not None
    if random and path is None and not injected:
        policy = random_policy(start_stage, max_steps)
    else:
        policy = load_policy(path, start_stage, max_steps, env, env_params, wrap_network, views)
    program_names = ()
    if not injected:
        from hackmatrix_env import HackMatrix
        from hackmatrix_env.constants import PROGRAM_NAMES

        from hackmatrix_train.trainer import make_env

        env, program_names = (HackMatrix() if random else make_env(policy.cfg)), PROGRAM_NAMES
    # the policy sees the mask it trained with; the random baseline, and an injected env, theirs
    disabled = [] if random or injected else list(policy.cfg.disabled_programs)
    env_params = policy.env_params
    apply_fn = None if random else policy.apply_fn
    max_steps = int(env_params.max_steps_in_episode)
    configs = [search_config(policy, **overrides) for overrides in search]
    compiled = [None] * len(configs)
    what = f"the evaluation ({episodes} {name} episodes)"
    # a greedy row alone plays on the shared step too when that step compiles quick (few games)
    shares = bool(configs) or few_games_options(episodes) is not None
    if shares and layout == "shared" and greedy and apply_fn is not None:
        result, compiled = play_shared(env, env_params, policy, configs, episodes, seed,
                                       search_fn, report, what)  # fmt: skip
    else:
        if configs and layout != "sequential":
            compiled = compile_beside(env, env_params, policy, configs, episodes, seed,
                                      search_fn, report)  # fmt: skip
        result = run_in_chunks(
            env, env_params, apply_fn, policy.params, episodes, max_steps, greedy,
            jax.random.key(seed), report, what=what,
            estimate="evaluation beside a search" if layout != "sequential" and configs
            else "evaluation",
        )  # fmt: skip
    summary = summarize(jax.device_get(result), program_names)
    summary["policy"] = name
    summary["checkpoint"] = policy.meta["path"]
    summary["update"] = policy.meta.get("update")
    summary["env_steps"] = policy.meta.get("env_steps")
    summary["start_stage"] = start_stage
    summary["eval_seed"] = seed
    if views > 1:  # one view, the network itself: the summary of every earlier evaluation
        summary["views"] = views
    summary["disabled_programs"] = disabled
    if search:
        summary["search"] = []
        for search_cfg, future in zip(configs, compiled, strict=True):
            row = search_summary(
                env, env_params, policy.apply_fn, policy.params, search_cfg, episodes, seed,
                program_names, search_fn=search_fn, report=report,
                compiled=future and future.result(),
            )  # fmt: skip
            row["disabled_programs"] = disabled
            summary["search"].append(row)
    return summary


def play_shared(env, env_params, policy, configs, episodes, seed, search_fn, report, what):
    """``(the greedy row's per-episode arrays, for each search row a value whose ``result()``
    is its SplitRefill)``: every row played on one compiled game step
    (``search_evaluate.RefillGames``).

    A search evaluation's program holds the real game's step beside the search, so compiled as
    whole programs, ``hm-eval --search`` compiles the game twice (specs/train.md). Here the
    search rows' moves compile on a thread (``in_background``) while the game's step and the
    greedy moves compile and the greedy row plays; each search row then plays on the same step.
    The greedy row is ``make_evaluate``'s (its moves do not depend on the slots).
    """
    from functools import partial

    import jax
    from hackmatrix_env.eager import few_games_options

    from hackmatrix_train import progress
    from hackmatrix_train.search_evaluate import (
        SEARCH_SLOTS,
        RefillGames,
        greedy_actor,
        in_background,
        search_actor,
        search_what,
    )

    max_steps = int(env_params.max_steps_in_episode)
    games = RefillGames(env, env_params, episodes, max_steps, SEARCH_SLOTS, jax.random.key(seed))
    actors = [search_actor(policy.apply_fn, c, search_fn) for c in configs]
    jobs = [partial(games.compile_chooser, act, mem, policy.params) for act, mem in actors]
    estimate = progress.COLD_COMPILE_S["search moves beside"]
    for c in configs:
        report.say(f"compiling {search_what(c)}'s moves beside the evaluation: about {estimate} "
                   "s the first time, cached after...")  # fmt: skip
    futures = in_background(jobs)
    memory = actors[0][1] if actors else None  # the greedy row reads none: the first row's
    quick = few_games_options(episodes) is not None  # the step compiles quick: a shorter wait
    estimate = progress.COLD_COMPILE_S["evaluation sharing its quick step" if quick else
                                       "evaluation sharing its step"]  # fmt: skip
    with report.compiling(what, estimate):
        split = games.split(greedy_actor(policy.apply_fn), memory, policy.params)
    result = split.play(policy.params, episodes, max_steps, report)

    def row(i):  # the search row's SplitRefill once its moves are compiled
        (act, mem), c = actors[i], configs[i]
        chooser = wait_for(futures[i], c, report)
        if games.has_step(mem):
            return games.split(act, mem, policy.params, chooser)
        with report.compiling(f"the game's step for {search_what(c)}",
                              progress.COLD_COMPILE_S["evaluation"]):  # fmt: skip
            return games.split(act, mem, policy.params, chooser)

    return result, [_Lazy(partial(row, i)) for i in range(len(configs))]


class _Lazy:
    """A value computed at its first ``result()`` (a search row's program, in its turn)."""

    def __init__(self, make):
        self.make = make

    def result(self):
        return self.make()


def compile_beside(env, env_params, policy, configs, episodes, seed, search_fn, report) -> list:
    """The search evaluations' programs (``compile_search_evaluation``), compiled on a thread
    (``in_background``) while the greedy evaluation compiles and plays: for each, a value whose
    ``result()`` waits for it (``wait_for``).

    A cold ``hm-eval --search 8`` spends a minute compiling the two programs one after the other;
    side by side their compiles overlap (specs/train.md gives the measured gain)."""
    from functools import partial

    from hackmatrix_train import progress
    from hackmatrix_train.search_evaluate import (
        compile_search_evaluation,
        in_background,
        search_what,
    )

    jobs = [
        partial(compile_search_evaluation, env, env_params, policy.apply_fn, policy.params, c,
                episodes, seed, search_fn=search_fn)
        for c in configs
    ]  # fmt: skip
    estimate = progress.COLD_COMPILE_S["search evaluation beside"]
    for c in configs:
        report.say(f"compiling {search_what(c)} beside the evaluation: about {estimate} s the "
                   "first time, cached after...")  # fmt: skip
    return [
        _Lazy(partial(wait_for, f, c, report))
        for f, c in zip(in_background(jobs), configs, strict=True)
    ]


def wait_for(future, search_cfg, report):
    """A search row's program compiled beside the greedy evaluation (``compile_beside``,
    ``play_shared``), once ready."""
    from hackmatrix_train.search_evaluate import search_what

    what = search_what(search_cfg)
    if not future.done():
        report.say(f"waiting for {what} to compile...")
    compiled = future.result()
    report.say(f"compiled {what} in {compiled.seconds:.1f} s")
    return compiled
