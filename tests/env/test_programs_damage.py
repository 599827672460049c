"""POLY, DEBUG, ROW, COL, HACK, ANTI-V, D_BOM (programs.md §1.4 HIT/SWEEP, §4.5-4.9, §4.17-4.23)."""

from __future__ import annotations

from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
from builders import make_state
from hackmatrix_env.constants import ENEMY_NAMES, EnemyKind
from programs_testlib import (
    assert_pools_canonical,
    enemies,
    enemy_field,
    player,
    prog,
    replace_game,
    run,
    run_many_keys,
)
from scipy.stats import chisquare

N_KEYS = 3000
KEYS = jax.random.split(jax.random.key(7), N_KEYS)


def _st(name, p=(2, 2), **kw):
    return make_state(p, credits=9, energy=9, owned=[name], **kw)


# --- POLY ---------------------------------------------------------------------------------------


def test_poly_daemon_at_one_hp_always_dies():
    s = _st("poly", enemies=[("daemon", (4, 4), 1)])
    out, kills, _ = run_many_keys(KEYS[:200], s, jnp.int32(prog("poly")))
    assert np.all(np.asarray(kills) == 1)
    assert not np.asarray(out.enemies.alive).any()
    s = _st("poly", enemies=[("daemon", (4, 4), 1, {"isFromScheduledTask": True})])
    _, kills, _ = run_many_keys(KEYS[:200], s, jnp.int32(prog("poly")))
    assert np.all(np.asarray(kills) == 0)


def _poly_outcomes(state):
    out, kills, _ = run_many_keys(KEYS, state, jnp.int32(prog("poly")))
    kinds = np.asarray(out.enemies.kind)
    hps = np.asarray(out.enemies.hp)
    return out, np.asarray(kills), kinds, hps


def test_poly_damage_carries_over():
    cases = {
        # (old kind, hp) -> {new kind: new hp}
        ("daemon", 2): {"virus": 1, "glitch": 1, "cryptog": 1},
        ("virus", 1): {"daemon": 2, "glitch": 1, "cryptog": 1},
        ("glitch", 2): {"virus": 2, "daemon": 3, "cryptog": 2},
        ("daemon", 3): {"virus": 2, "glitch": 2, "cryptog": 2},
    }
    for (kind, hp), expected in cases.items():
        _, kills, kinds, hps = _poly_outcomes(_st("poly", enemies=[(kind, (1, 3), hp)]))
        assert np.all(kills == 0)
        seen = {ENEMY_NAMES[k]: h for k, h in zip(kinds[:, 0], hps[:, 0], strict=True)}
        assert seen == expected, (kind, hp)


def test_poly_uniform_and_one_draw_per_enemy():
    s = _st("poly", enemies=[("virus", (1, 1)), ("glitch", (3, 3))])
    _, _, kinds, _ = _poly_outcomes(s)
    pairs = Counter(zip(kinds[:, 0].tolist(), kinds[:, 1].tolist(), strict=True))
    v, d, g, c = EnemyKind.VIRUS, EnemyKind.DAEMON, EnemyKind.GLITCH, EnemyKind.CRYPTOG
    cells = [(a, b) for a in (d, g, c) for b in (v, d, c)]
    assert set(pairs) == set(cells)  # never the same kind, every combination occurs
    observed = [pairs[x] for x in cells]
    assert chisquare(observed, [N_KEYS / 9] * 9).pvalue > 1e-3


def test_poly_keeps_position_stun_flags_order_and_sets_cryptog_hint():
    s = _st(
        "poly",
        enemies=[
            ("virus", (3, 4), 2, {"stunned": True, "spawnedFromSiphon": True}),
            ("daemon", (0, 1), 3, {"isFromScheduledTask": True}),
        ],
    )
    e = s.game.enemies
    s = replace_game(
        s, enemies=e.replace(last_known=e.last_known.at[0].set(jnp.asarray([0, 0], jnp.int8)))
    )
    out, _, kinds, _ = _poly_outcomes(s)
    assert np.all(np.asarray(out.enemies.pos)[:, 0] == [3, 4])
    assert np.all(np.asarray(out.enemies.pos)[:, 1] == [0, 1])
    assert np.all(np.asarray(out.enemies.stunned)[:, :2] == [True, False])
    assert np.all(np.asarray(out.enemies.from_siphon)[:, :2] == [True, False])
    assert np.all(np.asarray(out.enemies.from_task)[:, :2] == [False, True])
    lk = np.asarray(out.enemies.last_known)[:, 0]
    to_c = kinds[:, 0] == EnemyKind.CRYPTOG
    assert to_c.any() and (~to_c).any()
    assert np.all(lk[to_c] == [3, 4]) and np.all(lk[~to_c] == [0, 0])


# --- HIT(A) programs ----------------------------------------------------------------------------


def test_row_hits_whole_row_with_attack_and_stuns():
    s = _st(
        "row",
        p=(2, 0),
        enemies=[
            ("virus", (2, 5), 1),
            ("virus", (2, 3), 2),
            ("daemon", (3, 0), 3),
            ("cryptog", (2, 1), 2, {"isFromScheduledTask": True}),
        ],
        blocks=[("data", (2, 2))],
    )
    out, kills, _ = run(s, "row")
    assert kills == 1  # the 1-hp virus; nothing else dies
    assert enemies(out) == [("virus", (2, 3), 1), ("daemon", (3, 0), 3), ("cryptog", (2, 1), 1)]
    assert enemy_field(out, "stunned") == [True, False, True]
    assert player(out)["credits"] == 6 and player(out)["energy"] == 8
    assert_pools_canonical(out)


