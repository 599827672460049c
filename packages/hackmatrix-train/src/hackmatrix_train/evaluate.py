"""Policy evaluation: N whole episodes in parallel, greedy or sampled, plus summaries.

Each of the N envs plays exactly its first episode (the gymnax auto-reset afterwards is ignored).
The scan runs ``max_steps_in_episode`` steps, so every episode ends by termination or truncation.
``random_policy`` evaluates a uniform policy over valid actions (the masked random baseline).

Stage completions are split by how they happen: by reaching the exit of the current board, or
through the cross-stage UNDO quirk (rules §11.4): an UNDO right after a stage change restores the
previous stage's board, whose exit *cell* is no longer at ``exit_pos``, and walking onto that old
exit completes the new stage again. A completion from a board whose exit cell is not at
``exit_pos`` is counted as a quirk completion, so progress from farming it stays visible.

Siphons are split by what they reach (``siphon_blocks``): a siphon whose cross holds no
unsiphoned block only picks up credits and energy, so "siphons per episode" alone would hide a
policy that never takes a data or program block.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from hackmatrix_env.constants import NUM_PROGRAMS, Action, BlockKind, Content
from hackmatrix_env.siphon import owned_program_map, siphon_reach

from hackmatrix_train import progress
from hackmatrix_train.network import greedy_action, masked_categorical
from hackmatrix_train.stats import (
    STAGE_COMPONENT,
    VICTORY_COMPONENT,
    hackmatrix_game,
    programs_owned_of,
    stage_of,
)


def on_restored_board(state) -> jax.Array:
    """bool[N]: the board's exit cell is not at ``exit_pos`` (an UNDO across a stage change).

    In ordinary play the exit cell and ``exit_pos`` agree; they differ only on a board restored
    by the cross-stage UNDO quirk (rules §11.4). Envs without these fields give all False.
    """
    game = hackmatrix_game(state)
    if game is None:
        return jnp.zeros(jax.tree.leaves(state)[0].shape[:1], bool)
    grid, exit_pos = game.grid, game.exit_pos
    rows = jnp.arange(exit_pos.shape[0])
    cell = grid.content[rows, exit_pos[:, 0], exit_pos[:, 1]]
    return cell != Content.EXIT


SIPHON_BLOCK_KEYS = ("data_blocks", "program_blocks", "programs_acquired")


def _blocks_in_reach(game):
    """(data blocks, program blocks, programs not yet owned among them) a siphon would take."""
    grid = game.grid
    reach = siphon_reach(game) & (grid.content == Content.BLOCK)
    data = reach & (grid.block_kind == BlockKind.DATA)
    prog = reach & (grid.block_kind == BlockKind.PROGRAM)
    prog_id = jnp.clip(grid.block_program.astype(jnp.int32), 0, NUM_PROGRAMS - 1)
    new = prog & ~owned_program_map(game)[prog_id]
    # a cross holds at most one block per program (programs are distinct within a stage)
    return data.sum(dtype=jnp.int32), prog.sum(dtype=jnp.int32), new.sum(dtype=jnp.int32)


def siphon_blocks(state, siphoned) -> dict:
    """int32[N] each: data / program blocks taken, programs acquired, by this step's siphons.

    ``siphoned`` (bool[N]) marks the rows whose action was a successful siphon; the counts
    come from the state before it (rules §5: every unsiphoned cell of the cross is processed).
    """
    n = siphoned.shape[0]
    game = hackmatrix_game(state)
    if game is None:
        zero = jnp.zeros(n, jnp.int32)
        return {"data_blocks": zero, "program_blocks": zero, "programs_acquired": zero}
    data, prog, new = jax.vmap(_blocks_in_reach)(game)
    keep = lambda x: jnp.where(siphoned, x, 0)  # noqa: E731
    return {"data_blocks": keep(data), "program_blocks": keep(prog), "programs_acquired": keep(new)}


def new_tally(state, num_episodes: int, num_actions: int) -> dict:
    """Per-episode accumulators of ``tally_step`` for episodes starting from ``state``."""
    n = num_episodes
    return {
        "alive": jnp.ones(n, bool),
        "at_step_limit": jnp.zeros(n, bool),
        "illegal_end": jnp.zeros(n, bool),
        "ret": jnp.zeros(n, jnp.float32),
        "length": jnp.zeros(n, jnp.int32),
        "stage": stage_of(state, n),
        "won": jnp.zeros(n, bool),
        "actions": jnp.zeros((n, num_actions), jnp.int32),
        "exit_completions": jnp.zeros(n, jnp.int32),
        "quirk_completions": jnp.zeros(n, jnp.int32),
        "programs_owned": programs_owned_of(state, n),
        "block_siphons": jnp.zeros(n, jnp.int32),
        "data_blocks": jnp.zeros(n, jnp.int32),
        "program_blocks": jnp.zeros(n, jnp.int32),
        "programs_acquired": jnp.zeros(n, jnp.int32),
    }


def tally_step(acc: dict, state_before, action, reward, terminated, truncated, info) -> dict:
    """Add one batched env step to the episodes' accumulators; finished episodes stay frozen.

    A stage completion (victory included) counts under ``quirk_completions`` when it starts from
    a board restored across a stage change (``on_restored_board``), else ``exit_completions``.
    """
    n, num_actions = acc["actions"].shape
    alive = acc["alive"]
    rb = info.get("reward_breakdown")
    if rb is not None and rb.shape[-1] > VICTORY_COMPONENT:
        won = rb[:, VICTORY_COMPONENT] > 0
        completed = (rb[:, STAGE_COMPONENT] > 0) & ~won
    else:
        won = jnp.zeros(n, bool)
        completed = jnp.zeros(n, bool)
    stage_before = stage_of(state_before, n)
    reached = jnp.minimum(stage_before + completed.astype(jnp.int32), 8)
    finished = alive & (completed | won)
    restored = on_restored_board(state_before)
    played = jnp.where(alive[:, None], jax.nn.one_hot(action, num_actions, dtype=jnp.int32), 0)
    invalid = info.get("invalid_action", jnp.zeros(n, bool))
    siphoned = alive & (action == int(Action.SIPHON)) & ~invalid
    taken = siphon_blocks(state_before, siphoned)  # zeros for another env's state
    return {
        "alive": alive & ~(terminated | truncated),
        # cut by max_steps_in_episode while alive: a policy that stalls or farms (a siphon
        # undone and taken again, say) runs into the limit instead of ending the game
        "at_step_limit": acc["at_step_limit"] | (alive & truncated & ~terminated),
        # the game refuses a masked action and ends the episode (interface §1): a policy
        # that plays from the real mask never does
        "illegal_end": acc["illegal_end"] | (alive & invalid),
        "ret": acc["ret"] + jnp.where(alive, reward, 0.0),
        "length": acc["length"] + alive.astype(jnp.int32),
        "stage": jnp.where(alive, jnp.maximum(acc["stage"], reached), acc["stage"]),
        "won": acc["won"] | (alive & won),
        "actions": acc["actions"] + played,
        "exit_completions": acc["exit_completions"] + (finished & ~restored),
        "quirk_completions": acc["quirk_completions"] + (finished & restored),
        # the most programs owned at once, over the states the episode's actions came from
        "programs_owned": jnp.where(
            alive,
            jnp.maximum(acc["programs_owned"], programs_owned_of(state_before, n)),
            acc["programs_owned"],
        ),
        "block_siphons": acc["block_siphons"]
        + ((taken["data_blocks"] + taken["program_blocks"]) > 0).astype(jnp.int32),
        **{k: acc[k] + taken[k] for k in SIPHON_BLOCK_KEYS},
    }


def start_episodes(env, env_params, key: jax.Array, num_episodes: int):
    """``(run key, obs, state, tally)``: the evaluation's episodes reset from ``key``'s first
    half (episode ``i`` from reset key ``i``), the second half left for their steps."""
    k_reset, k_run = jax.random.split(key)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(k_reset, num_episodes), env_params
    )
    return k_run, obs, state, new_tally(state, num_episodes, obs.action_mask.shape[-1])


def evaluate_parts(env, env_params, apply_fn, num_episodes: int, max_steps: int, greedy: bool):
    """``make_evaluate``'s program in two parts, for a host loop that shows progress.

    ``start(params, key) -> carry`` resets the episodes; ``advance(params, carry, keys) ->
    carry`` plays one step per key (the run's step keys ``t0..t1``, ``run_keys``). Episode ``i``
    is the same whether its steps come in one call or in several (``run_in_chunks``).
    """
    del max_steps  # the parts take any number of steps; kept for make_evaluate's signature
    step_fn = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def policy(params, obs, key):
        mask = obs.action_mask
        if apply_fn is None:
            logits = jnp.zeros(mask.shape, jnp.float32)
        else:
            logits, _ = apply_fn(params, obs)
        if greedy and apply_fn is not None:
            return greedy_action(logits, mask)
        return masked_categorical(logits, mask).sample(seed=key).astype(jnp.int32)

    def start(params, key):
        del params
        k_run, obs, state, acc = start_episodes(env, env_params, key, num_episodes)
        return k_run, (obs, state, acc)

    def advance(params, carry, keys):
        def body(c, key):
            obs, state, acc = c
            k_pol, k_env = jax.random.split(key)
            action = policy(params, obs, k_pol)
            new_obs, new_state, reward, term, trunc, info = step_fn(
                jax.random.split(k_env, num_episodes), state, action, env_params
            )
            acc = tally_step(acc, state, action, reward, term, trunc, info)
            return (new_obs, new_state, acc), None

        return jax.lax.scan(body, carry, keys)[0]

    return start, advance


def make_evaluate(env, env_params, apply_fn, num_episodes: int, max_steps: int, greedy: bool):
    """Jitted ``evaluate(params, key) -> dict of per-episode numpy-able arrays``.

    ``apply_fn=None`` gives the uniform random masked policy (params ignored). One program
    plays all ``max_steps`` steps; ``evaluate_params`` plays the same episodes in chunks.
    """
    start, advance = evaluate_parts(env, env_params, apply_fn, num_episodes, max_steps, greedy)

    @jax.jit
    def evaluate(params, key):
        k_run, carry = start(params, key)
        return advance(params, carry, jax.random.split(k_run, max_steps))[2]

    return evaluate


def chunk_length(max_steps: int, chunks: int = 10) -> int:
    """Steps per host call: the divisor of ``max_steps`` nearest ``max_steps / chunks``.

    Every call then has the same length (one compiled program). Without a divisor near that
    (a prime ``max_steps``), one call plays every step.
    """
    want = max_steps / chunks
    best = min(
        (d for d in range(1, max_steps + 1) if max_steps % d == 0), key=lambda d: abs(d - want)
    )
    return best if max_steps // best <= 4 * chunks else max_steps


def run_in_chunks(
    env, env_params, apply_fn, params, num_episodes: int, max_steps: int, greedy: bool, key,
    report=progress.QUIET, what: str = "the evaluation", estimate: str = "evaluation",
) -> dict:  # fmt: skip
    """``make_evaluate(...)(params, key)``, played ``chunk_length`` steps per call.

    Between calls a progress bar (``report.bar``) advances by the episodes that ended, and the
    loop stops once every episode has ended: the remaining steps would change nothing (a
    finished episode's tally is frozen), so the result is ``make_evaluate``'s, sooner. The
    compile comes first and ``report.compiling`` announces it, with the cold-compile figure
    ``progress.COLD_COMPILE_S[estimate]``.
    """
    start, advance = evaluate_parts(env, env_params, apply_fn, num_episodes, max_steps, greedy)
    length = chunk_length(max_steps)
    with report.compiling(what, progress.COLD_COMPILE_S[estimate]):
        k_run, carry = jax.jit(start)(params, key)
        keys = jax.random.split(k_run, max_steps)
        advance = jax.jit(advance).lower(params, carry, keys[:length]).compile()
    ended = 0
    with report.bar(num_episodes, "episodes") as bar:
        for t0 in range(0, max_steps, length):
            carry = advance(params, carry, keys[t0 : t0 + length])
            alive = int(carry[2]["alive"].sum())
            bar.update(num_episodes - alive - ended)
            ended = num_episodes - alive
            if alive == 0:
                break
    return carry[2]


def standard_error(per_episode) -> float:
    """One standard error of the mean of a per-episode figure (a rate: of its 0/1 outcomes):
    the sample's standard deviation over the square root of the episodes, 0 for one episode.
    The difference of two rows of as many episodes has √2 times it."""
    x = np.asarray(per_episode, dtype=np.float64)
    if x.size < 2:
        return 0.0
    return float(x.std(ddof=1) / np.sqrt(x.size))


def summarize(result: dict, program_names=()) -> dict:
    """Aggregate per-episode arrays into a JSON-ready summary."""
    r = {k: np.asarray(v) for k, v in result.items()}
    n = len(r["ret"])
    actions = r["actions"]
    total = max(int(actions.sum()), 1)
    out = {
        "episodes": n,
        "return_mean": float(r["ret"].mean()),
        "return_std": float(r["ret"].std()),
        "return_min": float(r["ret"].min()),
        "return_max": float(r["ret"].max()),
        "length_mean": float(r["length"].mean()),
        "unfinished": int(r["alive"].sum()),
        "win_rate": float(r["won"].mean()),
        "win_rate_se": standard_error(r["won"]),
        "stage_distribution": {
            str(s): int(c) for s, c in zip(*np.unique(r["stage"], return_counts=True), strict=True)
        },
        "stage_mean": float(r["stage"].mean()),
        "stage_se": standard_error(r["stage"]),
        "stage_3plus_frac": float((r["stage"] >= 3).mean()),
        "stage_5plus_frac": float((r["stage"] >= 5).mean()),
    }
    if "at_step_limit" in r:
        out["episodes_at_step_limit"] = int(r["at_step_limit"].sum())
    if "illegal_end" in r:
        out["episodes_ended_by_an_illegal_move"] = int(r["illegal_end"].sum())
    if "exit_completions" in r:
        out["stage_completions_by_exit"] = int(r["exit_completions"].sum())
        out["stage_completions_by_undo_quirk"] = int(r["quirk_completions"].sum())
        # a win through the quirk pays the victory bonus too: the quirk-free rate is the one
        # that says the policy beat the game by playing it (rules §11.4)
        quirk = r["quirk_completions"] > 0
        out["episodes_using_the_quirk"] = int(quirk.sum())
        out["win_rate_without_quirk"] = float((r["won"] & ~quirk).mean())
    if actions.shape[1] == 28:
        out["move_frac"] = float(actions[:, :4].sum() / total)
        out["siphon_frac"] = float(actions[:, 4].sum() / total)
        out["program_frac"] = float(actions[:, 5:].sum() / total)
        out["siphons_per_episode"] = float(actions[:, 4].sum() / n)
        out["programs_per_episode"] = float(actions[:, 5:].sum() / n)
        names = program_names or [f"p{i}" for i in range(23)]
        out["program_use"] = {name: int(actions[:, 5 + i].sum()) for i, name in enumerate(names)}
        others = np.delete(actions[:, 5:], int(Action.UNDO) - int(Action.PUSH), axis=1)
        out["non_undo_programs_per_episode"] = float(others.sum() / n)
        out["distinct_programs_used"] = int((actions[:, 5:].sum(axis=0) > 0).sum())
    if "programs_owned" in r:
        out["programs_owned_mean"] = float(r["programs_owned"].mean())
    if "block_siphons" in r:
        # siphons that reached a block; the rest only picked up credits and energy
        out["block_siphons_per_episode"] = float(r["block_siphons"].sum() / n)
        out["data_blocks_siphoned_per_episode"] = float(r["data_blocks"].sum() / n)
        out["program_blocks_siphoned_per_episode"] = float(r["program_blocks"].sum() / n)
        out["programs_acquired_per_episode"] = float(r["programs_acquired"].sum() / n)
        out["block_siphons_se"] = standard_error(r["block_siphons"])
        out["programs_acquired_se"] = standard_error(r["programs_acquired"])
    return out


def evaluate_params(
    env, env_params, apply_fn, params, episodes: int, seed: int, greedy: bool = True,
    program_names=(), report=progress.QUIET,
) -> dict:  # fmt: skip
    """Summary of ``episodes`` whole episodes of ``apply_fn(params)`` from a fixed key ``seed``.

    The end-of-run evaluation of ``hm-train``: evaluate at stage 1 by passing ``env_params``
    with ``start_stage=1``. Episodes run to termination or ``max_steps_in_episode``
    (``run_in_chunks``: ``make_evaluate``'s episodes, with progress on ``report``).
    """
    max_steps = int(env_params.max_steps_in_episode)
    policy = "random" if apply_fn is None else ("greedy" if greedy else "sampled")
    result = run_in_chunks(
        env, env_params, apply_fn, params, episodes, max_steps, greedy, jax.random.key(seed),
        report, what=f"the evaluation ({episodes} {policy} episodes)",
    )  # fmt: skip
    summary = summarize(jax.device_get(result), program_names)
    summary["policy"] = "greedy" if greedy else "sampled"
    summary["eval_seed"] = seed
    return summary
