"""setState parsing (interface §5.7), observation JSON (§5.4), state JSON round trips."""

from __future__ import annotations

import copy
import json

import jax
import numpy as np
import pytest
from builders import E2_SUBOPTIMAL_SIPHON, make_state, scenario
from hackmatrix_env.constants import MAX_ENEMIES, MAX_TRANSMISSIONS, BlockKind, Content, Resource
from hackmatrix_env.history import push_snapshot, take_snapshot
from hackmatrix_env.scenario import (
    full_state_json,
    observation_from_json,
    observation_json,
    state_from_full_json,
    state_from_json,
    state_to_json,
)


def make_game(player=(0, 0), **kwargs):
    """The game of ``make_state(...)`` (``EnvState.game``)."""
    return make_state(player, **kwargs).game


def _trees_equal(a, b) -> bool:
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(la) == len(lb) and all(
        np.asarray(x).dtype == np.asarray(y).dtype and np.array_equal(x, y)
        for x, y in zip(la, lb, strict=True)
    )


# --------------------------------------------------------------------------- defaults (§5.7)


def test_fresh_game_defaults():
    env = state_from_json({"player": {"row": 1, "col": 4}})
    s = env.game
    assert s.player.pos.tolist() == [1, 4]
    assert int(s.player.hp) == 3 and int(s.player.attack) == 1
    assert int(s.player.credits) == int(s.player.energy) == int(s.player.siphons) == 0
    assert int(s.stage) == 1 and int(s.turn) == 0
    assert int(s.task_interval) == 12 and int(s.next_task_turn) == 12
    assert int(s.pending_siphon_spawns) == 0
    assert not bool(s.show_flag | s.calm_flag | s.step_flag)
    assert int(env.history.size) == 0 and int(env.time) == 0 and int(s.num_owned) == 0
    assert not bool(s.enemies.alive.any()) and not bool(s.transmissions.alive.any())
    # Exit forced at (5,5); no other content, no resources.
    content = np.asarray(s.grid.content)
    assert content[5, 5] == Content.EXIT and (content != Content.EMPTY).sum() == 1
    assert s.exit_pos.tolist() == [5, 5]
    assert not np.asarray(s.grid.resource_amount).any()


def test_stage_and_turn_keep_interval_12():
    s = state_from_json({"player": {"row": 0, "col": 0}, "stage": 5, "turn": 11}).game
    assert int(s.stage) == 5 and int(s.turn) == 11
    assert int(s.task_interval) == 12 and int(s.next_task_turn) == 12


def test_block_defaults():
    s = make_game(
        blocks=[("data", (1, 1)), ("data", (1, 2), 7), ("program", (2, 2), "ATK+")],
    )
    g = s.grid
    assert int(g.block_points[1, 1]) == 5 and int(g.block_spawn[1, 1]) == 5
    assert int(g.block_points[1, 2]) == 7 and int(g.block_spawn[1, 2]) == 7
    assert int(g.block_kind[2, 2]) == BlockKind.PROGRAM
    assert int(g.block_program[2, 2]) == 21  # atk+ (case-insensitive)
    assert int(g.block_spawn[2, 2]) == 2  # not the spawn cost 8
    assert not bool(g.block_question.any())


@pytest.mark.parametrize(
    "alias,idx", [("siphplus", 11), ("D_BOMB", 16), ("anti_v", 18), ("atk_plus", 21)]
)
def test_program_aliases(alias, idx):
    s = make_game(blocks=[("program", (1, 1), alias)])
    assert int(s.grid.block_program[1, 1]) == idx


def test_program_action_index_ignored_lenient():
    d = scenario(blocks=[{"row": 1, "col": 1, "type": "program", "programType": "wait",
                          "programActionIndex": 27}])  # fmt: skip
    s = state_from_json(d, strict=False).game
    assert int(s.grid.block_program[1, 1]) == 5
    with pytest.raises(ValueError, match=r"blocks\[0\]\.programActionIndex"):
        state_from_json(d)


def test_siphoned_block_keeps_spawn():
    s = make_game(blocks=[("data", (1, 1), 4, {"siphoned": True, "spawnCount": 3})])
    assert bool(s.grid.siphoned[1, 1]) and int(s.grid.block_spawn[1, 1]) == 3