def test_col_uses_attack_value_and_scheduled_deaths_do_not_count():
    s = _st(
        "col",
        p=(0, 3),
        attack=2,
        enemies=[
            ("virus", (5, 3), 2),
            ("daemon", (4, 3), 3),
            ("glitch", (1, 3), 2, {"isFromScheduledTask": True}),
            ("virus", (1, 2), 1),
        ],
    )
    out, kills, _ = run(s, "col")
    assert kills == 1
    assert enemies(out) == [("daemon", (4, 3), 1), ("virus", (1, 2), 1)]
    assert enemy_field(out, "stunned") == [True, False]


def test_debug_hits_enemies_on_blocks():
    s = _st(
        "debug",
        attack=2,
        enemies=[("glitch", (1, 1), 2), ("daemon", (4, 4), 3), ("virus", (0, 0), 2)],
        blocks=[("data", (1, 1)), ("program", (4, 4), "wait", {"siphoned": True})],
    )
    out, kills, _ = run(s, "debug")
    assert kills == 1  # the glitch (2 - A = 0); the daemon survives at 1 (siphoned block too)
    assert enemies(out) == [("daemon", (4, 4), 1), ("virus", (0, 0), 2)]
    assert enemy_field(out, "stunned") == [True, False]
    assert player(out)["credits"] == 6 and player(out)["energy"] == 9


def test_hack_without_enemy_on_siphoned_cell_only_pays():
    s = _st("hack", enemies=[("virus", (0, 0))])
    sip = np.zeros((6, 6), bool)
    sip[3, 3] = True
    s = replace_game(s, grid=s.game.grid.replace(siphoned=jnp.asarray(sip)))
    out, kills, _ = run(s, "hack")
    assert kills == 0
    assert enemies(out) == [("virus", (0, 0), 2)] and enemy_field(out, "stunned") == [False]
    assert player(out)["credits"] == 7 and player(out)["energy"] == 7
    assert bool(out.game.grid.siphoned[3, 3])


def test_hack_hits_every_siphoned_cell():
    s = _st(
        "hack",
        attack=1,
        enemies=[("virus", (3, 3), 1), ("daemon", (4, 4), 3), ("glitch", (0, 0), 2)],
        blocks=[("data", (4, 4), 2, {"siphoned": True})],
    )
    sip = np.asarray(s.game.grid.siphoned).copy()
    sip[3, 3] = True  # an empty siphoned cell
    s = replace_game(s, grid=s.game.grid.replace(siphoned=jnp.asarray(sip)))
    out, kills, _ = run(s, "hack")
    assert kills == 1
    assert enemies(out) == [("daemon", (4, 4), 2), ("glitch", (0, 0), 2)]
    assert enemy_field(out, "stunned") == [True, False]
    assert int(out.game.grid.content[4, 4]) == 1  # HACK never touches blocks


def test_anti_v_fixed_one_damage():
    s = _st(
        "anti-v",
        attack=3,
        enemies=[("virus", (1, 1), 2), ("daemon", (1, 2), 3), ("virus", (4, 4), 1)],
    )
    out, kills, _ = run(s, "anti-v")
    assert kills == 1
    assert enemies(out) == [("virus", (1, 1), 1), ("daemon", (1, 2), 3)]
    assert enemy_field(out, "stunned") == [True, False]
    assert player(out)["credits"] == 6 and player(out)["energy"] == 9


# --- D_BOM --------------------------------------------------------------------------------------


def test_d_bom_tie_by_list_order_and_splash():
    # programs.md §4.17 example: player (0,0), [D2 (0,4), D1 (2,2)] -> D2 picked.
    s = _st(
        "d_bom",
        p=(0, 0),
        attack=3,
        enemies=[
            ("daemon", (0, 4), 3),  # D2: picked (first at distance 4)
            ("daemon", (2, 2), 3),  # D1: same distance, outside the splash
            ("virus", (0, 3), 2),  # splash -> 1, stunned
            ("glitch", (1, 5), 1),  # splash -> dies
            ("daemon", (1, 3), 3),  # another daemon in the splash -> 2, stunned
            ("virus", (0, 4), 2),  # stacked on P itself: untouched
            ("cryptog", (2, 4), 2),  # two rows away: untouched
        ],
    )
    out, kills, _ = run(s, "d_bom")
    assert kills == 2  # D2 erased + the glitch
    assert enemies(out) == [
        ("daemon", (2, 2), 3),
        ("virus", (0, 3), 1),
        ("daemon", (1, 3), 2),
        ("virus", (0, 4), 2),
        ("cryptog", (2, 4), 2),
    ]
    assert enemy_field(out, "stunned") == [False, True, True, False, False]
    assert player(out)["credits"] == 6 and player(out)["hp"] == 3


def test_d_bom_nearest_and_scheduled_target():
    s = _st(
        "d_bom",
        p=(0, 0),
        enemies=[
            ("daemon", (5, 5), 3),
            ("daemon", (1, 2), 1, {"isFromScheduledTask": True}),  # nearest (3)
        ],
    )
    out, kills, _ = run(s, "d_bom")
    assert kills == 0
    assert enemies(out) == [("daemon", (5, 5), 3)]
