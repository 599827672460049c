"""The Gumbel MuZero search (``hackmatrix_train.search``): the real game as the model.

The prior here is a deliberately wrong network: its logits prefer one bad legal action and its
value is 0 everywhere, so whatever the search gets right it learned by simulating the game.
Every search runs a batch of 8 (one compile per configuration, module level); the keys are
fixed, so every count below is the same on every run.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from builders import make_state
from hackmatrix_env.adapters import allowed_actions, restrict_mask
from hackmatrix_env.constants import NUM_ACTIONS, PROGRAM_NAMES, Action, Content
from hackmatrix_env.hidden import hidden_question_map, resample_hidden
from hackmatrix_env.observation import observe
from hackmatrix_train.search import (
    Node,
    SearchConfig,
    make_recurrent_fn,
    make_search,
    policy_mask,
    select_rows,
)

B = 8  # every batch here: one compile per jitted function
SCORE = 5 + PROGRAM_NAMES.index("score")  # action 24
UNDO = 5 + PROGRAM_NAMES.index("undo")  # action 14
RESET = 5 + PROGRAM_NAMES.index("reset")  # action 19


def prior_fn(params, obs):
    """``(logits, value)``: the logits ``params["logits"]`` (f32[28]) for every state, value 0."""
    lead = obs.action_mask.shape[:-1]
    logits = jnp.broadcast_to(params["logits"], (*lead, NUM_ACTIONS)).astype(jnp.float32)
    return logits, jnp.zeros(lead, jnp.float32)


def wrong_prior(action: int, strength: float = 2.0) -> dict:
    """A prior whose favourite is ``action`` (logit ``strength``, every other logit 0)."""
    return {"logits": strength * jax.nn.one_hot(action, NUM_ACTIONS)}


UNIFORM = {"logits": jnp.zeros(NUM_ACTIONS)}

# honest with one determinization (the search itself), Gumbel selection, nothing disabled.
# Every legal action is considered (16 >= the legal count): the scenarios give the right move a
# low prior, which the default Gumbel-Top-2 searches only when its draw picks it.
ALL_LEGAL = 16
CFG = SearchConfig(num_simulations=64, determinizations=1, max_num_considered_actions=ALL_LEGAL)
DISABLED = (int(Action.LEFT), UNDO, RESET)
CFG_IMPROVED = SearchConfig(
    num_simulations=32, selection="improved", disabled=DISABLED, determinizations=1,
    max_num_considered_actions=ALL_LEGAL,
)  # fmt: skip
SEARCH = make_search(prior_fn, CFG)
SEARCH_IMPROVED = make_search(prior_fn, CFG_IMPROVED)
RECURRENT = jax.jit(make_recurrent_fn(prior_fn, CFG))
_masks = jax.jit(jax.vmap(lambda s: observe(s).action_mask))
_resample_rows = jax.jit(jax.vmap(resample_hidden))


def batch(*states):
    """The states stacked on a leading axis, repeated cyclically to ``B`` rows."""
    rows = [states[i % len(states)] for i in range(B)]
    return jax.tree.map(lambda *xs: jnp.stack(xs), *rows)


def step_rows(params, key, actions, state, done=None):
    """One in-tree step of every row: ``(mctx.RecurrentFnOutput, Node)``."""
    done = jnp.zeros(B, bool) if done is None else jnp.asarray(done)
    return RECURRENT(params, key, jnp.asarray(actions, jnp.int32), Node(state, done))


def leaves_differ(a, b) -> list[str]:
    flat_a = jax.tree_util.tree_flatten_with_path(a)[0]
    return [
        jax.tree_util.keystr(path)
        for (path, x), y in zip(flat_a, jax.tree.leaves(b), strict=True)
        if np.asarray(x).dtype != np.asarray(y).dtype or not np.array_equal(x, y)
    ]


# --------------------------------------------------------------------------- scenarios
# Each has one right move; the wrong prior prefers a legal move that loses.

# (a) hp 1, a virus (hp 2) right above: only the shot (UP) survives the turn; a virus moves
# twice, so stepping away (DOWN) lets it close in and strike in its second sub-step.
THREAT = make_state((2, 2), hp=1, enemies=[("virus", (3, 2), 2)])
# (b) the exit (5,5) two steps up, hp 1, a virus off the player's lines at (2,3): UP keeps out
# of its reach and UP again completes the stage; DOWN walks into its reach (death).
EXIT_RUN = make_state((3, 5), hp=1, enemies=[("virus", (2, 3), 2)])
# (c) one siphon, 5 energy, the stage's one program block (SCORE) right above: the siphon
# wins it and SCORE then pays 7 points (+3.24). The exit is walled off by siphoned blocks,
# so no move earns distance shaping to lure the search away.
_WALLS = [("data", cell, 5, {"siphoned": True}) for cell in ((4, 5), (5, 4))]
LAST_PROGRAM = make_state(
    (2, 2), siphons=1, energy=5, blocks=[("program", (3, 2), "score"), *_WALLS]
)

SCENARIOS = {
    "shoot_the_adjacent_virus": (THREAT, int(Action.DOWN), int(Action.UP)),
    "exit_two_steps_away": (EXIT_RUN, int(Action.DOWN), int(Action.UP)),
    "siphon_the_last_program": (LAST_PROGRAM, int(Action.DOWN), int(Action.SIPHON)),
}


def test_scenario_moves_are_what_they_claim():
    """In the real game the wrong prior's moves lose and the right ones pay."""
    key = jax.random.key(0)
    for state, bad in ((THREAT, Action.DOWN), (EXIT_RUN, Action.DOWN)):
        out, node = step_rows(UNIFORM, key, [bad] * B, batch(state))
        assert bool(node.done.all()) and (np.asarray(node.state.game.player.hp) == 0).all()
    out, node = step_rows(UNIFORM, key, [Action.UP] * B, batch(THREAT))
    assert not bool(node.done.any()) and (np.asarray(node.state.game.player.hp) == 1).all()
    _, node = step_rows(UNIFORM, key, [Action.UP] * B, batch(EXIT_RUN))
    out, node = step_rows(UNIFORM, key, [Action.UP] * B, node.state)
    assert (np.asarray(node.state.game.stage) == 2).all()  # the exit completed stage 1
    assert (np.asarray(out.reward) > 1.0).all()
    first, node = step_rows(UNIFORM, key, [Action.SIPHON] * B, batch(LAST_PROGRAM))
    second, _ = step_rows(UNIFORM, key, [SCORE] * B, node.state)
    np.testing.assert_allclose(np.asarray(first.reward + second.reward), -0.01 + 3.24, atol=1e-5)
    greedy, _ = step_rows(UNIFORM, key, [Action.DOWN] * B, batch(LAST_PROGRAM))
    np.testing.assert_allclose(np.asarray(greedy.reward), -0.01, atol=1e-6)