def test_resource_precedence_lenient():
    d = scenario(
        resources=[
            {"row": 1, "col": 1, "dataSiphon": True, "credits": 3},
            {"row": 2, "col": 2, "credits": 2, "energy": 3},
            {"row": 3, "col": 3, "credits": 0, "energy": 3},
        ]
    )
    g = state_from_json(d, strict=False).game.grid
    assert int(g.content[1, 1]) == Content.DATA_SIPHON and int(g.resource_amount[1, 1]) == 0
    assert int(g.resource_kind[2, 2]) == Resource.CREDITS and int(g.resource_amount[2, 2]) == 2
    assert int(g.resource_kind[3, 3]) == Resource.ENERGY and int(g.resource_amount[3, 3]) == 3
    with pytest.raises(ValueError, match=r"resources\[0\]"):
        state_from_json(d)


def test_siphon_pickup_with_credits_two_entries():
    s = make_game(resources=[("siphon", (1, 1)), ("credits", (1, 1), 2)])
    assert int(s.grid.content[1, 1]) == Content.DATA_SIPHON
    assert int(s.grid.resource_kind[1, 1]) == Resource.CREDITS


def test_exit_overwrites_but_keeps_resources_and_siphoned():
    d = scenario(
        blocks=[("data", (5, 5), 3, {"siphoned": True})], resources=[("energy", (5, 5), 2)]
    )
    g = state_from_json(d, strict=False).game.grid
    assert int(g.content[5, 5]) == Content.EXIT
    assert bool(g.siphoned[5, 5]) and int(g.resource_amount[5, 5]) == 2
    assert int(g.block_points[5, 5]) == 0 and int(g.block_spawn[5, 5]) == 0
    with pytest.raises(ValueError, match=r"blocks\[0\].*exit"):
        state_from_json(d)
    pickup = scenario(resources=[("siphon", (5, 5))])
    assert int(state_from_json(pickup, strict=False).game.grid.content[5, 5]) == Content.EXIT


def test_data_siphon_replaces_block_lenient():
    d = scenario(blocks=[("data", (2, 2))], resources=[("siphon", (2, 2))])
    s = state_from_json(d, strict=False).game
    assert int(s.grid.content[2, 2]) == Content.DATA_SIPHON and int(s.grid.block_spawn[2, 2]) == 0
    with pytest.raises(ValueError, match=r"resources\[0\]\.dataSiphon"):
        state_from_json(d)


def test_enemies_and_transmissions():
    s = make_game(
        (0, 0),
        enemies=[
            ("Cryptog", (3, 4), 1, {"stunned": True, "spawnedFromSiphon": True}),
            ("daemon", (2, 2), 3, {"isFromScheduledTask": True}),
        ],
        transmissions=[("glitch", (4, 4), 3)],
    )
    e = s.enemies
    assert e.alive.tolist()[:3] == [True, True, False]
    assert e.kind.tolist()[:2] == [3, 1] and e.hp.tolist()[:2] == [1, 3]
    assert e.stunned.tolist()[:2] == [True, False]
    assert e.from_siphon.tolist()[:2] == [True, False]
    assert e.from_task.tolist()[:2] == [False, True]
    assert e.last_known[0].tolist() == [3, 4] and int(e.disabled[0]) == 0
    t = s.transmissions
    assert t.alive.tolist()[:2] == [True, False]
    assert t.pos[0].tolist() == [4, 4] and int(t.countdown[0]) == 3 and int(t.kind[0]) == 2
    assert not bool(t.from_task[0] | t.from_siphon[0])


def test_owned_programs_order_and_duplicates():
    d = scenario(owned=[16, 5, 16])
    d["ownedPrograms"].append(3)
    s = state_from_json(d, strict=False).game
    assert int(s.num_owned) == 3 and s.owned_list.tolist()[:4] == [11, 0, 11, -1]
    with pytest.raises(ValueError, match=r"ownedPrograms\[3\]"):
        state_from_json(d)


@pytest.mark.parametrize("hp", [-1, 4, 99])
def test_player_hp_out_of_range(hp):
    d = scenario(hp=hp)
    assert int(state_from_json(d, strict=False).game.player.hp) == 3
    with pytest.raises(ValueError, match=r"player\.hp"):
        state_from_json(d)


def test_player_hp_zero_is_kept():
    assert int(make_game(hp=0).player.hp) == 0


