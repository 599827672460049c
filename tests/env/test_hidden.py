"""``resample_hidden`` (interface §3.5): what the player cannot see, re-drawn.

Four claims, each checked with fixed keys:

* the observation (every array and the mask) is unchanged, over states from random masked
  play from many reset keys;
* the output never depends on a hidden field: states that differ only in hidden parts give
  the same output for the same key, leaf by leaf (the UNDO ring's snapshots included);
* the re-draws follow the generator's laws (rules §8, §10.2 G4; chi-square and exact
  binomial tests at p > 1e-4 on fixed keys, so the verdicts never change);
* it is deterministic in its key and keeps every dtype and shape.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from builders import make_state
from hackmatrix_env import HackMatrix
from hackmatrix_env.constants import (
    GRID_SIZE,
    NUM_ENEMY_KINDS,
    NUM_PROGRAMS,
    PROGRAM_NAMES,
    PROGRAM_SPAWN,
    BlockKind,
    Content,
    EnemyKind,
    Resource,
)
from hackmatrix_env.hidden import hidden_question_map, invisible_cryptogs, resample_hidden
from hackmatrix_env.history import push_snapshot, take_snapshot
from hackmatrix_env.observation import observe
from scipy import stats

ENV = HackMatrix()
PARAMS = ENV.default_params
P_MIN = 1e-4  # a fixed-key test at this level passes or fails for good, never flakes

_resample = jax.jit(resample_hidden)
_resample_batch = jax.jit(jax.vmap(resample_hidden))
_resample_many = jax.jit(jax.vmap(resample_hidden, in_axes=(0, None)))
_observe = jax.jit(observe)
_observe_batch = jax.jit(jax.vmap(observe))


def _keys(seed: int, n: int) -> jax.Array:
    return jax.random.split(jax.random.key(seed), n)


def _leaves_equal(a, b) -> list[str]:
    """Paths of the leaves where ``a`` and ``b`` differ (value, dtype or shape)."""
    bad = []
    flat_a = jax.tree_util.tree_flatten_with_path(a)[0]
    flat_b = jax.tree.leaves(b)
    assert len(flat_a) == len(flat_b)
    for (path, x), y in zip(flat_a, flat_b, strict=True):
        x, y = np.asarray(x), np.asarray(y)
        if x.dtype != y.dtype or x.shape != y.shape or not np.array_equal(x, y):
            bad.append(jax.tree_util.keystr(path))
    return bad


def _signature(tree):
    return jax.tree.map(lambda x: (np.shape(x), np.asarray(x).dtype), tree)


# --------------------------------------------------------------------------- random states


def _play(key, n_games: int, n_chunks: int, chunk: int):
    """States after every ``chunk`` steps of uniformly random masked play (auto-reset)."""
    k_reset, k_play = jax.random.split(key)
    obs, state = jax.vmap(ENV.reset, in_axes=(0, None))(jax.random.split(k_reset, n_games), PARAMS)

    def one(carry, k):
        obs, state = carry
        k_act, k_step = jax.random.split(k)
        action = jax.random.categorical(k_act, jnp.where(obs.action_mask, 0.0, -jnp.inf))
        obs, state, *_ = jax.vmap(ENV.step, in_axes=(0, 0, 0, None))(
            jax.random.split(k_step, n_games), state, action, PARAMS
        )
        return (obs, state), None

    def one_chunk(carry, k):
        carry, _ = jax.lax.scan(one, carry, jax.random.split(k, chunk))
        return carry, carry[1]

    _, states = jax.lax.scan(one_chunk, (obs, state), jax.random.split(k_play, n_chunks))
    return jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), states)


@pytest.fixture(scope="module")
def played():
    """384 states: 48 games from their own reset keys, sampled every 30 of 240 steps."""
    return jax.jit(_play, static_argnums=(1, 2, 3))(jax.random.key(2024), 48, 8, 30)


N_PLAYED = 384  # the batch every batched call here uses (one compile each)


def _hidden_census(states) -> dict[str, int]:
    """How many states hold each kind of hidden information (so no property is vacuous)."""
    g = states.game
    question = jax.vmap(hidden_question_map)(g.grid).any(axis=(1, 2))
    cryptog = jax.vmap(invisible_cryptogs)(g.enemies, g.player.pos.astype(jnp.int32), g.show_flag)
    return {
        "question": int(question.sum()),
        "cryptog": int(cryptog.any(axis=1).sum()),
        "transmission": int(g.transmissions.alive.any(axis=1).sum()),
        "history": int((states.history.size > 0).sum()),
    }


def test_random_states_hold_hidden_information(played):
    census = _hidden_census(played)
    assert census["question"] >= 100
    assert census["cryptog"] >= 20
    assert census["transmission"] >= 20
    assert census["history"] >= 300


@pytest.mark.parametrize("seed", [0, 1])
def test_observation_unchanged_on_random_states(played, seed):
    n = played.time.shape[0]
    resampled = _resample_batch(_keys(seed, n), played)
    before, after = _observe_batch(played), _observe_batch(resampled)
    for name, x, y in zip(before._fields, before, after, strict=True):
        x, y = np.asarray(x), np.asarray(y)
        same = (x == y).reshape(n, -1).all(axis=1)
        assert same.all(), f"{name} differs in {int((~same).sum())} of {n} states"
    # ... while the state itself did change where something was hidden.
    changed = [
        not np.array_equal(a, b)
        for a, b in zip(
            np.asarray(played.game.grid.block_points).reshape(n, -1),
            np.asarray(resampled.game.grid.block_points).reshape(n, -1),
            strict=True,
        )
    ]
    assert sum(changed) >= 50


def test_independent_of_hidden_fields_on_random_states(played):
    """s' = resample(k1, s) differs from s only in hidden parts: resample(k2, .) agrees."""
    n = played.time.shape[0]
    other = _resample_batch(_keys(11, n), played)
    assert _leaves_equal(played, other)  # the pairs really differ
    k2 = _keys(12, n)
    assert _leaves_equal(_resample_batch(k2, played), _resample_batch(k2, other)) == []


