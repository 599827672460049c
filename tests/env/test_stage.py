"""Reset, stage generation and stage completion (rules §9-§10), checked against the spec.

Distribution checks use many keys under one jitted vmap and chi-square /
binomial tolerances; the layout validity test is compared with a literal
breadth-first search written from rules §10.2.
"""

from __future__ import annotations

from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from builders import make_state
from hackmatrix_env import game, stage
from hackmatrix_env.constants import PROGRAM_SPAWN, Content, Resource
from hackmatrix_env.types import EnvParams
from scipy import stats

N_KEYS = 3000
CORNERS = [(0, 0), (0, 5), (5, 0), (5, 5)]


def _np(tree):
    return jax.tree.map(np.asarray, tree)


def make_game(player=(0, 0), **kwargs):
    """The game of ``make_state(...)``: the rule functions take a ``GameState``."""
    return make_state(player, **kwargs).game


def _trees_equal(a, b) -> bool:
    return all(
        np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    )


_reset_batch = jax.jit(jax.vmap(stage.reset_game, in_axes=(0, None)))


@pytest.fixture(scope="module")
def resets():
    """N_KEYS fresh games (stage 1), as numpy."""
    keys = jax.random.split(jax.random.key(2024), N_KEYS)
    return _np(_reset_batch(keys, EnvParams()))


def _literal_valid(blocks: np.ndarray, exit_pos) -> bool:
    """Rules §10.2 V1 (BFS from (0,0), exit reached but not expanded unless the start) and V2."""
    free = ~blocks
    start = (0, 0)
    seen = np.zeros((6, 6), bool)
    seen[start] = True
    q = deque([start])
    while q:
        cell = q.popleft()
        if cell == tuple(exit_pos) and cell != start:
            continue
        r, c = cell
        for dr, dc in ((1, 0), (-1, 0), (0, -1), (0, 1)):
            nr, nc = r + dr, c + dc
            if 0 <= nr < 6 and 0 <= nc < 6 and free[nr, nc] and not seen[nr, nc]:
                seen[nr, nc] = True
                q.append((nr, nc))
    v1 = bool((seen | blocks).all())
    v2 = True
    for r, c in zip(*np.nonzero(blocks), strict=True):
        nbrs = [(r + dr, c + dc) for dr, dc in ((1, 0), (-1, 0), (0, -1), (0, 1))]
        if not any(0 <= a < 6 and 0 <= b < 6 and free[a, b] for a, b in nbrs):
            v2 = False
    return v1 and v2


def _layout_word(blocks: np.ndarray) -> int:
    word = 0
    for k, (r, c) in enumerate(stage.NONCORNER):
        if blocks[r, c]:
            word |= 1 << k
    return word


_valid_batch = jax.jit(jax.vmap(stage.is_layout_valid))


def test_layout_validity_matches_literal_bfs():
    rng = np.random.default_rng(0)
    boards, exits, expected = [], [], []
    for i in range(3000):
        n = rng.integers(5, 14)
        blocks = np.zeros((6, 6), bool)
        cells = rng.choice(len(stage.NONCORNER), size=n, replace=False)
        for k in cells:
            blocks[tuple(stage.NONCORNER[k])] = True
        ex = CORNERS[i % 4]
        boards.append(_layout_word(blocks))
        exits.append(ex)
        expected.append(_literal_valid(blocks, ex))
    got = np.asarray(
        _valid_batch(jnp.asarray(np.array(boards, np.uint32)), jnp.asarray(exits, jnp.int8))
    )
    assert 0.05 < np.mean(expected) < 0.95  # both outcomes well represented
    assert (got == np.array(expected)).all()


@pytest.mark.parametrize(
    "blocks,exit_pos,valid",
    [
        ([(1, 1), (2, 0)], (0, 0), True),  # rules §10.2 quirk: the exit at the start is a passage
        ([(1, 1), (2, 0)], (5, 5), True),  # (1,0) hangs off the start, always expanded
        ([(4, 4), (5, 3)], (5, 5), False),  # pocket (5,4) only through the exit
        ([(4, 4), (5, 3)], (0, 5), True),
        ([(4, 5), (5, 4)], (5, 5), False),  # exit unreachable
        ([(0, 1), (1, 0)], (5, 5), False),  # start sealed off
        ([(2, 2), (2, 3), (3, 2), (3, 3)], (5, 5), True),
        ([(0, 1), (1, 1), (1, 0)], (5, 5), False),  # the start (0,0) is walled in
    ],
)
def test_layout_validity_examples(blocks, exit_pos, valid):
    b = np.zeros((6, 6), bool)
    for cell in blocks:
        b[cell] = True
    assert _literal_valid(b, exit_pos) == valid
    got = stage.is_layout_valid(jnp.uint32(_layout_word(b)), jnp.asarray(exit_pos, jnp.int8))
    assert bool(got) == valid