def test_unknown_enemy_type_skipped_lenient():
    d = scenario(enemies=[("virus", (1, 1)), {"type": "foo", "row": 2, "col": 2, "hp": 1},
                          ("glitch", (3, 3))])  # fmt: skip
    s = state_from_json(d, strict=False).game
    assert s.enemies.alive.tolist()[:3] == [True, True, False]
    assert s.enemies.kind.tolist()[:2] == [0, 2]
    with pytest.raises(ValueError, match=r"enemies\[1\]\.type: unknown enemy type 'foo'"):
        state_from_json(d)


def test_unknown_transmission_type_skipped_lenient():
    d = scenario(transmissions=[("bar", (1, 1))])
    assert not bool(state_from_json(d, strict=False).game.transmissions.alive.any())
    with pytest.raises(ValueError, match=r"transmissions\[0\]\.enemyType"):
        state_from_json(d)


def test_block_off_board_and_unknown_type_lenient():
    d = scenario(
        blocks=[("data", (6, 0)), {"row": 1, "col": 1, "type": "question", "siphoned": True}]
    )
    s = state_from_json(d, strict=False).game
    assert int((np.asarray(s.grid.content) == Content.BLOCK).sum()) == 0
    assert bool(s.grid.siphoned[1, 1])  # siphoned applies independently of the type
    with pytest.raises(ValueError, match=r"blocks\[0\]\.row/col"):
        state_from_json(d)
    with pytest.raises(ValueError, match=r"blocks\[0\]\.type"):
        state_from_json(scenario(blocks=[{"row": 1, "col": 1, "type": "question"}]))


def test_two_blocks_one_cell():
    d = scenario(blocks=[("data", (2, 2), 3), ("program", (2, 2), "push")])
    s = state_from_json(d, strict=False).game
    assert int(s.grid.block_kind[2, 2]) == BlockKind.PROGRAM and int(s.grid.block_points[2, 2]) == 0
    with pytest.raises(ValueError, match=r"blocks\[1\]: cell \(2, 2\) already holds blocks\[0\]"):
        state_from_json(d)


MALFORMED = [
    # (mutator, field named in the error, also raised when lenient)
    (lambda d: d.pop("player"), r"^player: required", True),
    (lambda d: d["player"].pop("row"), r"player\.row: required", True),
    (lambda d: d["player"].update(row=6), r"player\.row/col", True),
    (lambda d: d["player"].update(col="1"), r"player\.col: expected int", True),
    (lambda d: d["player"].update(credits=True), r"player\.credits: expected int", True),
    (lambda d: d["player"].update(credits=2**31), r"player\.credits: .*int32", True),
    (lambda d: d["player"].update(credits=-1), r"player\.credits", False),
    (lambda d: d["player"].update(attackDamage=128), r"player\.attackDamage: .*int8", True),
    (lambda d: d["player"].update(attackDamage=0), r"player\.attackDamage", False),
    (lambda d: d["player"].update(score=1.5), r"player\.score: expected int", True),
    (lambda d: d["player"].update(bogus=1), r"player: unknown key", False),
    (lambda d: d.update(stage=0), r"^stage", False),
    (lambda d: d.update(stage=200), r"^stage: .*int8", True),
    (lambda d: d.update(turn=-1), r"^turn", False),
    (lambda d: d.update(showActivated=1), r"showActivated: expected bool", True),
    (lambda d: d.update(enemies={}), r"^enemies: expected a list", True),
    (lambda d: d.update(extra=1), r"state: unknown key", False),
    (lambda d: d["enemies"][0].update(hp=0), r"enemies\[0\]\.hp", False),
    (lambda d: d["enemies"][0].update(hp=-3), r"enemies\[0\]\.hp", False),
    (lambda d: d["enemies"][0].update(hp=300), r"enemies\[0\]\.hp: .*int8", True),
    (lambda d: d["enemies"][0].pop("hp"), r"enemies\[0\]\.hp: required", True),
    (lambda d: d["enemies"][0].update(row=-1), r"enemies\[0\]\.row/col", True),
    (lambda d: d["enemies"][0].update(stunned="yes"), r"enemies\[0\]\.stunned", True),
    (lambda d: d["enemies"][0].update(type=3), r"enemies\[0\]\.type: expected str", True),
    (lambda d: d["transmissions"][0].pop("enemyType"), r"transmissions\[0\]\.enemyType", True),
    (lambda d: d["transmissions"][0].update(turnsRemaining=0), r"transmissions\[0\]\.turns", False),
    (lambda d: d["transmissions"][0].update(col=9), r"transmissions\[0\]\.row/col", True),
    (lambda d: d["blocks"][0].update(points=-2), r"blocks\[0\]\.points", False),
    (lambda d: d["blocks"][0].update(points=1000), r"blocks\[0\]\.points: .*int8", True),
    (lambda d: d["blocks"][0].update(spawnCount=-1), r"blocks\[0\]\.spawnCount", False),
    (lambda d: d["blocks"][1].pop("programType"), r"blocks\[1\]\.programType: missing", False),
    (
        lambda d: d["blocks"][1].update(programType="zap"),
        r"blocks\[1\]\.programType: unknown",
        False,
    ),
    (lambda d: d["resources"][0].update(credits=128), r"resources\[0\]\.credits: .*int8", True),
    (lambda d: d["resources"][0].update(credits=-1), r"resources\[0\]\.credits", False),
    (lambda d: d["resources"][0].update(row=7), r"resources\[0\]\.row/col", False),
    (lambda d: d["resources"].append({"row": 1, "col": 2, "energy": 1}), r"resources\[1\]", False),
    (lambda d: d.update(ownedPrograms=[5, "wait"]), r"ownedPrograms\[1\]: expected int", True),
    (lambda d: d.update(ownedPrograms=[5] * 40), r"ownedPrograms: 40 entries", True),
    (lambda d: d.update(enemies=[d["enemies"][0]] * (MAX_ENEMIES + 1)), r"^enemies: more", True),
    (
        lambda d: d.update(transmissions=[d["transmissions"][0]] * (MAX_TRANSMISSIONS + 1)),
        r"^transmissions: more",
        True,
    ),
]


