"""Resource/flag programs: WAIT, STEP, SIPH+, EXCH, SHOW, RESET, CALM, DELAY, SCORE, REDUC, ATK+.

Expected values from programs.md §4.6, §4.11-4.16, §4.18, §4.20-4.22. Also a property test:
every valid program on random scenarios keeps dtypes/shapes and canonical pools.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from builders import make_state
from hackmatrix_env.constants import ENEMY_NAMES, PROGRAM_COST, PROGRAM_NAMES
from hackmatrix_env.programs import is_turn_ending
from hypothesis import given, settings
from hypothesis import strategies as st
from programs_testlib import (
    assert_pools_canonical,
    mask,
    player,
    replace_game,
    run,
    run_env,
    transmissions,
    trees_equal,
)


def _st(name, **kw):
    p = kw.pop("player", (2, 2))
    return make_state(p, owned=[name], **kw)


def _only_changes(before, after, **expected_player):
    """The player changed exactly as given, nothing else in the state did (flags aside)."""
    pb, pa = player(before), player(after)
    assert pa == {**pb, **expected_player}
    for field in ("enemies", "transmissions", "grid", "turn", "stage"):
        assert trees_equal(getattr(before.game, field), getattr(after.game, field)), field
    assert trees_equal(before.history, after.history), "history"


def test_wait_only_pays_and_is_the_only_turn_ender():
    s = _st("wait", energy=3, enemies=[("virus", (0, 0))])
    out, kills, ex = run(s, "wait")
    _only_changes(s, out, energy=2)
    assert kills == 0 and not ex and int(out.game.turn) == int(s.game.turn)
    ends = [bool(is_turn_ending(jnp.int32(i))) for i in range(len(PROGRAM_NAMES))]
    assert ends == [n == "wait" for n in PROGRAM_NAMES]


def test_step_sets_flag_and_pays_again_when_set():
    s = _st("step", energy=6)
    out, _, _ = run(s, "step")
    assert bool(out.game.step_flag)
    _only_changes(s, out, energy=3)
    out2, _, _ = run(out, "step")
    assert bool(out2.game.step_flag) and player(out2)["energy"] == 0


def test_siph_plus():
    s = _st("siph+", credits=5)
    out, kills, _ = run(s, "siph+")
    _only_changes(s, out, credits=0, siphons=1)
    assert kills == 0


def test_exch():
    s = _st("exch", credits=4, energy=1)
    out, _, _ = run(s, "exch")
    _only_changes(s, out, credits=0, energy=5)


def test_show_and_calm_flags():
    s = _st("show", credits=2)
    out, _, _ = run(s, "show")
    assert bool(out.game.show_flag) and not bool(out.game.calm_flag)
    _only_changes(s, out, credits=0)
    assert not mask(out)["show"]
    s = _st("calm", credits=2, energy=4)
    out, _, _ = run(s, "calm")
    assert bool(out.game.calm_flag) and not bool(out.game.show_flag)
    _only_changes(s, out, credits=0, energy=0)
    assert not mask(out)["calm"]


@pytest.mark.parametrize("hp", [0, 1, 2])
def test_reset(hp):
    s = _st("reset", hp=hp, energy=4)
    out, _, _ = run(s, "reset")
    _only_changes(s, out, hp=3, energy=0)


@pytest.mark.parametrize("stage", range(1, 8))
def test_score_per_stage(stage):
    s = _st("score", energy=5, stage=stage, score=3)
    out, _, _ = run(s, "score")
    _only_changes(s, out, energy=0, score=3 + 8 - stage)


def test_delay_adds_three_and_stacks():
    s = _st("delay", credits=2, energy=4, transmissions=[("virus", (1, 1)), ("glitch", (3, 4), 2)])
    out, _, _ = run(s, "delay")
    assert transmissions(out) == [("virus", (1, 1), 4), ("glitch", (3, 4), 5)]
    out, _, _ = run(out, "delay")
    assert transmissions(out) == [("virus", (1, 1), 7), ("glitch", (3, 4), 8)]
    assert player(out)["credits"] == 0 and player(out)["energy"] == 0


def test_reduc():
    s = _st(
        "reduc",
        credits=2,
        energy=1,
        blocks=[
            ("data", (1, 1), 4),  # spawn 4 -> 3, points stay 4
            ("program", (2, 3), "wait", {"spawnCount": 1}),  # -> 0
            ("data", (3, 3), 6, {"spawnCount": 0}),  # stays 0
            ("data", (4, 4), 5, {"siphoned": True}),  # siphoned: skipped (keeps 5)
            ("data", (0, 4), 2),  # becomes a question block below: reduced too
        ],
    )
    g = s.game.grid
    s = replace_game(s, grid=g.replace(block_question=g.block_question.at[0, 4].set(True)))
    out, _, _ = run(s, "reduc")
    spawn = np.asarray(out.game.grid.block_spawn)
    assert [spawn[1, 1], spawn[2, 3], spawn[3, 3], spawn[4, 4], spawn[0, 4]] == [3, 0, 0, 5, 1]
    assert int(out.game.grid.block_points[1, 1]) == 4
    _only_changes_grid = trees_equal(out.game.grid.replace(block_spawn=g.block_spawn), s.game.grid)
    assert _only_changes_grid
    assert player(out)["credits"] == 0 and player(out)["energy"] == 0


def test_atk_plus_no_cap_across_stages():
    s = _st("atk+", credits=20, energy=20, attack=1)
    out, _, _ = run(s, "atk+")
    out, _, _ = run(out, "atk+")
    assert player(out)["attack"] == 3 and int(out.game.atk_uses) == 2
    assert not mask(out)["atk+"]
    # A new stage resets only the use counter (stage.generate_stage does that); A persists.
    out = replace_game(out, atk_uses=jnp.int8(0), stage=jnp.int8(2))
    out, _, _ = run(out, "atk+")
    out, _, _ = run(out, "atk+")
    assert player(out)["attack"] == 5 and int(out.game.atk_uses) == 2
    assert player(out)["credits"] == 4 and player(out)["energy"] == 4


# --- property: every valid program keeps the state well-formed ------------------------------

cell = st.tuples(st.integers(0, 5), st.integers(0, 5))


@st.composite
def scenarios(draw):
    ens = draw(
        st.lists(
            st.tuples(st.sampled_from(ENEMY_NAMES), cell, st.integers(1, 3), st.booleans()),
            max_size=8,
        )
    )
    trs = draw(
        st.lists(st.tuples(st.sampled_from(ENEMY_NAMES), cell, st.integers(1, 4)), max_size=5)
    )
    blocks = draw(
        st.lists(
            st.tuples(cell, st.integers(0, 9), st.booleans()), max_size=8, unique_by=lambda b: b[0]
        )
    )
    return dict(
        player=draw(cell),
        hp=draw(st.integers(1, 3)),
        credits=draw(st.integers(0, 12)),
        energy=draw(st.integers(0, 12)),
        attack=draw(st.integers(1, 4)),
        stage=draw(st.integers(1, 8)),
        enemies=[(k, p, h, {"isFromScheduledTask": f}) for k, p, h, f in ens],
        transmissions=trs,
        blocks=[("data", p, pts, {"siphoned": sip}) for p, pts, sip in blocks if p != (5, 5)],
        owned=list(PROGRAM_NAMES),
    )


@settings(deadline=None, max_examples=40)
@given(sc=scenarios(), seed=st.integers(0, 2**16))
def test_valid_programs_keep_state_well_formed(sc, seed):
    s = make_state(sc.pop("player"), **sc)
    m = mask(s)
    for i, name in enumerate(PROGRAM_NAMES):
        if not m[name] or name == "undo":
            continue
        out, kills, _ = run_env(jax.random.key(seed), s, jnp.int32(i))
        assert jax.tree.structure(out) == jax.tree.structure(s)
        for a, b in zip(jax.tree.leaves(out), jax.tree.leaves(s), strict=True):
            assert a.dtype == b.dtype and a.shape == b.shape
        assert_pools_canonical(out)
        g0, g1 = s.game, out.game
        assert kills.dtype == jnp.int32 and 0 <= int(kills) <= int(
            g0.enemies.alive.sum() + g0.transmissions.alive.sum()
        )
        # Cost paid exactly (EXCH adds its 4 energy back on top).
        c, e = PROGRAM_COST[i]
        assert int(g1.player.credits) == int(g0.player.credits) - c
        gain = 4 if name == "exch" else 0
        assert int(g1.player.energy) == int(g0.player.energy) - e + gain
        alive_hp = np.asarray(g1.enemies.hp)[np.asarray(g1.enemies.alive)]
        assert np.all(alive_hp >= 1)
        assert not bool(g1.overflow)