def test_v2_siphonability():
    # A block whose neighbours are all blocks fails V2 even when V1 holds.
    b = np.zeros((6, 6), bool)
    for cell in [(2, 2), (1, 2), (3, 2), (2, 1), (2, 3)]:
        b[cell] = True
    assert not _literal_valid(b, (5, 5))
    assert not bool(stage.is_layout_valid(jnp.uint32(_layout_word(b)), jnp.array([5, 5], jnp.int8)))


def test_sample_layouts_uniform_subsets():
    # Eligible = 6 cells, N = 5: the 6 possible subsets are equally likely.
    elig_cells = [3, 7, 12, 20, 25, 31]
    eligible = sum(1 << k for k in elig_cells)
    f = jax.jit(jax.vmap(lambda s: stage.sample_layouts(s, jnp.uint32(eligible), jnp.int32(5))))
    seeds = jax.random.bits(jax.random.key(1), (400, 2), jnp.uint32)
    words = np.asarray(f(seeds)).reshape(-1)
    assert all(bin(int(w)).count("1") == 5 and int(w) & ~eligible == 0 for w in words)
    _, counts = np.unique(words, return_counts=True)
    assert len(counts) == 6 and stats.chisquare(counts).pvalue > 1e-4


def test_sample_layouts_cell_marginals():
    # All 32 cells eligible, N = 11: each cell is in the subset w.p. 11/32.
    f = jax.jit(jax.vmap(lambda s: stage.sample_layouts(s, jnp.uint32(0xFFFFFFFF), jnp.int32(11))))
    seeds = jax.random.bits(jax.random.key(2), (200, 2), jnp.uint32)
    words = np.asarray(f(seeds)).reshape(-1).astype(np.uint64)
    bits = (words[:, None] >> np.arange(32, dtype=np.uint64)) & 1
    assert (bits.sum(1) == 11).all()
    counts = bits.sum(0)
    assert stats.chisquare(counts).pvalue > 1e-4


# --------------------------------------------------------------------------- reset (R1-R4, G1-G6)


def test_reset_globals(resets):
    s = resets
    assert (s.stage == 1).all() and (s.turn == 0).all()
    assert (s.task_interval == 12).all() and (s.next_task_turn == 12).all()
    assert (s.pending_siphon_spawns == 0).all() and not s.step_flag.any()
    assert not (s.show_flag | s.calm_flag).any() and (s.atk_uses == 0).all()
    assert (s.player.hp == 3).all() and (s.player.attack == 1).all() and (s.player.score == 0).all()
    assert (s.num_owned == 0).all()
    assert not s.enemies.alive.any() and not s.overflow.any()


def test_reset_corner_and_bonus_uniform(resets):
    s = resets
    pos = [tuple(p) for p in s.player.pos.tolist()]
    counts = [pos.count(c) for c in CORNERS]
    assert sum(counts) == N_KEYS and stats.chisquare(counts).pvalue > 1e-4
    bonus = np.stack([s.player.credits == 10, s.player.energy == 11, s.player.siphons == 1], 1)
    assert (bonus.sum(1) == 1).all()
    assert ((s.player.credits == 0) | (s.player.credits == 10)).all()
    assert stats.chisquare(bonus.sum(0)).pvalue > 1e-4