def _base() -> dict:
    return scenario(
        (0, 0),
        enemies=[("virus", (2, 3))],
        transmissions=[("daemon", (3, 3))],
        blocks=[("data", (1, 1), 4), ("program", (4, 1), "wait")],
        resources=[("credits", (1, 2), 2)],
    )


def test_base_scenario_is_valid():
    state_from_json(_base())


@pytest.mark.parametrize("mutate,field,always", MALFORMED)
def test_malformed_raises_naming_field(mutate, field, always):
    d = copy.deepcopy(_base())
    mutate(d)
    with pytest.raises(ValueError, match=field):
        state_from_json(d)
    if always:
        with pytest.raises(ValueError, match=field):
            state_from_json(d, strict=False)
    else:
        state_from_json(d, strict=False)  # Swift accepts it


# --------------------------------------------------------------------------- observation JSON (§5.4)


def _cell(obs, r, c):
    return obs["cells"][r][c]


def test_observation_json_e2_scenario():
    s = make_state(**E2_SUBOPTIMAL_SIPHON)
    o = observation_json(s)
    assert set(o) == {
        "playerRow", "playerCol", "playerHP", "credits", "energy", "dataSiphons", "stage",
        "turn", "baseAttack", "score", "showActivated", "scheduledTasksDisabled",
        "ownedPrograms", "cells", "cryptogHints",
    }  # fmt: skip
    assert (o["playerRow"], o["playerCol"], o["dataSiphons"]) == (2, 2, 1)
    b = _cell(o, 3, 2)["block"]
    assert b == {"blockType": "data", "isSiphoned": False, "points": 4, "transmissionSpawnCount": 4}
    assert _cell(o, 2, 1)["credits"] == 2 and "energy" not in _cell(o, 2, 1)
    assert _cell(o, 1, 2)["energy"] == 1
    assert _cell(o, 5, 5)["isExit"] and not _cell(o, 5, 5)["isDataSiphon"]
    assert set(_cell(o, 0, 0)) == {"row", "col", "isDataSiphon", "isExit", "siphonCenter"}
    for r in range(6):
        for c in range(6):
            assert (_cell(o, r, c)["row"], _cell(o, r, c)["col"]) == (r, c)
    json.dumps(o)  # plain JSON types only


def test_program_block_json():
    o = observation_json(make_state(blocks=[("program", (1, 1), "siph+", {"spawnCount": 3})]))
    assert _cell(o, 1, 1)["block"] == {
        "blockType": "program", "isSiphoned": False, "points": 0, "programType": "siph+",
        "programActionIndex": 16, "transmissionSpawnCount": 3,
    }  # fmt: skip


