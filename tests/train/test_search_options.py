"""Search options beyond the core: several determinizations, and the program bonus in the tree.

* ``determinizations`` K: K honest searches per game, the simulations split among them;
  the output sums their visits, averages their improved policies and plays the average's
  argmax. Checked on random mid-game states: legal actions, visits summing to the budget,
  the improved policy a distribution over the mask, determinism per key.
* ``program_bonus``: the tree's reward for a step that wins a program is the game's reward
  plus the bonus (the units a value head trained with the bonus learned), and nothing else
  changes.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from builders import make_state
from hackmatrix_env import HackMatrix
from hackmatrix_env.constants import NUM_ACTIONS, Action
from hackmatrix_train.search import (
    ARGUMENT_FLOATS,
    Node,
    SearchConfig,
    make_recurrent_fn,
    make_search,
    run_search,
    search_config_from_train,
)

B = 6


def prior_fn(params, obs):
    batch = obs.action_mask.shape[:-1]
    return jnp.broadcast_to(params["logits"], (*batch, NUM_ACTIONS)), jnp.zeros(batch)


UNIFORM = {"logits": jnp.zeros(NUM_ACTIONS)}


@pytest.fixture(scope="module")
def states():
    env = HackMatrix()
    keys = jax.random.split(jax.random.key(3), B)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, env.default_params)

    @jax.jit
    def play(obs, state, key):
        def body(c, k):
            obs, state = c
            k_a, k_s = jax.random.split(k)
            logits = jnp.where(obs.action_mask, 0.0, -1e9)
            a = jax.random.categorical(k_a, logits).astype(jnp.int32)
            obs, state, *_ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                jax.random.split(k_s, B), state, a, env.default_params
            )
            return (obs, state), None

        return jax.lax.scan(body, (obs, state), jax.random.split(key, 12))[0][1]

    return play(obs, state, jax.random.key(4))


def test_several_determinizations_aggregate_into_one_decision(states):
    cfg = SearchConfig(num_simulations=8, determinizations=4, disabled=(14,))
    search = make_search(prior_fn, cfg)
    out = search(UNIFORM, jax.random.key(0), states)
    mask = np.asarray(out.mask)
    action = np.asarray(out.action)
    assert out.action_weights.shape == (B, NUM_ACTIONS)
    assert mask[np.arange(B), action].all()
    assert (np.asarray(out.visit_counts).sum(-1) == 8).all()  # 4 searches x 2 simulations
    weights = np.asarray(out.action_weights)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    assert (weights[~mask] == 0).all()
    np.testing.assert_array_equal(action, weights.argmax(-1))  # the average's argmax
    again = search(UNIFORM, jax.random.key(0), states)
    np.testing.assert_array_equal(np.asarray(again.action), action)


def test_determinizations_must_divide_the_simulations():
    with pytest.raises(ValueError, match="determinizations"):
        SearchConfig(num_simulations=8, determinizations=3)
    with pytest.raises(ValueError, match="determinizations"):
        SearchConfig(num_simulations=8, determinizations=0)


# one siphon and the stage's one program block (SCORE) right above: siphoning wins it
WIN_A_PROGRAM = make_state((2, 2), siphons=1, energy=5, blocks=[("program", (3, 2), "score")])


def test_the_program_bonus_is_added_to_a_winning_step_only():
    plain = make_recurrent_fn(prior_fn, SearchConfig(num_simulations=2))
    bonus = make_recurrent_fn(prior_fn, SearchConfig(num_simulations=2, program_bonus=5.0))
    state = jax.tree.map(lambda x: jnp.stack([x, x]), WIN_A_PROGRAM)
    node = Node(state, jnp.zeros(2, bool))
    actions = jnp.array([int(Action.SIPHON), int(Action.DOWN)], jnp.int32)
    key = jax.random.key(1)
    out_plain, next_plain = jax.jit(plain)(UNIFORM, key, actions, node)
    out_bonus, next_bonus = jax.jit(bonus)(UNIFORM, key, actions, node)
    gained = np.asarray(out_bonus.reward - out_plain.reward)
    np.testing.assert_allclose(gained, [5.0, 0.0], atol=1e-6)  # the siphon won SCORE
    for a, b in zip(jax.tree.leaves(next_plain), jax.tree.leaves(next_bonus), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_the_program_bonus_counts_from_its_first_stage():
    """A tree bonus from stage S counts a program acquired in stage S or later, none before:
    the same siphon in stage 3 earns it from stage 3, not from stage 4, and the game's reward
    and next state are the plain tree's either way."""
    third = make_state((2, 2), siphons=1, energy=5, stage=3, blocks=[("program", (3, 2), "score")])
    state = jax.tree.map(lambda x: jnp.stack([x, x]), third)
    node = Node(state, jnp.zeros(2, bool))
    actions = jnp.array([int(Action.SIPHON), int(Action.DOWN)], jnp.int32)
    key = jax.random.key(1)
    bonus = {"program_bonus": 5.0}
    configs = {
        "plain": {},
        "from 3": {**bonus, "program_bonus_from_stage": 3},
        "from 4": {**bonus, "program_bonus_from_stage": 4},
    }
    outs = {}
    for name, extra in configs.items():
        recurrent = make_recurrent_fn(prior_fn, SearchConfig(num_simulations=2, **extra))
        outs[name] = jax.jit(recurrent)(UNIFORM, key, actions, node)
    plain = np.asarray(outs["plain"][0].reward)
    np.testing.assert_allclose(np.asarray(outs["from 3"][0].reward) - plain, [5.0, 0.0], atol=1e-6)
    np.testing.assert_array_equal(np.asarray(outs["from 4"][0].reward), plain)
    for _, stepped in outs.values():
        for a, b in zip(jax.tree.leaves(outs["plain"][1]), jax.tree.leaves(stepped), strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_the_commands_tree_bonus_flags_reach_the_search_they_play(tmp_path):
    """``--search-program-bonus B --search-program-bonus-from-stage S`` set the tree of the
    search hm-eval's rows, hm-watch and hm-play's hint play (the canonical tree without them),
    in the policy's run's units."""
    from hackmatrix_train.cli import evaluate, play, watch
    from hackmatrix_train.cli.common import search_overrides
    from hackmatrix_train.play import Hinter
    from hackmatrix_train.policy import load_policy, search_config
    from train.tiny_policy import write_tiny_policy

    path = str(write_tiny_policy(tmp_path / "run", 50))
    policy = load_policy(path)
    bonus = ["--search-program-bonus", "10", "--search-program-bonus-from-stage", "3"]

    def eval_rows(argv):
        args = evaluate.build_parser().parse_args([path, *argv])
        args.greedy = True  # as hm-eval's main sets it without --sampled
        return evaluate.search_rows(args)

    played = [search_config(policy, **row) for row in eval_rows(["--search", "8", "32", *bonus])]
    plain = eval_rows(["--search", "8"])
    watched = search_overrides(watch.build_parser().parse_args([path, "--search", "8", *bonus]))
    hint_args = play.build_parser().parse_args(["--hint", "--hint-policy", path, *bonus])
    hinted = Hinter(path, 8, 50, **search_overrides(hint_args)).config
    for cfg in [*played, search_config(policy, **watched), hinted]:
        assert (cfg.program_bonus, cfg.program_bonus_from_stage) == (10.0, 3)
        assert cfg.gamma == float(policy.cfg.gamma)  # the run's units, as without the bonus
    assert [c.num_simulations for c in played] == [8, 32]
    assert search_config(policy, **plain[0]).program_bonus == 0.0


@pytest.mark.parametrize(
    "bad",
    [
        {"program_bonus": -1.0},
        {"program_bonus": float("nan")},
        {"program_bonus_from_stage": 0},
        {"program_bonus_from_stage": 9},
        {"away_penalty": float("inf")},
    ],
)
def test_a_bad_tree_term_is_refused(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        SearchConfig(num_simulations=2, **bad)


def test_the_tree_uses_the_canonical_reward_unless_asked():
    from hackmatrix_train.config import TrainConfig

    cfg = search_config_from_train(TrainConfig(), num_simulations=8)
    assert TrainConfig().program_bonus > 0 and cfg.program_bonus == 0.0
    on = search_config_from_train(TrainConfig(), num_simulations=8, program_bonus=5.0)
    assert on.program_bonus == 5.0 and on.program_bonus_skips_undo


def _divergence_from_prior(out) -> np.ndarray:
    """KL(improved policy || masked uniform prior) per game."""
    w, mask = np.asarray(out.action_weights, np.float64), np.asarray(out.mask)
    uniform = mask / mask.sum(-1, keepdims=True)
    ratio = np.where(w > 0, w / np.where(uniform > 0, uniform, 1.0), 1.0)
    return (w * np.log(ratio)).sum(-1)


def test_value_scale_weighs_the_q_values_in_the_improved_policy(states):
    """With a uniform prior, the improved policy departs from it only through the Q values;
    a larger ``value_scale`` departs further."""
    kl = {}
    for scale in (0.01, 1.0):
        cfg = SearchConfig(num_simulations=8, value_scale=scale, gumbel_scale=0.0, disabled=(14,))
        out = make_search(prior_fn, cfg)(UNIFORM, jax.random.key(0), states)
        kl[scale] = _divergence_from_prior(out)
        # the default Gumbel-Top-2: the 8 simulations go to two root actions
        visited = np.count_nonzero(np.asarray(out.visit_counts), axis=-1)
        assert (visited == np.minimum(2, np.asarray(out.mask).sum(-1))).all(), visited
    assert kl[1.0].mean() > kl[0.01].mean() + 1e-3, kl
    with pytest.raises(ValueError, match="value_scale"):
        SearchConfig(value_scale=0.0)


def test_the_policy_target_is_mctxs_improved_policy_at_its_own_scale(states):
    """``target_value_scale``: at the acting scale the target is mctx's own ``action_weights``
    (the re-computation is exact); at a smaller scale it is closer to the prior."""
    base = dict(num_simulations=8, gumbel_scale=0.0, disabled=(14,))
    same = make_search(prior_fn, SearchConfig(**base, target_value_scale=0.1))
    out = same(UNIFORM, jax.random.key(0), states)
    np.testing.assert_allclose(
        np.asarray(out.policy_target), np.asarray(out.action_weights), atol=1e-6
    )
    gentle = make_search(prior_fn, SearchConfig(**base, target_value_scale=0.01))
    soft = gentle(UNIFORM, jax.random.key(0), states)
    np.testing.assert_array_equal(np.asarray(soft.action), np.asarray(out.action))  # acting alike
    assert _divergence_from_prior(soft._replace(action_weights=soft.policy_target)).mean() < (
        _divergence_from_prior(out).mean() - 1e-3
    )
    with pytest.raises(ValueError, match="target_value_scale"):
        SearchConfig(target_value_scale=0.0)


def test_a_raw_target_moves_with_the_q_values_size_a_rescaled_one_does_not(states):
    """``target_q="raw"``: the completed Q enter the target in the value's units, so the same
    tree with its rewards scaled down 1000-fold gives a target 1000-fold closer to the prior
    (in logits); the rescaled target is the same for both (min-max makes it scale-free)."""
    base = dict(num_simulations=8, gumbel_scale=0.0, disabled=(14,), target_value_scale=0.1)
    out = {}
    for q in ("rescaled", "raw"):
        for scale in (1.0, 1e-3):
            cfg = SearchConfig(**base, target_q=q, reward_scale=scale)
            out[q, scale] = make_search(prior_fn, cfg)(UNIFORM, jax.random.key(0), states)

    def divergence(o):
        return _divergence_from_prior(o._replace(action_weights=o.policy_target))

    np.testing.assert_allclose(
        np.asarray(out["rescaled", 1.0].policy_target),
        np.asarray(out["rescaled", 1e-3].policy_target),
        atol=1e-4,
    )
    big, small = divergence(out["raw", 1.0]), divergence(out["raw", 1e-3])
    assert big.mean() > 1e-3 and small.max() < 1e-4 and small.mean() < big.mean() / 100, (
        big, small,
    )  # fmt: skip
    # the acting search does not depend on the target's form
    np.testing.assert_array_equal(
        np.asarray(out["raw", 1.0].action), np.asarray(out["rescaled", 1.0].action)
    )
    with pytest.raises(ValueError, match="target_q"):
        SearchConfig(target_q="clipped")


def test_the_configs_floats_are_arguments_of_one_program_with_the_constants_results(states):
    """``make_search`` passes the config's floats (``ARGUMENT_FLOATS``) to its program: two
    configs that differ only in them lower to the same program (one compile serves both), and
    its results are those of the program with the floats as constants, bit for bit."""
    base = dict(num_simulations=8, disabled=(14,), target_value_scale=0.1, target_q="raw")
    floats = dict(gumbel_scale=0.5, value_scale=1.0, target_value_scale=0.3, gamma=0.997,
                  reward_scale=1e-3)  # fmt: skip
    assert set(floats) == set(ARGUMENT_FLOATS)
    one, other = (
        make_search(prior_fn, SearchConfig(**base)),
        make_search(prior_fn, SearchConfig(**{**base, **floats})),
    )
    args = (UNIFORM, jax.random.key(0), states)

    def program(search):
        return search.func.lower(*search.args, *args).as_text()

    assert program(one) == program(other)
    as_constants = jax.jit(
        functools.partial(run_search, prior_fn, SearchConfig(**{**base, **floats}))
    )
    want, got = as_constants(*args), other(*args)
    assert not np.array_equal(np.asarray(got.policy_target), np.asarray(one(*args).policy_target))
    for name, a, b in zip(want._fields, want, got, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)


def test_common_chance_steps_every_child_of_a_node_with_the_nodes_draw(states):
    """``chance="common"``: a node's children step with a key carried by the node, not the
    one mctx passes: the same action from the same node gives the same child whatever mctx's
    key, and two actions' children carry the same chance key (so their subtrees share draws
    too). ``"sampled"`` steps with mctx's key and carries the chance key unchanged."""
    two = jax.tree.map(lambda x: x[:2], states)
    chance = jax.random.key_data(jax.random.split(jax.random.key(7), 2))
    node = Node(two, jnp.zeros(2, bool), chance)
    common = jax.jit(make_recurrent_fn(prior_fn, SearchConfig(num_simulations=2, chance="common")))
    sampled = jax.jit(make_recurrent_fn(prior_fn, SearchConfig(num_simulations=2)))
    moves = jnp.array([int(Action.UP), int(Action.LEFT)], jnp.int32)
    other = jnp.array([int(Action.DOWN), int(Action.RIGHT)], jnp.int32)

    def leaves(x):
        return [np.asarray(v) for v in jax.tree.leaves(x)]

    first = common(UNIFORM, jax.random.key(1), moves, node)
    again = common(UNIFORM, jax.random.key(2), moves, node)
    for a, b in zip(leaves(first), leaves(again), strict=True):
        np.testing.assert_array_equal(a, b)
    sibling = common(UNIFORM, jax.random.key(3), other, node)
    np.testing.assert_array_equal(np.asarray(first[1].chance), np.asarray(sibling[1].chance))
    assert not (np.asarray(first[1].chance) == np.asarray(chance)).all()  # a fresh key per depth
    _, kept = sampled(UNIFORM, jax.random.key(1), moves, node)
    np.testing.assert_array_equal(np.asarray(kept.chance), np.asarray(chance))
    with pytest.raises(ValueError, match="chance"):
        SearchConfig(chance="fixed")


def test_track_cryptogs_must_be_a_bool():
    assert SearchConfig(track_cryptogs=True).track_cryptogs is True
    with pytest.raises(ValueError, match="track_cryptogs"):
        SearchConfig(track_cryptogs="yes")