# --------------------------------------------------------------------------- hand-made states


def _with_questions(state, cells):
    """``state`` with the blocks at ``cells`` turned into (unsiphoned) question blocks."""
    grid = state.game.grid
    q = np.asarray(grid.block_question).copy()
    for r, c in cells:
        assert int(grid.content[r, c]) == Content.BLOCK
        q[r, c] = True
    return state.replace(game=state.game.replace(grid=grid.replace(block_question=jnp.asarray(q))))


def _set(state, path: str, index, value):
    """``state`` with ``state.game.<path>[index] = value`` (dtype kept)."""
    obj = state.game
    *parents, leaf = path.split(".")
    chain = [obj]
    for p in parents:
        chain.append(getattr(chain[-1], p))
    arr = getattr(chain[-1], leaf)
    new = arr.at[index].set(jnp.asarray(value, arr.dtype))
    node = chain[-1].replace(**{leaf: new})
    for parent, name in zip(reversed(chain[:-1]), reversed(parents), strict=True):
        node = parent.replace(**{name: node})
    return state.replace(game=node)


def _with_snapshot(state):
    """``state`` with its own game pushed onto the UNDO ring (a snapshot holding it all)."""
    hist = push_snapshot(state.history, take_snapshot(state.game))
    return state.replace(history=hist)


def _prog(name: str) -> int:
    return PROGRAM_NAMES.index(name)


def _base_state():
    """Player (0,0); two question blocks, shown program blocks, a transmission, an invisible
    cryptog at (3,3) and a visible virus; the game pushed once onto the UNDO ring."""
    s = make_state(
        (0, 0),
        enemies=[("cryptog", (3, 3), 2), ("virus", (2, 4))],
        transmissions=[("daemon", (4, 2), 2)],
        blocks=[
            ("data", (1, 3), 3),
            ("program", (2, 2), "push"),
            ("data", (4, 4), 6),
            ("program", (3, 1), "crash"),
        ],
    )
    return _with_snapshot(_with_questions(s, [(1, 3), (2, 2)]))