@pytest.mark.parametrize("name", list(SCENARIOS))
@pytest.mark.parametrize("search", [SEARCH, SEARCH_IMPROVED], ids=["gumbel", "improved"])
def test_search_overrides_a_wrong_prior(name, search):
    state, bad, right = SCENARIOS[name]
    states = batch(state)
    chosen = []
    for seed in range(4):
        out = search(wrong_prior(bad), jax.random.key(seed), states)
        assert (np.asarray(out.prior_action) == bad).all()  # the greedy policy loses
        assert np.asarray(out.mask)[:, bad].all()
        chosen.append(np.asarray(out.action))
    chosen = np.concatenate(chosen)
    assert (chosen == right).sum() >= 30, chosen  # 32 decisions: 8 rows x 4 keys


def test_search_values_see_the_outcomes():
    """The root's Q: the shot beats every step (each a death, -1.01 in the real game)."""
    out = SEARCH(wrong_prior(Action.DOWN), jax.random.key(0), batch(THREAT))
    q, visits = np.asarray(out.q_values), np.asarray(out.visit_counts)
    for a in (Action.DOWN, Action.LEFT, Action.RIGHT):
        assert (visits[:, a] > 0).all()
        np.testing.assert_allclose(q[:, a], -1.01, atol=1e-5)
    assert (q[:, Action.UP] > -0.5).all()
    assert (visits.sum(axis=1) == CFG.num_simulations).all()


# --------------------------------------------------------------------------- the tree's model


def test_terminal_nodes_are_absorbing():
    states = batch(THREAT, EXIT_RUN, LAST_PROGRAM)
    done = np.arange(B) % 2 == 0
    actions = [(Action.UP, Action.UP, Action.SIPHON)[i % 3] for i in range(B)]  # all legal
    out, node = step_rows(UNIFORM, jax.random.key(1), actions, states, done)
    reward, discount = np.asarray(out.reward), np.asarray(out.discount)
    assert (reward[done] == 0).all() and (discount[done] == 0).all()
    assert (np.asarray(out.value)[done] == 0).all()
    assert np.asarray(node.done)[done].all()
    kept = jax.tree.map(lambda x: x[done], node.state)
    assert leaves_differ(kept, jax.tree.map(lambda x: x[done], states)) == []
    # the rows still playing stepped: time + 1, the usual discount
    assert (np.asarray(node.state.time)[~done] == 1).all()
    np.testing.assert_allclose(discount[~done], CFG.gamma)


