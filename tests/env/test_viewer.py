"""The viewer: ``scene`` (what to draw) against the state, and the matplotlib drawing of it.

Host only: no jit. Drawn contents are compared through the artists' tags, never pixels.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from builders import make_state, scenario
from hackmatrix_env import viewer
from hackmatrix_env.constants import ENEMY_NAMES, GRID_SIZE
from hackmatrix_env.scenario import observation_json, state_from_json


def every_kind_state():
    """One board with every item kind: all enemy kinds (a hidden and a seen cryptog, a
    stunned and a disabled enemy, two enemies on a cell), a transmission, data, program,
    question and siphoned blocks, credits, energy, a hidden resource, a data siphon,
    a siphon centre and the exit."""
    s = make_state(
        (2, 2), credits=7, energy=3, siphons=1, owned=["crash", "show"], stage=3, turn=4,
        enemies=[
            ("virus", (2, 4)), ("daemon", (4, 2), 2, {"stunned": True}), ("cryptog", (5, 0)),
            ("glitch", (0, 5)), ("cryptog", (2, 0), 1), ("virus", (0, 5), 1),
        ],
        transmissions=[("glitch", (1, 1), 3)],
        blocks=[
            ("data", (3, 2), 4), ("program", (4, 4), "crash"), ("data", (0, 3), 6),
            ("data", (1, 4), 2, {"siphoned": True}), ("data", (3, 4), 3),
        ],
        resources=[
            ("credits", (0, 0), 2), ("energy", (1, 0), 1), ("siphon", (5, 3)),
            ("credits", (3, 4), 2),
        ],
    )  # fmt: skip
    g, e = s.game.grid, s.game.enemies
    game = s.game.replace(
        grid=g.replace(
            block_question=g.block_question.at[0, 3].set(True),
            center=g.center.at[1, 4].set(True),
            siphoned=g.siphoned.at[1, 4].set(True).at[0, 4].set(True),
        ),
        enemies=e.replace(disabled=e.disabled.at[3].set(1)),
    )
    return s.replace(game=game)


def items_of(sc, kind):
    return [
        (r, c, it)
        for r in range(GRID_SIZE)
        for c in range(GRID_SIZE)
        for it in sc["cells"][r][c]
        if it["kind"] == kind
    ]


def test_scene_shows_every_entity_kind_of_the_state():
    state = every_kind_state()
    sc = viewer.scene(state, last_action=7)
    s = state.game
    assert {it["kind"] for row in sc["cells"] for cell in row for it in cell} == set(
        viewer.ITEM_KINDS
    )
    (pr, pc, player), = items_of(sc, "player")  # fmt: skip
    assert (pr, pc, player["hp"]) == (*map(int, s.player.pos), int(s.player.hp))
    # every alive enemy, at its cell, with its kind, hp and flags, in list order
    alive = np.flatnonzero(np.asarray(s.enemies.alive))
    drawn = [
        (r, c, it["type"], it["hp"], it["stunned"], it["disabled"])
        for r, c, it in items_of(sc, "enemy")
    ]
    expect = [
        (*map(int, s.enemies.pos[k]), ENEMY_NAMES[int(s.enemies.kind[k])], int(s.enemies.hp[k]),
         bool(s.enemies.stunned[k]), bool(s.enemies.disabled[k] > 0))
        for k in alive
    ]  # fmt: skip
    assert Counter(drawn) == Counter(expect)
    hidden = {(r, c) for r, c, it in items_of(sc, "enemy") if it["hidden"]}
    assert hidden == {(5, 0)}  # (2, 0) shares the player's row: seen
    assert [(r, c) for r, c, _ in items_of(sc, "cryptog_hint")] == [(5, 0)]
    blocks = {(r, c): it for r, c, it in items_of(sc, "block")}
    assert blocks[(0, 3)]["block"] == "question" and blocks[(0, 3)]["hides"]["points"] == 6
    assert blocks[(4, 4)]["program"] == "crash" and blocks[(3, 2)]["points"] == 4
    assert blocks[(1, 4)]["siphoned"] and not blocks[(3, 2)]["siphoned"]
    resources = {(r, c): (it["resource"], it["amount"]) for r, c, it in items_of(sc, "resource")}
    assert resources == {(0, 0): ("credits", 2), (1, 0): ("energy", 1)}  # (3,4) is under a block
    (tr, tc, trans), = items_of(sc, "transmission")  # fmt: skip
    assert (tr, tc, trans["type"], trans["countdown"]) == (1, 1, "glitch", 3)
    assert [(r, c) for r, c, _ in items_of(sc, "data_siphon")] == [(5, 3)]
    assert [(r, c) for r, c, _ in items_of(sc, "exit")] == [tuple(map(int, s.exit_pos))]
    siphoned = {(r, c): it["center"] for r, c, it in items_of(sc, "siphoned")}
    assert siphoned == {(1, 4): True, (0, 4): False}
    hud = sc["hud"]
    assert (hud["stage"], hud["turn"], hud["credits"], hud["energy"], hud["siphons"]) == (
        3,
        4,
        7,
        3,
        1,
    )
    assert hud["owned"] == ["crash", "show"] and hud["last_action"] == "crash"


def test_show_reveals_every_cryptog_and_leaves_no_hint():
    s = every_kind_state()
    shown = s.replace(game=s.game.replace(show_flag=np.bool_(True)))
    sc = viewer.scene(shown)
    assert not any(it["hidden"] for _, _, it in items_of(sc, "enemy"))
    assert items_of(sc, "cryptog_hint") == []
    assert sc["hud"]["flags"] == ["show"]


def random_scenario(rng: np.random.Generator) -> dict:
    """A random legal setState dict: distinct cells for blocks, entities anywhere else."""
    cells = [(r, c) for r in range(6) for c in range(6) if (r, c) != (5, 5)]  # (5,5): the exit
    order = rng.permutation(len(cells))
    pick = iter(cells[i] for i in order)
    player = next(pick)
    blocks = []
    for _ in range(rng.integers(0, 6)):
        cell = next(pick)
        if rng.random() < 0.5:
            blocks.append(("data", cell, int(rng.integers(1, 10))))
        else:
            blocks.append(("program", cell, str(rng.choice(["crash", "push", "show", "wait"]))))
    free = [next(pick) for _ in range(12)]
    enemies = [
        (str(rng.choice(ENEMY_NAMES)), free[int(rng.integers(0, 6))], int(rng.integers(1, 3)))
        for _ in range(rng.integers(0, 6))
    ]
    transmissions = [(str(rng.choice(ENEMY_NAMES)), free[int(rng.integers(6, 12))], int(rng.integers(1, 5))) for _ in range(rng.integers(0, 3))]  # fmt: skip
    resources = [(str(rng.choice(["credits", "energy"])), b[1], int(rng.integers(1, 4))) for b in blocks[:2]]  # fmt: skip
    resources += [("credits", free[0], 2), ("siphon", free[11])]
    return scenario(
        player, enemies=enemies, transmissions=transmissions, blocks=blocks,
        resources=resources, show=bool(rng.random() < 0.2),
    )  # fmt: skip


@pytest.mark.parametrize("seed", range(12))
def test_scene_agrees_with_the_observation_json(seed):
    """Differential: what the agent sees (interface §5.4) is what the viewer draws unfaded."""
    rng = np.random.default_rng(seed)
    s = state_from_json(random_scenario(rng))
    g = s.game.grid
    siphoned = np.asarray(g.siphoned) | (rng.random((6, 6)) < 0.2)
    s = s.replace(game=s.game.replace(grid=g.replace(siphoned=siphoned)))
    sc, obs = viewer.scene(s), observation_json(s)
    hints = set()
    for r in range(6):
        for c in range(6):
            items, cell = sc["cells"][r][c], obs["cells"][r][c]
            enemies = [it for it in items if it["kind"] == "enemy"]
            first = enemies[0] if enemies else None
            if first is not None and not first["hidden"]:
                assert cell["enemy"]["type"] == first["type"] and cell["enemy"]["hp"] == first["hp"]
            else:
                assert "enemy" not in cell
            blocks = [it for it in items if it["kind"] == "block"]
            assert bool(blocks) == ("block" in cell)
            if blocks:
                assert blocks[0]["block"] == cell["block"]["blockType"]
                assert blocks[0]["siphoned"] == cell["block"]["isSiphoned"]
            trans = [it for it in items if it["kind"] == "transmission"]
            assert bool(trans) == ("transmission" in cell)
            if trans:
                assert trans[0]["countdown"] == cell["transmission"]["turnsUntilSpawn"]
            res = {it["resource"]: it["amount"] for it in items if it["kind"] == "resource"}
            assert res == {k: cell[k] for k in ("credits", "energy") if k in cell}
            kinds = {it["kind"] for it in items}
            assert ("exit" in kinds) == cell["isExit"]
            assert ("data_siphon" in kinds) == cell["isDataSiphon"]
            assert ("player" in kinds) == ((r, c) == (obs["playerRow"], obs["playerCol"]))
            if "cryptog_hint" in kinds:
                hints.add((r, c))
    assert hints == {(h["row"], h["col"]) for h in obs["cryptogHints"]}


def drawn_items(fig) -> list[tuple[str, int, int, str]]:
    """``(kind, row, col, label)`` of every tagged artist of a figure ``viewer.draw`` made."""
    out = []
    for ax in fig.axes:
        for artist in [*ax.patches, *ax.texts, *ax.artists]:
            gid = artist.get_gid()
            if gid and gid.count(":") >= 3:
                kind, r, c, label = gid.split(":", 3)
                out.append((kind, int(r), int(c), label))
    return out


def test_drawn_artists_are_the_scene_items():
    s = every_kind_state()
    fig, _ = viewer.draw(s, last_action=0)
    drawn = Counter((k, r, c) for k, r, c, _ in drawn_items(fig))
    sc = viewer.scene(s)
    expect = Counter(
        (it["kind"], r, c) for r in range(6) for c in range(6) for it in sc["cells"][r][c]
    )
    assert drawn == expect
    labels = {(k, r, c): label for k, r, c, label in drawn_items(fig)}
    assert labels[("player", 2, 2)] == "@3"
    assert labels[("block", 4, 4)] == "crash" and labels[("block", 0, 3)] == "?"
    assert labels[("transmission", 1, 1)] == "g3"
    hud = next(t for t in fig.axes[0].texts if t.get_gid() == "hud").get_text()
    assert "stage 3" in hud and "crash, show" in hud and "last action: up" in hud


def test_env_render_hooks_and_rgb_array(tmp_path):
    from hackmatrix_env import HackMatrix
    from hackmatrix_env.jumanji import HackMatrixJumanji, State

    s = every_kind_state()
    fig, ax = HackMatrix().render(s, None)
    assert drawn_items(fig) and ax in fig.axes
    jstate = State(env_state=s, key=np.zeros(2, np.uint32))
    image = HackMatrixJumanji().render(jstate, save_path=tmp_path / "board.png")
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    assert image.std() > 0 and (tmp_path / "board.png").stat().st_size > 0
    assert np.array_equal(image, viewer.rgb_array(s))  # same drawing, deterministic


def test_animate_writes_a_gif_with_one_frame_per_state(tmp_path):
    from hackmatrix_env.jumanji import HackMatrixJumanji, State
    from PIL import Image

    a = every_kind_state()
    b = make_state((3, 3), enemies=[("virus", (3, 5))])
    states = [State(env_state=x, key=np.zeros(2, np.uint32)) for x in (a, b, a)]
    path = tmp_path / "anim.gif"
    HackMatrixJumanji().animate(states, interval=100, save_path=path)
    with Image.open(path) as im:
        assert im.n_frames == 3


def test_bad_input_gets_a_clear_error():
    import jax

    s = make_state((0, 0))
    stacked = jax.tree.map(lambda x: np.stack([x, x]), s)
    with pytest.raises(ValueError, match="single state"):
        viewer.scene(stacked)
    with pytest.raises(TypeError, match="EnvState"):
        viewer.scene({"not": "a state"})
    with pytest.raises(ValueError, match=r"0\.\.27"):
        viewer.scene(s, last_action=28)
    with pytest.raises(ValueError, match="at least one"):
        viewer.animate([])


@pytest.mark.parametrize("module", ["env", "jumanji"])
def test_the_adapters_import_the_viewer_only_inside_render(module):
    """The viewer (and matplotlib with it) loads on the first render, never with the env."""
    import ast
    from pathlib import Path

    import hackmatrix_env

    tree = ast.parse((Path(hackmatrix_env.__file__).parent / f"{module}.py").read_text())
    top_level = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    names = {a.name for n in top_level for a in n.names} | {
        n.module or "" for n in top_level if isinstance(n, ast.ImportFrom)
    }
    assert not any("viewer" in n or "matplotlib" in n for n in names)
    inner = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and any(a.name == "viewer" for a in n.names)
    ]
    assert inner, f"{module}.py should import the viewer inside its render method"