def test_cryptog_visibility_and_hints():
    base = dict(
        enemies=[("cryptog", (3, 4)), ("cryptog", (2, 0)), ("cryptog", (5, 1)),
                 ("virus", (4, 5))],
    )  # fmt: skip
    o = observation_json(make_state((2, 2), **base))
    assert "enemy" not in _cell(o, 3, 4)  # not in row 2 / col 2
    assert _cell(o, 2, 0)["enemy"]["type"] == "cryptog"  # same row
    assert "enemy" not in _cell(o, 5, 1)
    assert _cell(o, 4, 5)["enemy"]["type"] == "virus"
    # hints in row-major order of the true cells: (3,4) before (5,1)
    assert o["cryptogHints"] == [{"row": 3, "col": 4}, {"row": 5, "col": 1}]
    o = observation_json(make_state((2, 2), show=True, **base))
    assert _cell(o, 3, 4)["enemy"]["type"] == "cryptog" and o["cryptogHints"] == []


def test_first_enemy_on_cell_decides_visibility():
    # A hidden cryptog first in list order hides a virus under it (interface §3.5 item 1).
    o = observation_json(make_state((0, 0), enemies=[("cryptog", (3, 3)), ("virus", (3, 3))]))
    assert "enemy" not in _cell(o, 3, 3) and o["cryptogHints"] == [{"row": 3, "col": 3}]
    o = observation_json(make_state((0, 0), enemies=[("virus", (3, 3), 1), ("cryptog", (3, 3))]))
    assert _cell(o, 3, 3)["enemy"] == {
        "type": "virus", "hp": 1, "isStunned": False, "spawnedFromSiphon": False,
    }  # fmt: skip


def test_transmission_json_and_show():
    kw = dict(transmissions=[("glitch", (1, 3), 2), ("virus", (1, 3), 4)])
    o = observation_json(make_state(**kw))
    assert _cell(o, 1, 3)["transmission"] == {"turnsUntilSpawn": 2}
    o = observation_json(make_state(show=True, **kw))
    assert _cell(o, 1, 3)["transmission"] == {"turnsUntilSpawn": 2, "enemyType": "glitch"}


def test_resources_under_blocks_hidden_until_siphoned():
    kw = dict(resources=[("credits", (1, 1), 5), ("energy", (2, 2), 1)])
    o = observation_json(
        make_state(blocks=[("data", (1, 1)), ("data", (2, 2), 1, {"siphoned": True})], **kw)
    )
    assert "credits" not in _cell(o, 1, 1)
    assert _cell(o, 2, 2)["energy"] == 1


def test_question_block_hides_fields():
    s = make_state(blocks=[("data", (1, 1), 7)])
    g = s.game.grid.replace(block_question=s.game.grid.block_question.at[1, 1].set(True))
    o = observation_json(s.replace(game=s.game.replace(grid=g)))
    assert _cell(o, 1, 1)["block"] == {"blockType": "question", "isSiphoned": False}


def test_observation_from_json_e2():
    s = make_state(
        (2, 2),
        siphons=1,
        attack=4,
        blocks=[("data", (3, 2), 4, {"siphoned": True, "spawnCount": 0})],
        resources=[("credits", (2, 1), 2)],
        transmissions=[("virus", (0, 0), 6)],
        owned=[10, 10, 27],
    )
    t = observation_from_json(observation_json(s))
    p = t["player"]
    assert p.dtype == np.float32 and p.shape == (10,)
    np.testing.assert_array_equal(p, np.float32([2 / 5, 2 / 5, 1, 0, 0, 0, 1 / 10, 3 / 2, 0, 0]))
    assert t["programs"].tolist() == [0.0] * 5 + [1.0] + [0.0] * 16 + [1.0]
    f = t["grid"][3, 2]
    assert f[7] == 1 and f[10] == np.float32(4 / 9) and f[11] == 1 and f[35] == 0
    assert t["grid"][2, 1, 37] == np.float32(2 / 3)
    assert t["grid"][0, 0, 36] == 1.0  # min(6/4, 1)
    assert t["grid"][5, 5, 40] == 1.0


# --------------------------------------------------------------------------- round trips