def test_a_killing_step_ends_the_branch():
    out, node = step_rows(
        wrong_prior(Action.DOWN), jax.random.key(2), [Action.DOWN] * B, batch(THREAT)
    )
    np.testing.assert_allclose(np.asarray(out.reward), -1.01, atol=1e-6)  # damage, step
    assert (np.asarray(out.discount) == 0).all() and (np.asarray(out.value) == 0).all()
    assert bool(node.done.all())
    # the shot instead: the game goes on
    out, node = step_rows(
        wrong_prior(Action.DOWN), jax.random.key(2), [Action.UP] * B, batch(THREAT)
    )
    np.testing.assert_allclose(np.asarray(out.discount), CFG.gamma)
    assert not bool(node.done.any())


def test_truncation_ends_the_branch():
    """time = max_steps - 1: the next step reaches the limit, so the node is done."""
    limit = CFG.max_steps_in_episode
    states = batch(LAST_PROGRAM)
    times = np.where(np.arange(B) < 4, limit - 1, limit - 2).astype(np.int32)
    states = states.replace(time=jnp.asarray(times))
    out, node = step_rows(UNIFORM, jax.random.key(3), [Action.DOWN] * B, states)
    last = np.arange(B) < 4
    assert np.asarray(node.done)[last].all() and not np.asarray(node.done)[~last].any()
    discount = np.asarray(out.discount)
    assert (discount[last] == 0).all()
    np.testing.assert_allclose(discount[~last], CFG.gamma)
    assert (np.asarray(out.value)[last] == 0).all()
    np.testing.assert_allclose(np.asarray(out.reward), -0.01, atol=1e-6)  # the step still pays


# --------------------------------------------------------------------------- random states


def _starts():
    """Eight varied boards: programs owned, enemies, transmissions, question blocks."""
    every = list(range(5, NUM_ACTIONS))
    rich = dict(credits=20, energy=20, siphons=2, owned=every)
    boards = [
        make_state((0, 0), **rich, enemies=[("virus", (3, 3)), ("cryptog", (4, 2), 2)]),
        make_state(
            (2, 3),
            **rich,
            enemies=[("daemon", (5, 0)), ("glitch", (1, 1))],
            transmissions=[("cryptog", (4, 4), 2)],
            blocks=[("data", (3, 3), 4), ("program", (1, 4), "push")],
        ),
        make_state((5, 0), hp=1, siphons=1, enemies=[("virus", (2, 2)), ("cryptog", (1, 4), 1)]),
        make_state((1, 1), owned=[UNDO, SCORE], energy=5, credits=1, blocks=[("data", (2, 1), 3)]),
        make_state(
            (3, 0),
            **rich,
            stage=4,
            transmissions=[("virus", (5, 3), 1), ("glitch", (0, 4), 3)],
            blocks=[("data", (2, 2), 6), ("data", (4, 1), 2), ("program", (1, 3), "hack")],
        ),
        make_state((4, 4), siphons=3, blocks=[("data", (4, 3), 5), ("program", (3, 4), "wait")]),
        make_state((0, 5), **rich, enemies=[("cryptog", (3, 2), 2), ("cryptog", (4, 1), 1)]),
        make_state((2, 0), credits=3, energy=3, owned=[5, 8, 12, 13]),
    ]
    # question blocks on the boards that have blocks
    out = []
    for s in boards:
        g = s.game.grid
        out.append(
            s.replace(
                game=s.game.replace(grid=g.replace(block_question=g.content == Content.BLOCK))
            )
        )
    return out


@pytest.fixture(scope="module")
def random_states():
    """Eight batches of 8: uniformly random masked play (in-tree steps), every 3rd step kept;
    a row whose game ended starts over from its board."""
    start = batch(*_starts())
    state, key, kept = start, jax.random.key(99), []
    for t in range(24):
        key, k_act, k_step = jax.random.split(key, 3)
        logits = jnp.where(_masks(state), 0.0, -jnp.inf)
        action = jax.random.categorical(k_act, logits)
        _, node = step_rows(UNIFORM, k_step, action, state)
        state = select_rows(node.done, start, node.state)
        if t % 3 == 2:
            kept.append(state)
    return kept