def test_exit_and_pickups(resets):
    s = resets
    exits = [tuple(e) for e in s.exit_pos.tolist()]
    for i in range(N_KEYS):
        player = tuple(s.player.pos[i])
        assert exits[i] != player and exits[i] in CORNERS
        content = s.grid.content[i]
        assert content[exits[i]] == Content.EXIT and (content == Content.EXIT).sum() == 1
        assert content[player] == Content.EMPTY
        others = [c for c in CORNERS if c not in (player, exits[i])]
        assert all(content[c] == Content.DATA_SIPHON for c in others)
        assert (content == Content.DATA_SIPHON).sum() == 2
    # exit uniform over the three other corners: relative position to the player
    rel = [
        (exits[i][0] != s.player.pos[i][0]) * 2 + (exits[i][1] != s.player.pos[i][1])
        for i in range(N_KEYS)
    ]
    counts = np.bincount(rel, minlength=4)[1:]
    assert stats.chisquare(counts).pvalue > 1e-4


def test_block_layouts(resets):
    s = resets
    blocks = s.grid.content == Content.BLOCK
    n = blocks.sum((1, 2))
    assert not blocks[:, [0, 0, 5, 5], [0, 5, 0, 5]].any()
    # N uniform 5..11; all 100 attempts fail with probability ~1e-4 at N = 11.
    assert (n == 0).sum() <= 3 and ((n >= 5) & (n <= 11) | (n == 0)).all()
    counts = np.bincount(n[n > 0], minlength=12)[5:]
    assert stats.chisquare(counts).pvalue > 1e-4
    for i in range(0, N_KEYS, 7):
        assert _literal_valid(blocks[i], tuple(s.exit_pos[i]))


def test_block_types(resets):
    g = resets.grid
    blocks = g.content == Content.BLOCK
    kind = g.block_kind[blocks]
    q = g.block_question[blocks]
    shares = [
        ((kind == 0) & ~q).sum(),
        ((kind == 1) & ~q).sum(),
        ((kind == 0) & q).sum(),
        ((kind == 1) & q).sum(),
    ]
    expected = np.array([0.45, 0.45, 0.05, 0.05]) * blocks.sum()
    assert stats.chisquare(shares, expected).pvalue > 1e-4
    pts = g.block_points[blocks][kind == 0]
    assert stats.chisquare(np.bincount(pts, minlength=10)[1:]).pvalue > 1e-4
    assert (g.block_spawn[blocks][kind == 0] == pts).all()
    progs = g.block_program[blocks][kind == 1]
    assert (g.block_spawn[blocks][kind == 1] == PROGRAM_SPAWN[progs]).all()
    assert (g.block_points[blocks][kind == 1] == 0).all()
    assert stats.chisquare(np.bincount(progs, minlength=23)).pvalue > 1e-4
    # Programs are distinct within a stage.
    for i in range(len(g.content)):
        b = blocks[i] & (g.block_kind[i] == 1)
        p = g.block_program[i][b]
        assert len(set(p.tolist())) == len(p)
    assert not (g.siphoned | g.center).any()


def test_resources(resets):
    g = resets.grid
    gets = (g.content != Content.BLOCK) & (g.content != Content.EXIT)
    assert ((g.resource_kind != Resource.NONE) == gets).all()
    assert ((g.resource_amount > 0) == gets).all()
    amounts = np.bincount(g.resource_amount[gets], minlength=4)[1:]
    expected = np.array([0.45, 0.45, 0.10]) * gets.sum()
    assert stats.chisquare(amounts, expected).pvalue > 1e-4
    k = g.resource_kind[gets]
    assert stats.binomtest(int((k == Resource.CREDITS).sum()), k.size, 0.5).pvalue > 1e-4


def test_stage_transmission(resets):
    s = resets
    t = s.transmissions
    assert (t.alive.sum(1) == 1).all() and (t.countdown[:, 0] == 1).all()
    assert not (t.from_task | t.from_siphon).any()
    assert stats.chisquare(np.bincount(t.kind[:, 0], minlength=4)).pvalue > 1e-4
    for i in range(N_KEYS):
        cell = tuple(t.pos[i, 0])
        assert cell != tuple(s.player.pos[i]) and s.grid.content[i][cell] != Content.BLOCK


def test_reset_determinism_and_variety(resets):
    keys = jax.random.split(jax.random.key(2024), N_KEYS)
    again = _np(_reset_batch(keys, EnvParams()))
    assert all(
        np.array_equal(a, b)
        for a, b in zip(jax.tree.leaves(again), jax.tree.leaves(resets), strict=True)
    )
    layouts = {resets.grid.content[i].tobytes() for i in range(200)}
    assert len(layouts) == 200  # different keys, different boards