def test_state_to_json_round_trip():
    s = make_state(
        (2, 3),
        hp=2, credits=7, energy=3, siphons=2, attack=3, score=11,
        enemies=[("virus", (1, 1), 1, {"stunned": True}), ("daemon", (4, 4), 2,
                 {"spawnedFromSiphon": True, "isFromScheduledTask": True})],
        transmissions=[("cryptog", (0, 5), 2)],
        blocks=[("data", (3, 3), 6, {"siphoned": True}), ("program", (2, 0), "hack",
                {"spawnCount": 5})],
        resources=[("siphon", (0, 0)), ("credits", (0, 0), 2), ("energy", (5, 0), 3)],
        owned=["exch", "undo"], stage=4, turn=3, show=True, calm=True,
    )  # fmt: skip
    d = state_to_json(s)
    assert _trees_equal(state_from_json(json.loads(json.dumps(d))), s)


def test_state_to_json_rejects_inexpressible():
    s = make_state()
    g = s.game
    with pytest.raises(ValueError, match="pending siphon spawns"):
        state_to_json(s.replace(game=g.replace(pending_siphon_spawns=g.pending_siphon_spawns + 2)))
    with pytest.raises(ValueError, match="exit_pos"):
        state_to_json(s.replace(game=g.replace(exit_pos=g.exit_pos.at[1].set(0))))
    with pytest.raises(ValueError, match="UNDO history"):
        state_to_json(_pushed(s))


def _live_snapshots(s):
    h = s.history
    size, top = int(h.size), int(h.top)
    return [jax.tree.map(lambda x, k=k: x[(top - size + k) % 16], h.snapshots) for k in range(size)]


def _pushed(s):
    """``s`` with its game pushed onto its UNDO ring (as after a real enemy phase)."""
    return s.replace(history=push_snapshot(s.history, take_snapshot(s.game)))


def test_full_state_round_trip():
    s = make_state(
        (1, 1),
        enemies=[("glitch", (2, 2)), ("cryptog", (0, 4), 1, {"stunned": True})],
        transmissions=[("virus", (3, 3), 2)],
        blocks=[("data", (4, 4), 2), ("program", (1, 3), "crash")],
        resources=[("credits", (0, 0), 3), ("siphon", (0, 5))],
        owned=[5, 7],
    )
    s = _pushed(s)
    game, g = s.game, s.game.grid
    game = game.replace(
        pending_siphon_spawns=game.pending_siphon_spawns + 9,
        step_flag=~game.step_flag,
        grid=g.replace(block_question=g.block_question.at[4, 4].set(True), center=g.center.at[2, 2].set(True)),
        enemies=game.enemies.replace(disabled=game.enemies.disabled.at[0].set(1),
                                     last_known=game.enemies.last_known.at[1].set(jax.numpy.int8(3))),
    )  # fmt: skip
    s = _pushed(s.replace(game=game, time=s.time + 4))
    d = json.loads(json.dumps(full_state_json(s)))
    assert d["historyDepth"] == 2 and len(d["history"]) == 2
    assert d["cells"][4][4]["block"] == {
        "kind": "data", "points": 2, "program": None, "spawnCount": 2, "isQuestion": True,
    }  # fmt: skip
    assert d["enemies"][1]["lastKnownRow"] == 3 and d["enemies"][0]["disabled"] == 1
    back = state_from_full_json(d)
    assert _trees_equal(back.replace(history=s.history), s)
    assert _trees_equal(_live_snapshots(back), _live_snapshots(s))
    assert int(back.history.top) == int(s.history.top) and int(back.history.size) == 2
    # Without the JAX extras (as Swift sends it) the history still restores in order.
    del d["jax"]
    back = state_from_full_json(d)
    assert _trees_equal(_live_snapshots(back), _live_snapshots(s))


@pytest.mark.parametrize(
    "mutate,field",
    [
        (lambda d: d["cells"].pop(), r"state\.cells: expected 6 rows"),
        (lambda d: d["player"].update(hp=300), r"state\.player\.hp: .*int8"),
        (lambda d: d["cells"][1][2].update(content="lava"), r"state\.cells\[1\]\[2\]\.content"),
        (lambda d: d["enemies"].append({"type": "virus"}), r"state\.enemies\[0\]\.row"),
        (lambda d: d.pop("stepFlag"), r"state\.stepFlag: required"),
        (lambda d: d.update(stage=0), r"state\.stage"),
        (lambda d: d["exitPos"].update(row=9), r"state\.exitPos\.row/col"),
    ],
)
def test_full_state_malformed(mutate, field):
    d = json.loads(json.dumps(full_state_json(make_state())))
    mutate(d)
    with pytest.raises(ValueError, match=field):
        state_from_full_json(d)