def test_no_illegal_action_under_random_masks(random_states):
    allowed = allowed_actions(DISABLED)
    chosen = set()
    for i, states in enumerate(random_states):
        game_mask = np.asarray(_masks(states))
        assert game_mask.any(axis=1).all()
        for search, cfg in ((SEARCH, CFG), (SEARCH_IMPROVED, CFG_IMPROVED)):
            for seed in range(2):
                prior = wrong_prior(int(np.random.default_rng(i + 10 * seed).integers(28)), 3.0)
                out = search(prior, jax.random.key(100 * i + seed), states)
                action = np.asarray(out.action)
                chosen.update(action.tolist())
                rows = np.arange(B)
                assert game_mask[rows, action].all()
                assert np.asarray(out.mask)[rows, action].all()
                expected = np.asarray(restrict_mask(game_mask, allowed_actions(cfg.disabled)))
                np.testing.assert_array_equal(np.asarray(out.mask), expected)
                assert (np.asarray(out.visit_counts)[~expected] == 0).all()
                assert (np.asarray(out.action_weights)[~expected] == 0).all()
                if cfg.disabled:  # a disabled action only where nothing else is legal
                    picked_disabled = ~allowed[action]
                    assert not (game_mask & allowed)[picked_disabled].any()
    # the batches are varied: moves, shots, the siphon and programs all get chosen
    assert len(chosen) >= 10 and {0, 1, 2, 3} <= chosen and any(a >= 5 for a in chosen)


def test_policy_mask_under_random_disabled_sets(random_states):
    """``policy_mask``: the game's mask less ``disabled``, unless that leaves nothing."""
    rng = np.random.default_rng(0)
    states = random_states[-1]
    game_mask = np.asarray(_masks(states))
    # random sets, and one that takes out everything row 0 may do (its fallback)
    sets = [tuple(int(a) for a in rng.choice(NUM_ACTIONS, k, False)) for k in (3, 12, 25)]
    sets.append(tuple(int(a) for a in np.flatnonzero(game_mask[0])))
    fallbacks = 0
    for disabled in sets:
        mask = np.asarray(policy_mask(states, disabled))
        narrowed = game_mask & allowed_actions(disabled)
        empty = ~narrowed.any(axis=1)
        fallbacks += int(empty.sum())
        np.testing.assert_array_equal(mask[~empty], narrowed[~empty])
        np.testing.assert_array_equal(mask[empty], game_mask[empty])
    assert fallbacks > 0  # the fallback was exercised


def test_same_key_same_decisions(random_states):
    states = random_states[2]
    for search in (SEARCH, SEARCH_IMPROVED):
        a = search(UNIFORM, jax.random.key(7), states)
        b = search(UNIFORM, jax.random.key(7), states)
        assert leaves_differ(a, b) == []
    # different keys: the trees differ somewhere in the batches
    differs = 0
    for states in random_states:
        a = SEARCH(UNIFORM, jax.random.key(7), states)
        b = SEARCH(UNIFORM, jax.random.key(8), states)
        differs += int((np.asarray(a.visit_counts) != np.asarray(b.visit_counts)).any(axis=1).sum())
    assert differs >= 16


def test_honest_mode_never_reads_a_hidden_field(random_states):
    """Honest search from s and from s' = resample_hidden(k, s): the same output, bit for bit."""
    hidden_rows = 0
    for i, states in enumerate(random_states):
        other = _resample_rows(jax.random.split(jax.random.key(500 + i), B), states)
        hidden_rows += int(
            np.asarray(jax.vmap(hidden_question_map)(states.game.grid)).any(axis=(1, 2)).sum()
        )
        assert leaves_differ(states, other)  # the pair differs (hidden parts)
        for seed in range(2):
            key = jax.random.key(1000 * i + seed)
            a = SEARCH(wrong_prior(Action.UP), key, states)
            b = SEARCH(wrong_prior(Action.UP), key, other)
            assert leaves_differ(a, b) == [], i
    assert hidden_rows >= 16


def test_honest_search_plays_only_what_the_real_game_allows():
    """A re-draw can put an invisible cryptog on a diagonal neighbour, where CRASH is legal
    in the re-drawn game (rules §4.3) and not in the real one: the honest root keeps the mask
    the player sees, so a prior that wants CRASH never gets it played."""
    crash = 5 + PROGRAM_NAMES.index("crash")
    state = make_state(
        (2, 2), credits=5, energy=5, owned=["crash"], enemies=[("cryptog", (4, 5), 2)]
    )
    seen = np.asarray(observe(state).action_mask)
    assert not seen[crash] and seen[: int(Action.SIPHON)].any()
    states = batch(state)
    redrawn_crash = 0
    for seed in range(4):
        keys = jax.random.split(jax.random.key(seed), B)
        redrawn_crash += int(np.asarray(_masks(_resample_rows(keys, states)))[:, crash].sum())
        for search in (SEARCH, SEARCH_IMPROVED):
            out = search(wrong_prior(crash, 8.0), jax.random.key(seed), states)
            assert not np.asarray(out.action == crash).any()
            assert not np.asarray(out.mask)[:, crash].any()
            assert (np.asarray(out.action_weights)[:, crash] == 0).all()
            assert (np.asarray(out.policy_target)[:, crash] == 0).all()
    assert redrawn_crash > 0  # the re-draws do make CRASH legal: the case is exercised