@pytest.mark.parametrize("start", [3, 8])
def test_curriculum_start_stage(start):
    keys = jax.random.split(jax.random.key(start), N_KEYS)
    s = _np(_reset_batch(keys, EnvParams(start_stage=start)))
    assert (s.stage == start).all() and (s.task_interval == 13 - start).all()
    assert (s.next_task_turn == 13 - start).all()
    assert (s.transmissions.alive.sum(1) == start).all()


# --------------------------------------------------------------------------- generation with entities


def test_generation_avoids_entities_and_keeps_them():
    enemies = [("virus", (2, c)) for c in range(6)] + [("daemon", (3, 1)), ("glitch", (0, 0))]
    s = make_game((5, 5), enemies=enemies, transmissions=[("cryptog", (4, 2), 3)], stage=2)
    keys = jax.random.split(jax.random.key(5), 200)
    out = _np(jax.jit(jax.vmap(lambda k: stage.generate_stage(k, s)))(keys))
    blocks = out.grid.content == Content.BLOCK
    assert not blocks[:, 2, :].any() and not blocks[:, 3, 1].any() and not blocks[:, 4, 2].any()
    assert (out.enemies.alive.sum(1) == 8).all()
    assert (out.enemies.pos == np.asarray(s.enemies.pos)).all()
    assert (out.transmissions.alive.sum(1) == 3).all()  # the old one + 2 stage transmissions
    assert (out.transmissions.countdown[:, 0] == 3).all()
    assert (out.player.pos == [5, 5]).all()


# --------------------------------------------------------------------------- completion (§9.2)

_complete = jax.jit(game.complete_stage)
REACHED = jnp.bool_(True)


def test_complete_stage_advances():
    s = make_game(
        (5, 5), hp=1, credits=7, stage=3, enemies=[("virus", (1, 1), 1, {"stunned": True})]
    )
    s = s.replace(show_flag=jnp.bool_(True), calm_flag=jnp.bool_(True), turn=jnp.int32(9))
    out = _complete(jax.random.key(0), s, REACHED)
    assert int(out.player.hp) == 2 and int(out.stage) == 4
    assert int(out.task_interval) == 9 and int(out.next_task_turn) == 9 and int(out.turn) == 0
    assert not bool(out.show_flag | out.calm_flag | out.step_flag)
    assert int(out.player.credits) == 7 and out.player.pos.tolist() == [5, 5]
    assert bool(out.enemies.stunned[0]) and int(out.enemies.alive.sum()) == 1  # carried over
    assert int(out.transmissions.alive.sum()) == 4  # stage 4 places 4
    assert tuple(out.exit_pos.tolist()) in [(0, 0), (0, 5), (5, 0)]


def test_complete_stage_hp_capped():
    out = _complete(jax.random.key(1), make_game((5, 5), hp=3, stage=1), REACHED)
    assert int(out.player.hp) == 3 and int(out.stage) == 2


def test_victory_changes_nothing_else():
    s = make_game((5, 5), hp=2, stage=8, blocks=[("data", (2, 2))])
    out = _complete(jax.random.key(2), s, REACHED)
    assert int(out.player.hp) == 3 and int(out.stage) == 8
    rest_in = jax.tree.leaves(s.replace(player=s.player.replace(hp=jnp.int8(3))))
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(out), rest_in, strict=True))


def test_complete_stage_batched_equals_unbatched():
    """Under ``vmap`` (the new stage generated sparsely, for the rows on the exit only) every
    row equals the unbatched completion; a row that did not reach the exit is unchanged."""
    s = make_game((5, 5), hp=1, stage=3, enemies=[("virus", (1, 1))])
    batch = jax.tree.map(lambda x: jnp.stack([x] * 8), s)
    keys = jax.random.split(jax.random.key(3), 8)
    reached = jnp.array([1, 0, 0, 1, 0, 0, 0, 0], bool)
    batched = jax.jit(jax.vmap(game.complete_stage))(keys, batch, reached)
    for i in range(8):
        row = jax.tree.map(lambda x, i=i: x[i], batched)
        assert _trees_equal(row, _complete(keys[i], s, reached[i]))
    assert int(batched.stage[0]) == 4 and int(batched.player.hp[0]) == 2
    assert _trees_equal(jax.tree.map(lambda x: x[1], batched), s)  # not reached: unchanged