def _assert_same_resample(s, t, seeds=(0, 1, 2)):
    """``t`` is a hidden perturbation of ``s``: same observation, same resample, not equal."""
    assert _leaves_equal(s, t), "the perturbation changed nothing"
    for x, y in zip(_observe(s), _observe(t), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    for seed in seeds:
        key = jax.random.key(seed)
        assert _leaves_equal(_resample(key, s), _resample(key, t)) == []


def test_perturbed_question_block_points():
    s = _base_state()
    _assert_same_resample(s, _set(s, "grid.block_points", (1, 3), 8))


def test_perturbed_question_block_program():
    s = _base_state()
    t = _set(s, "grid.block_program", (2, 2), _prog("hack"))
    t = _set(t, "grid.block_spawn", (2, 2), int(PROGRAM_SPAWN[_prog("hack")]))
    _assert_same_resample(s, t)
    # a question block hiding data instead of a program
    u = _set(s, "grid.block_kind", (2, 2), BlockKind.DATA)
    u = _set(u, "grid.block_points", (2, 2), 7)
    _assert_same_resample(s, u)


def test_perturbed_resource_under_a_block():
    s = _base_state()
    t = _set(s, "grid.resource_kind", (4, 4), Resource.CREDITS)
    _assert_same_resample(s, _set(t, "grid.resource_amount", (4, 4), 2))


def test_perturbed_transmission_kind():
    s = _base_state()
    _assert_same_resample(s, _set(s, "transmissions.kind", 0, EnemyKind.GLITCH))


@pytest.mark.parametrize("cell", [(5, 5), (1, 5), (2, 1)])
def test_perturbed_invisible_cryptog_cell(cell):
    s = _base_state()
    _assert_same_resample(s, _set(s, "enemies.pos", 0, cell))


@pytest.mark.parametrize(
    "stack",
    [
        "two_cryptogs",
        "behind_a_virus",
        "behind_a_shadowing_cryptog",
        "stack_moved",
        "other_cryptog",
    ],
)
def test_perturbed_cryptog_stacking(stack):
    """Whether an invisible cryptog shares its cell is hidden too (interface §3.5.1): behind a
    virus, under another invisible cryptog, and where a cryptog that stands first hides an
    enemy (the shown cell is empty), where that pair stands and which cryptog hides it."""
    enemies = [("virus", (2, 4)), ("cryptog", (3, 3), 2), ("cryptog", (4, 4)), ("daemon", (5, 2))]
    s = make_state((0, 0), enemies=enemies)
    if stack == "two_cryptogs":
        t = _set(s, "enemies.pos", 2, (3, 3))  # the second cryptog under the first
    elif stack == "behind_a_virus":
        t = _set(s, "enemies.pos", 1, (2, 4))  # the first cryptog behind the virus
    elif stack == "behind_a_shadowing_cryptog":
        s = _set(s, "enemies.pos", 3, (3, 3))  # the first cryptog hides the daemon
        t = _set(s, "enemies.pos", 2, (3, 3))  # the second cryptog joins them
    elif stack == "stack_moved":
        s = _set(s, "enemies.pos", 3, (3, 3))  # the first cryptog hides the daemon ...
        t = _set(_set(s, "enemies.pos", 1, (5, 5)), "enemies.pos", 3, (5, 5))  # ... elsewhere
    else:
        s = _set(s, "enemies.pos", 3, (3, 3))  # the first cryptog hides the daemon
        t = _set(s, "enemies.pos", 3, (4, 4))  # the second one does
    _assert_same_resample(_with_snapshot(s), _with_snapshot(t))


def test_perturbed_snapshot_only():
    """The ring's snapshot's hidden parts count too (the UNDO program restores them)."""
    s = _base_state()
    snaps = s.history.snapshots
    grid = snaps.grid.replace(block_points=snaps.grid.block_points.at[0, 1, 3].set(9))
    enemies = snaps.enemies.replace(pos=snaps.enemies.pos.at[0, 0].set(jnp.int8(5)))
    kinds = snaps.transmissions.kind.at[0, 0].set(jnp.int8(EnemyKind.VIRUS))
    t = s.replace(
        history=s.history.replace(
            snapshots=snaps.replace(
                grid=grid, enemies=enemies, transmissions=snaps.transmissions.replace(kind=kinds)
            )
        )
    )
    _assert_same_resample(s, t)


def test_visible_fields_kept():
    """A perturbation of a shown field is no hidden one: the outputs differ there."""
    s = _base_state()
    t = _set(s, "grid.block_program", (3, 1), _prog("warp"))  # a shown program block
    out_s, out_t = _resample(jax.random.key(0), s), _resample(jax.random.key(0), t)
    assert int(out_s.game.grid.block_program[3, 1]) == _prog("crash")
    assert int(out_t.game.grid.block_program[3, 1]) == _prog("warp")


# --------------------------------------------------------------------------- laws of the draws

N_DRAWS = 2000


def _question_board():
    """Player (0,0): four question blocks, three shown program blocks (one siphoned), a
    shown data block; a resource stack hidden under one question block."""
    s = make_state(
        (0, 0),
        blocks=[
            ("data", (1, 3), 2),
            ("data", (2, 4), 4),
            ("program", (3, 1), "debug"),
            ("program", (4, 3), "wait"),
            ("program", (2, 2), "push"),
            ("program", (3, 4), "crash"),
            ("program", (4, 1), "warp", {"siphoned": True}),
            ("data", (1, 1), 5),
        ],
    )
    s = _with_questions(s, [(1, 3), (2, 4), (3, 1), (4, 3)])
    s = _set(s, "grid.resource_kind", (2, 4), Resource.ENERGY)
    return _set(s, "grid.resource_amount", (2, 4), 3)


QUESTION_CELLS = [(1, 3), (2, 4), (3, 1), (4, 3)]
SHOWN_PROGRAMS = {_prog("push"), _prog("crash"), _prog("warp")}


@pytest.fixture(scope="module")
def question_draws():
    s = _question_board()
    return s, _resample_many(_keys(7, N_DRAWS), s).game.grid


def _uniform_p(values, support) -> float:
    counts = np.array([(values == v).sum() for v in support])
    assert counts.sum() == values.size, "a value outside the support"
    return stats.chisquare(counts).pvalue


def test_question_blocks_data_or_program_half_each(question_draws):
    _, g = question_draws
    kinds = np.stack([np.asarray(g.block_kind)[:, r, c] for r, c in QUESTION_CELLS], axis=1)
    assert np.isin(kinds, [BlockKind.DATA, BlockKind.PROGRAM]).all()
    for col in kinds.T:
        p = stats.binomtest(int((col == BlockKind.DATA).sum()), col.size, 0.5).pvalue
        assert p > P_MIN
    # the four cells draw independently: all 16 patterns equally likely
    patterns = (kinds == BlockKind.DATA) @ (1 << np.arange(4))
    assert _uniform_p(patterns, range(16)) > P_MIN


def test_question_blocks_data_points_uniform(question_draws):
    _, g = question_draws
    for r, c in QUESTION_CELLS:
        data = np.asarray(g.block_kind)[:, r, c] == BlockKind.DATA
        points = np.asarray(g.block_points)[data, r, c]
        np.testing.assert_array_equal(np.asarray(g.block_spawn)[data, r, c], points)
        assert (np.asarray(g.block_program)[data, r, c] == 0).all()
        assert _uniform_p(points, range(1, 10)) > P_MIN


def test_question_blocks_programs_free_distinct_uniform(question_draws):
    _, g = question_draws
    kind, prog = np.asarray(g.block_kind), np.asarray(g.block_program)
    spawn, points = np.asarray(g.block_spawn), np.asarray(g.block_points)
    is_prog = np.stack([kind[:, r, c] == BlockKind.PROGRAM for r, c in QUESTION_CELLS], axis=1)
    progs = np.stack([prog[:, r, c] for r, c in QUESTION_CELLS], axis=1)
    for i, (r, c) in enumerate(QUESTION_CELLS):
        rows = is_prog[:, i]
        np.testing.assert_array_equal(spawn[rows, r, c], PROGRAM_SPAWN[progs[rows, i]])
        assert (points[rows, r, c] == 0).all()
    drawn = progs[is_prog]
    assert not np.isin(drawn, list(SHOWN_PROGRAMS)).any()
    for row, mask in zip(progs, is_prog, strict=True):
        assert len(set(row[mask])) == mask.sum()  # distinct among the re-drawn blocks
    free = sorted(set(range(NUM_PROGRAMS)) - SHOWN_PROGRAMS)
    assert _uniform_p(drawn, free) > P_MIN


def test_question_blocks_keep_what_is_shown(question_draws):
    s, g = question_draws
    q = np.zeros((GRID_SIZE, GRID_SIZE), bool)
    for r, c in QUESTION_CELLS:
        q[r, c] = True
    for name in ("content", "block_question", "siphoned", "center"):
        np.testing.assert_array_equal(
            np.asarray(getattr(g, name)),
            np.broadcast_to(getattr(s.game.grid, name), (N_DRAWS, 6, 6)),
        )
    for name in ("block_kind", "block_points", "block_program", "block_spawn"):
        np.testing.assert_array_equal(
            np.asarray(getattr(g, name))[:, ~q],
            np.broadcast_to(np.asarray(getattr(s.game.grid, name))[~q], (N_DRAWS, int((~q).sum()))),
        )
    # the stack under the question block at (2,4) is gone (generation never puts one there)
    assert (np.asarray(g.resource_amount)[:, 2, 4] == 0).all()
    assert (np.asarray(g.resource_kind)[:, 2, 4] == Resource.NONE).all()


def _question_contents(grid, cells_mask):
    """(is_data, points, program) of every cell where ``cells_mask`` (bool[N,6,6])."""
    return (
        np.asarray(grid.block_kind)[cells_mask] == BlockKind.DATA,
        np.asarray(grid.block_points)[cells_mask],
        np.asarray(grid.block_program)[cells_mask],
    )


def test_question_blocks_match_stage_generation():
    """The resampler's content law equals the generator's own, on the generator's boards."""
    n = 8 * N_PLAYED
    _, states = jax.jit(jax.vmap(ENV.reset, in_axes=(0, None)))(_keys(31, n), PARAMS)
    hidden = np.asarray(jax.vmap(hidden_question_map)(states.game.grid))
    assert hidden.sum() >= 1000
    gen = _question_contents(states.game.grid, hidden)
    chunks = []
    for i in range(n // N_PLAYED):
        part = jax.tree.map(lambda x, i=i: x[i * N_PLAYED : (i + 1) * N_PLAYED], states)
        chunks.append(_resample_batch(_keys(32 + i, N_PLAYED), part).game.grid)
    redrawn = jax.tree.map(lambda *xs: jnp.concatenate(xs), *chunks)
    res = _question_contents(redrawn, hidden)
    np.testing.assert_array_equal(gen[1][gen[0]] < 1, False)  # generated data has points 1..9

    def table(values_a, values_b, support):
        return np.array([[(v == s).sum() for s in support] for v in (values_a, values_b)])

    kind = table(gen[0], res[0], [True, False])
    points = table(gen[1][gen[0]], res[1][res[0]], range(1, 10))
    programs = table(gen[2][~gen[0]], res[2][~res[0]], range(NUM_PROGRAMS))
    for t in (kind, points, programs):
        assert t.sum(axis=1).min() > 0
        assert stats.chi2_contingency(t).pvalue > P_MIN


def test_transmission_kinds_uniform():
    s = make_state(
        (0, 0),
        transmissions=[("virus", (2, 3), 1), ("cryptog", (4, 4), 3), ("glitch", (5, 1), 2)],
    )
    t = _resample_many(_keys(8, N_DRAWS), s).game.transmissions
    kinds = np.asarray(t.kind)
    for i in range(3):
        assert _uniform_p(kinds[:, i], range(NUM_ENEMY_KINDS)) > P_MIN
    assert _uniform_p(kinds[:, 0] * 4 + kinds[:, 1], range(16)) > P_MIN  # independent
    assert (kinds[:, 3:] == 0).all()  # free slots stay blank
    for name in ("pos", "countdown", "alive", "from_task", "from_siphon"):
        np.testing.assert_array_equal(
            np.asarray(getattr(t, name)),
            np.broadcast_to(getattr(s.game.transmissions, name), getattr(t, name).shape),
        )


def _eligible_cells(player, blocks, occupied):
    return [
        (r, c)
        for r, c in itertools.product(range(GRID_SIZE), repeat=2)
        if r != player[0] and c != player[1] and (r, c) not in blocks and (r, c) not in occupied
    ]


def test_invisible_cryptog_cell_uniform_over_eligible():
    blocks = [(1, 1), (2, 2), (3, 4)]
    s = make_state(
        (0, 0),
        enemies=[("virus", (2, 4)), ("cryptog", (3, 3), 1), ("daemon", (0, 3))],
        transmissions=[("virus", (4, 2), 2)],
        blocks=[("data", b, 3) for b in blocks],
    )
    e = _resample_many(_keys(9, N_DRAWS), s).game.enemies
    eligible = _eligible_cells((0, 0), blocks, {(2, 4), (4, 2)})
    assert len(eligible) == 25 - 3 - 2
    pos = np.asarray(e.pos)
    cells = pos[:, 1, 0] * GRID_SIZE + pos[:, 1, 1]
    assert _uniform_p(cells, [r * GRID_SIZE + c for r, c in eligible]) > P_MIN
    # the other enemies and everything but the cryptog's cell are kept
    np.testing.assert_array_equal(pos[:, 0], np.broadcast_to([2, 4], (N_DRAWS, 2)))
    np.testing.assert_array_equal(pos[:, 2], np.broadcast_to([0, 3], (N_DRAWS, 2)))
    for name in ("kind", "hp", "alive", "last_known", "disabled", "stunned"):
        np.testing.assert_array_equal(
            np.asarray(getattr(e, name)),
            np.broadcast_to(getattr(s.game.enemies, name), getattr(e, name).shape),
        )


def test_two_invisible_cryptogs_take_distinct_eligible_cells():
    s = make_state((2, 2), enemies=[("cryptog", (0, 0), 2), ("cryptog", (5, 5), 2)])
    pos = np.asarray(_resample_many(_keys(10, N_DRAWS), s).game.enemies.pos)[:, :2]
    eligible = set(_eligible_cells((2, 2), [], set()))
    assert all((int(r), int(c)) in eligible for r, c in pos.reshape(-1, 2))
    assert (pos[:, 0] != pos[:, 1]).any(axis=1).all()
    # both move (25 cells for 2 cryptogs): their old cells are not special
    assert len({tuple(p) for p in pos[:, 0]}) == len(eligible)


@pytest.mark.parametrize("case", ["on_row", "on_col", "show"])
def test_visible_cryptogs_stay(case):
    cell = {"on_row": (0, 4), "on_col": (3, 0), "show": (3, 3)}[case]
    s = make_state((0, 0), enemies=[("cryptog", cell, 2)], show=case == "show")
    for key in _keys(13, 16):
        np.testing.assert_array_equal(_resample(key, s).game.enemies.pos, s.game.enemies.pos)


def test_hidden_enemy_goes_with_its_cryptog_uniform_over_eligible():
    """A virus an invisible cryptog hides (both at (3,3), the cryptog first) is hidden too: the
    pair lands together on a uniform eligible cell, the observation unchanged."""
    blocks = [(1, 1), (2, 2)]
    s = make_state(
        (0, 0),
        enemies=[("cryptog", (3, 3), 2), ("virus", (4, 4)), ("daemon", (2, 4))],
        blocks=[("data", b, 3) for b in blocks],
    )
    s = _set(s, "enemies.pos", 1, (3, 3))  # the virus stands under the cryptog
    out = _resample_many(_keys(14, N_DRAWS), s)
    pos = np.asarray(out.game.enemies.pos)
    np.testing.assert_array_equal(pos[:, 0], pos[:, 1])
    np.testing.assert_array_equal(pos[:, 2], np.broadcast_to([2, 4], (N_DRAWS, 2)))
    eligible = _eligible_cells((0, 0), blocks, {(2, 4)})
    cells = pos[:, 0, 0] * GRID_SIZE + pos[:, 0, 1]
    assert _uniform_p(cells, [r * GRID_SIZE + c for r, c in eligible]) > P_MIN
    want = _observe(s)
    for i in range(0, N_DRAWS, 250):
        one = jax.tree.map(lambda x, i=i: x[i], out)
        for x, y in zip(_observe(one), want, strict=True):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


# --------------------------------------------------------------------------- determinism, dtypes


def test_same_key_same_state_and_dtypes_kept():
    s = _base_state()
    a, b = _resample(jax.random.key(5), s), _resample(jax.random.key(5), s)
    assert _leaves_equal(a, b) == []
    assert _signature(a) == _signature(s)


def test_different_keys_differ():
    s = _base_state()
    outs = [_resample(jax.random.key(k), s) for k in range(8)]
    assert sum(bool(_leaves_equal(outs[0], o)) for o in outs[1:]) == 7


def test_dtypes_kept_on_random_states(played):
    n = played.time.shape[0]
    assert _signature(_resample_batch(_keys(3, n), played)) == _signature(played)
