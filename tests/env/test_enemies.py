"""enemies.py: the enemy phase (rules §7), on the spec's worked examples and invariants."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from builders import make_state
from hackmatrix_env import enemies, game, history
from hackmatrix_env.constants import MAX_ENEMIES, EnemyKind
from hackmatrix_env.types import blank_history
from hypothesis import given, settings
from hypothesis import strategies as st


@jax.jit
def _phase(key, state):
    return game.enemy_phase(key, state, jnp.bool_(True))


_record = jax.jit(history.record_step)


def _run(state, seed=0):
    """The enemy phase after a turn-ending action: ``(game, ran)``."""
    return _phase(jax.random.key(seed), state)


def make_game(player=(0, 0), **kwargs):
    """The game of ``make_state(...)``: the rule functions take a ``GameState``."""
    return make_state(player, **kwargs).game


def _cells(s):
    return [
        tuple(int(v) for v in s.enemies.pos[i]) for i in range(MAX_ENEMIES) if s.enemies.alive[i]
    ]


def test_daemon_path_then_attack():
    # rules §7.6: (3,3) -> (2,3) -> (1,3) -> (0,3) -> (0,2) -> (0,1), then it attacks
    s = make_game((0, 0), enemies=[("daemon", (3, 3))], calm=True)
    path = []
    for t in range(5):
        s, ran = _run(s, t)
        assert bool(ran)
        path.append(_cells(s)[0])
    assert path == [(2, 3), (1, 3), (0, 3), (0, 2), (0, 1)]
    assert int(s.player.hp) == 3
    s, _ = _run(s, 9)
    assert _cells(s) == [(0, 1)] and int(s.player.hp) == 2 and int(s.turn) == 6


def test_abc_two_attacks_and_c_moves_away():
    s = make_game(
        (0, 0), enemies=[("daemon", (1, 0)), ("daemon", (0, 1)), ("daemon", (2, 0))], calm=True
    )
    for seed in range(4):  # independent of the processing order
        out, _ = _run(s, seed)
        assert int(out.player.hp) == 1
        assert _cells(out) == [(1, 0), (0, 1), (3, 0)]


def test_virus_double_step_and_attack_timing():
    # rules §7.6: virus (3,0) -> (2,0) -> (1,0), no attack; next turn attacks once
    s = make_game((0, 0), enemies=[("virus", (3, 0))], calm=True)
    s, _ = _run(s)
    assert _cells(s) == [(1, 0)] and int(s.player.hp) == 3
    s, _ = _run(s, 1)
    assert _cells(s) == [(1, 0)] and int(s.player.hp) == 2  # one attack per phase
    # a virus at (2,0) moves to (1,0) in sub-step 0 and attacks in sub-step 1
    s = make_game((0, 0), enemies=[("virus", (2, 0))], calm=True)
    s, _ = _run(s)
    assert _cells(s) == [(1, 0)] and int(s.player.hp) == 2


def test_daemon_moving_adjacent_does_not_attack_same_turn():
    s = make_game((0, 0), enemies=[("daemon", (2, 0))], calm=True)
    s, _ = _run(s)
    assert _cells(s) == [(1, 0)] and int(s.player.hp) == 3


def test_hatching_disabled_and_list_order():
    s = make_game(
        (0, 0),
        enemies=[("daemon", (5, 5))],
        transmissions=[("virus", (3, 3), 1), ("glitch", (4, 4), 2), ("cryptog", (2, 2), 1)],
        calm=True,
    )
    out, _ = _run(s)
    # hatched in transmission order after the existing daemon; they did not act
    kinds = [int(k) for k, a in zip(out.enemies.kind, out.enemies.alive, strict=True) if a]
    assert kinds == [EnemyKind.DAEMON, EnemyKind.VIRUS, EnemyKind.CRYPTOG]
    assert _cells(out)[1:] == [(3, 3), (2, 2)]
    np.testing.assert_array_equal(np.asarray(out.enemies.hp[1:3]), [2, 2])
    assert int(jnp.sum(out.enemies.disabled)) == 0  # cleared at the end of the phase
    assert tuple(int(v) for v in out.enemies.last_known[2]) == (2, 2)
    # the countdown-2 transmission ticked and stays
    assert int(jnp.sum(out.transmissions.alive)) == 1
    assert int(out.transmissions.countdown[0]) == 1
    # next phase: the hatched virus acts (moves twice)
    out2, _ = _run(out, 1)
    assert _cells(out2)[1] != (3, 3)


def test_stunned_enemy_skips_and_is_cleared():
    s = make_game((0, 0), enemies=[("virus", (0, 1), 2, {"stunned": True})], calm=True)
    out, _ = _run(s)
    assert int(out.player.hp) == 3 and not bool(out.enemies.stunned[0])
    out, _ = _run(out, 1)
    assert int(out.player.hp) == 2


def test_cryptog_last_known():
    # Only a move that ends in the player's row or column updates last_known.
    s = make_game((0, 0), enemies=[("cryptog", (3, 1))], calm=True)
    out, _ = _run(s)  # Down (2,1): distance 3 ties Left (3,0), Down comes first
    assert _cells(out) == [(2, 1)]
    assert tuple(int(v) for v in out.enemies.last_known[0]) == (3, 1)
    out, _ = _run(out, 1)  # Down (1,1): distance 2 ties Left (2,0)
    assert _cells(out) == [(1, 1)]
    assert tuple(int(v) for v in out.enemies.last_known[0]) == (3, 1)
    out, _ = _run(out, 2)  # Down (0,1): the player's row
    assert _cells(out) == [(0, 1)]
    assert tuple(int(v) for v in out.enemies.last_known[0]) == (0, 1)


def test_scheduled_task_timing():
    s = make_game((0, 0), turn=11)  # next_task_turn stays 12 after setState
    out, _ = _run(s)
    assert int(out.turn) == 12
    assert int(jnp.sum(out.transmissions.alive)) == 1 and bool(out.transmissions.from_task[0])
    assert int(out.next_task_turn) == 24
    # CALM: nothing, and the clock does not advance
    out, _ = _run(make_game((0, 0), turn=11, calm=True))
    assert int(jnp.sum(out.transmissions.alive)) == 0 and int(out.next_task_turn) == 12


def test_scheduled_table_after_siphon():
    # rules §7.8: interval 11, next 17 -> spawns at 17 then 28
    s = make_game((0, 0), turn=16)
    s = s.replace(task_interval=jnp.int32(11), next_task_turn=jnp.int32(17))
    out, _ = _run(s)
    assert int(out.turn) == 17 and int(out.next_task_turn) == 28
    assert int(jnp.sum(out.transmissions.alive)) == 1


def test_step_skip():
    s = make_game(
        (0, 0),
        enemies=[("virus", (3, 0), 2, {"stunned": True})],
        transmissions=[("daemon", (4, 4), 1)],
    )
    s = s.replace(step_flag=jnp.bool_(True), pending_siphon_spawns=jnp.int32(2))
    out, ran = _run(s)
    assert not bool(ran) and not bool(out.step_flag)
    assert int(out.turn) == 0 and int(out.pending_siphon_spawns) == 2
    assert bool(out.enemies.stunned[0]) and _cells(out) == [(3, 0)]
    assert int(out.transmissions.countdown[0]) == 1
    # the shell pushes no snapshot after a skipped phase (rules §7.11)
    hist, _ = _record(blank_history(), out, jnp.bool_(False), ran)
    assert int(hist.size) == 0
    # the next real phase runs and places the owed spawns; the shell pushes its final game
    out, ran = _run(out, 1)
    assert bool(ran) and int(out.turn) == 1 and int(out.pending_siphon_spawns) == 0
    assert int(jnp.sum(out.transmissions.from_siphon & out.transmissions.alive)) == 2
    hist, _ = _record(hist, out, jnp.bool_(False), ran)
    assert int(hist.size) == 1 and int(history.peek_snapshot(hist).turn) == 1


def test_enemy_on_player_cell_steps_off():
    s = make_game((2, 2), enemies=[("daemon", (2, 2))], calm=True)
    out, _ = _run(s)
    assert _cells(out) == [(3, 2)] and int(out.player.hp) == 3


cell = st.tuples(st.integers(0, 5), st.integers(0, 5))


@settings(deadline=None, max_examples=25)
@given(
    st.lists(
        st.tuples(st.sampled_from(["virus", "daemon", "glitch", "cryptog"]), cell), max_size=8
    ),
    st.sets(cell, max_size=8),
    st.sets(cell, max_size=4),
    cell,
    st.integers(0, 1000),
)
def test_phase_invariants(enemy_list, blocks, trans, player, seed):
    taken = {player}
    ens = []
    for kind, c in enemy_list:
        if c not in taken:
            ens.append((kind, c))
            taken.add(c)
    blocks = {b for b in blocks if b not in taken and b != (5, 5)}  # setState: exit at (5,5)
    trans = {t for t in trans if t not in taken and t not in blocks}
    s = make_game(
        player,
        enemies=ens,
        blocks=[("data", b, 1) for b in blocks],
        transmissions=[("virus", t, 3) for t in trans],
        calm=True,
    )
    out, _ = _run(s, seed)
    cells = _cells(out)
    assert len(cells) == len(ens) and len(set(cells)) == len(cells)  # never stack
    for (kind, before), after in zip(ens, cells, strict=True):
        d = abs(before[0] - after[0]) + abs(before[1] - after[1])
        assert d <= (2 if kind == "virus" else 1)
        assert after not in trans and after != player
        if kind != "glitch" and after != before:
            assert after not in blocks
    damage = int(s.player.hp) - int(out.player.hp)
    adjacent = sum(abs(c[0] - player[0]) + abs(c[1] - player[1]) == 1 for _, c in ens)
    if not any(k == "virus" for k, _ in ens):
        # only enemies adjacent at the start attack; movers never attack (rules §7.5)
        assert damage == min(3, adjacent)
    else:
        assert min(3, adjacent) <= damage <= min(3, len(ens))


def test_processing_order_uniform_and_independent_per_sub_step():
    """Orders drawn from ``phase_seeds`` + the hash stream are uniform permutations (rules §7.4).

    Three acting slots among five (slots 1, 2, 4): the order they induce in
    sub-step 0 is uniform over the 6 permutations, sub-step 1's order is
    independent of it (uniform over the 36 pairs), and slots outside ``first``
    always sort last.
    """
    from scipy import stats

    first = jnp.zeros(MAX_ENEMIES, bool).at[jnp.array([1, 2, 4])].set(True)

    @jax.jit
    @jax.vmap
    def orders(key):
        seed = enemies.phase_seeds(key)[0]
        k0 = enemies.processing_keys(seed, 0, first)
        k1 = enemies.processing_keys(seed, 1, first)
        return jnp.argsort(k0, stable=True), jnp.argsort(k1, stable=True)

    n = 36 * 400
    o0, o1 = (np.asarray(x) for x in orders(jax.random.split(jax.random.key(7), n)))
    assert (np.sort(o0[:, :3], axis=1) == [1, 2, 4]).all()  # acting slots first
    assert (np.sort(o1[:, :3], axis=1) == [1, 2, 4]).all()
    perms = {
        p: i
        for i, p in enumerate([(1, 2, 4), (1, 4, 2), (2, 1, 4), (2, 4, 1), (4, 1, 2), (4, 2, 1)])
    }
    a = np.array([perms[tuple(r)] for r in o0[:, :3]])
    b = np.array([perms[tuple(r)] for r in o1[:, :3]])
    assert stats.chisquare(np.bincount(a, minlength=6)).pvalue > 1e-3
    assert stats.chisquare(np.bincount(a * 6 + b, minlength=36)).pvalue > 1e-3
