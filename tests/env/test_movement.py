"""movement.py: line of fire, shooting, moving, pickups (rules §4) and direction validity."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from builders import make_state
from hackmatrix_env import movement
from hackmatrix_env.constants import Action, Content

UP, DOWN, LEFT, RIGHT = Action.UP, Action.DOWN, Action.LEFT, Action.RIGHT


def make_game(player=(0, 0), **kwargs):
    """The game of ``make_state(...)``: the rule functions take a ``GameState``."""
    return make_state(player, **kwargs).game


@jax.jit
def _resolve(state, d):
    return movement.resolve_direction(state, d)


_valid = jax.jit(movement.direction_mask)


def _pos(s):
    return tuple(int(v) for v in s.player.pos)


def test_long_range_shot_stuns_and_player_stays():
    # rules §4.4: player (0,3), virus hp 2 at (5,3) -> hp 1, stunned, player stays
    s = make_game((0, 3), enemies=[("virus", (5, 3), 2)])
    out, ok, shot, kills, _, _ = _resolve(s, UP)
    assert bool(ok) and bool(shot) and int(kills) == 0
    assert _pos(out) == (0, 3)
    assert int(out.enemies.hp[0]) == 1 and bool(out.enemies.stunned[0])


def test_block_stops_line_then_player_moves():
    # rules §4.4: a (siphoned or not) block at (3,3) -> no target, player moves to (1,3)
    for siphoned in (False, True):
        s = make_game(
            (0, 3),
            enemies=[("virus", (5, 3), 2)],
            blocks=[("data", (3, 3), 4, {"siphoned": siphoned})],
        )
        out, ok, shot, *_ = _resolve(s, UP)
        assert bool(ok) and not bool(shot)
        assert _pos(out) == (1, 3)
        assert int(out.enemies.hp[0]) == 2 and not bool(out.enemies.stunned[0])


def test_transmission_destroyed_player_stays():
    # rules §4.4: player (2,2), transmission (2,0) -> destroyed
    s = make_game((2, 2), transmissions=[("daemon", (2, 0))])
    out, ok, shot, kills, *_ = _resolve(s, LEFT)
    assert bool(ok) and bool(shot) and int(kills) == 1
    assert _pos(out) == (2, 2) and not bool(jnp.any(out.transmissions.alive))


def test_walking_never_collects_credits():
    # rules §4.4: (2,1) holds 3 credits -> player moves, credits stay on the cell
    s = make_game((2, 2), resources=[("credits", (2, 1), 3)])
    out, ok, shot, *_ = _resolve(s, LEFT)
    assert bool(ok) and not bool(shot) and _pos(out) == (2, 1)
    assert int(out.player.credits) == 0 and int(out.grid.resource_amount[2, 1]) == 3


def test_transmission_hit_before_enemy_on_same_cell():
    s = make_game((0, 0), enemies=[("daemon", (0, 4), 3)], transmissions=[("virus", (0, 4))])
    out, _, shot, kills, *_ = _resolve(s, RIGHT)
    assert bool(shot) and int(kills) == 1
    assert not bool(jnp.any(out.transmissions.alive))
    assert int(out.enemies.hp[0]) == 3 and bool(out.enemies.alive[0])


def test_enemy_on_block_is_hit_but_not_behind_it():
    s = make_game((0, 0), enemies=[("glitch", (0, 2), 2)], blocks=[("data", (0, 2), 3)])
    out, _, shot, *_ = _resolve(s, RIGHT)
    assert bool(shot) and int(out.enemies.hp[0]) == 1
    s = make_game((0, 0), enemies=[("glitch", (0, 3), 2)], blocks=[("data", (0, 2), 3)])
    out, ok, shot, *_ = _resolve(s, RIGHT)
    assert bool(ok) and not bool(shot) and _pos(out) == (0, 1)


def test_kill_removes_enemy_and_keeps_order():
    s = make_game(
        (0, 0),
        attack=2,
        enemies=[("virus", (4, 4), 2), ("virus", (0, 5), 2), ("daemon", (5, 5), 3)],
    )
    out, _, shot, kills, *_ = _resolve(s, RIGHT)
    assert bool(shot) and int(kills) == 1
    np.testing.assert_array_equal(np.asarray(out.enemies.alive[:3]), [True, True, False])
    assert [tuple(int(v) for v in out.enemies.pos[i]) for i in range(2)] == [(4, 4), (5, 5)]


def test_scheduled_task_kills_do_not_count():
    s = make_game((0, 0), enemies=[("virus", (0, 3), 1, {"isFromScheduledTask": True})])
    _, _, shot, kills, *_ = _resolve(s, RIGHT)
    assert bool(shot) and int(kills) == 0


def test_pickup_and_exit():
    s = make_game((0, 0), resources=[("siphon", (1, 0)), ("credits", (1, 0), 2)])
    out, ok, _, _, collected, exit_reached = _resolve(s, UP)
    assert bool(collected) and not bool(exit_reached) and int(out.player.siphons) == 1
    assert int(out.grid.content[1, 0]) == Content.EMPTY
    assert int(out.grid.resource_amount[1, 0]) == 2  # the stack stays on the cell
    s = make_game((5, 4))
    out, ok, _, _, collected, exit_reached = _resolve(s, RIGHT)
    assert bool(ok) and bool(exit_reached) and not bool(collected) and _pos(out) == (5, 5)


def test_failed_moves():
    s = make_game((0, 0), blocks=[("data", (1, 0), 2)])
    _, ok, *_ = _resolve(s, DOWN)  # off the board
    assert not bool(ok)
    _, ok, *_ = _resolve(s, UP)  # into a block
    assert not bool(ok)


def test_direction_mask():
    # interface §2.2: only the adjacent cell matters; an enemy on a block unblocks it
    s = make_game(
        (2, 2),
        blocks=[("data", (3, 2), 2), ("data", (1, 2), 2, {"siphoned": True}), ("data", (2, 1), 1)],
        enemies=[("glitch", (2, 1), 2), ("virus", (2, 5), 2)],
    )
    np.testing.assert_array_equal(np.asarray(_valid(s)), [False, False, True, True])
    corner = make_game((0, 0), enemies=[("virus", (3, 0), 2)], blocks=[("data", (1, 0), 2)])
    np.testing.assert_array_equal(np.asarray(_valid(corner)), [False, False, False, True])
