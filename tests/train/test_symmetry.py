"""The board's eight symmetries (``hackmatrix_train.symmetry``): views of real observations,
checked against the game's own moves, and the network averaged over them."""

from __future__ import annotations

import dataclasses
import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_env import HackMatrix
from hackmatrix_env.constants import REWARD_COMPONENTS, Action
from hackmatrix_train import symmetry
from hackmatrix_train.cli.train import build_parser, config_from_args
from hackmatrix_train.config import TrainConfig
from hackmatrix_train.network import make_network
from hackmatrix_train.ppo import ppo_loss, sample_actor
from hackmatrix_train.rollout import collect_rollout
from hackmatrix_train.stats import init_episode_acc
from hackmatrix_train.trainer import make_train
from hackmatrix_train.update import Learner
from hypothesis import given, settings
from hypothesis import strategies as st
from train.recipes import plain_ppo
from train.test_network import moved_params
from train.train_probes import ProbeParams, ProbeSuite

ROW_CHANNEL = int(Action.ROW) + symmetry.PROGRAM_CHANNEL_OFFSET
COL_CHANNEL = int(Action.COL) + symmetry.PROGRAM_CHANNEL_OFFSET


@pytest.fixture(scope="module")
def played():
    """64 games after 12 random legal moves each, and one more random legal move:
    ``(obs, action, next_obs, done)``."""
    env = HackMatrix()
    params = env.default_params
    step = jax.jit(jax.vmap(env.step, (0, 0, 0, None)))

    def random_legal(key, obs):
        return jax.random.categorical(key, jnp.where(obs.action_mask, 0.0, -jnp.inf))

    obs, state = jax.vmap(env.reset, (0, None))(jax.random.split(jax.random.key(0), 64), params)
    for i in range(13):
        keys = jax.random.split(jax.random.key(i + 1), 64)
        action = jax.vmap(random_legal)(keys, obs)
        before = obs
        out = step(keys, state, action, params)  # obs, state, reward, done, ...
        obs, state, done = out[0], out[1], out[3]
    return before, action, obs, np.asarray(done)


def player_cell(obs):
    """The player's (row, col) per game from the player vector (row / 5, col / 5)."""
    return np.rint(np.asarray(obs.player[..., :2]) * 5).astype(int)


def test_eight_distinct_views_each_with_an_inverse(played):
    """Every view's tables are permutations, the identity comes first, and each view has
    exactly one view that undoes it on real observations."""
    obs = played[0]
    assert symmetry.SYMMETRIES[0] == symmetry.Symmetry(False, False, False)
    assert len(set(symmetry.SYMMETRIES)) == symmetry.NUM_VIEWS
    for sym in symmetry.SYMMETRIES:
        for table in symmetry.view_tables(sym):
            assert sorted(table.tolist()) == list(range(len(table)))
        undo = [
            other for other in symmetry.SYMMETRIES
            if all(np.array_equal(a, b) for a, b in zip(
                jax.tree.leaves(symmetry.view_observation(
                    symmetry.view_observation(obs, sym), other)),
                jax.tree.leaves(obs), strict=True))
        ]  # fmt: skip
        assert len(undo) == 1, sym


def test_the_view_shows_each_cell_and_the_player_where_map_cell_puts_them(played):
    obs = played[0]
    grid = np.asarray(obs.grid)
    for sym in symmetry.SYMMETRIES:
        view = symmetry.view_observation(obs, sym)
        vgrid = np.asarray(view.grid)
        for row, col in itertools.product(range(6), range(6)):
            vrow, vcol = symmetry.map_cell(sym, row, col)
            shown = vgrid[:, vrow, vcol]
            if sym.swap:  # a ROW program block shows as COL and back
                shown = shown[:, symmetry.view_tables(sym)[2]]
            np.testing.assert_array_equal(shown, grid[:, row, col])
        cells = [symmetry.map_cell(sym, r, c) for r, c in player_cell(obs)]
        np.testing.assert_array_equal(player_cell(view), np.array(cells))
        np.testing.assert_array_equal(view.player[:, 2:], obs.player[:, 2:])


def test_a_transpose_trades_row_and_col_in_blocks_programs_and_actions(played):
    obs = played[0]
    for sym in symmetry.SYMMETRIES:
        _, actions, channels, programs = symmetry.view_tables(sym)
        pair = [int(Action.ROW), int(Action.COL)]
        expected = pair[::-1] if sym.swap else pair
        assert actions[pair].tolist() == expected
        assert channels[[ROW_CHANNEL, COL_CHANNEL]].tolist() == [
            c + symmetry.PROGRAM_CHANNEL_OFFSET for c in expected
        ]
        assert (programs[[p - 5 for p in pair]] + 5).tolist() == expected
        view = symmetry.view_observation(obs, sym)
        np.testing.assert_array_equal(view.programs[:, expected[0] - 5], obs.programs[:, 7])


def test_a_direction_maps_to_the_step_the_view_shows(played):
    """The game's own moves: where a direction took the player from cell p to p', the view's
    action for it is the step from the view's p to the view's p'; the view's mask allows it."""
    before, action, after, done = played
    moved = (np.asarray(action) < 4) & np.any(player_cell(before) != player_cell(after), -1)
    moved &= ~done  # a game that ended starts again on a corner
    assert moved.sum() >= 8  # enough real moves to check every direction's image
    offsets = [tuple(int(x) for x in o) for o in symmetry.DIR_OFFSETS]
    for sym in symmetry.SYMMETRIES:
        actions = symmetry.view_tables(sym)[1]
        view = symmetry.view_observation(before, sym)
        for g in np.flatnonzero(moved):
            a = int(action[g])
            src = symmetry.map_cell(sym, *player_cell(before)[g])
            dst = symmetry.map_cell(sym, *player_cell(after)[g])
            assert offsets[actions[a]] == (dst[0] - src[0], dst[1] - src[1])
            assert bool(view.action_mask[g, actions[a]])


@settings(deadline=None, max_examples=6)
@given(seed=st.integers(0, 2**20), views=st.sampled_from([2, 4, 8]))
def test_the_average_over_all_views_is_a_projection(played, seed, views):
    """Averaged over the whole group, a network is equivariant, so averaging it again
    changes nothing; one view is the network itself; fewer views keep the output shapes."""
    net = make_network("grid", 28, 32, 2)
    params = moved_params(net, seed)
    obs = jax.tree.map(lambda x: x[:8], played[0])
    once = symmetry.symmetrized(net.apply, 8)
    twice = symmetry.symmetrized(once, 8)
    for a, b in zip(once(params, obs), twice(params, obs), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    apply = net.apply
    assert symmetry.symmetrized(apply, 1) is apply
    logits, value = symmetry.symmetrized(net.apply, views)(params, obs)
    assert logits.shape == (8, 28) and value.shape == (8,)


def test_a_view_of_a_symmetrized_network_answers_the_same_mapped_back(played):
    """Equivariance itself: the averaged network asked about a view gives the state's answer
    in the view's actions, and the same value."""
    net = make_network("grid", 28, 32, 2)
    params = moved_params(net, 3)
    obs = played[0]
    apply = symmetry.symmetrized(net.apply)
    logits, value = apply(params, obs)
    for sym in symmetry.SYMMETRIES:
        vlogits, vvalue = apply(params, symmetry.view_observation(obs, sym))
        np.testing.assert_allclose(vlogits[:, symmetry.view_tables(sym)[1]], logits, atol=1e-5)
        np.testing.assert_allclose(vvalue, value, atol=1e-5)


@pytest.mark.parametrize("views", [0, 9, -1])
def test_a_bad_number_of_views_is_refused(views):
    with pytest.raises(ValueError, match="--views must be 1 to 8"):
        symmetry.symmetrized(lambda p, o: None, views)


def test_a_policy_loaded_with_views_plays_the_mean_of_its_views(played, tmp_path):
    """``load_policy(views=8)`` (``--views 8`` of hm-eval, hm-watch, hm-play) is the mean over
    the eight views of the checkpoint's own network, each view's logits mapped back."""
    from hackmatrix_train.policy import load_policy
    from train.tiny_policy import write_tiny_policy

    path = write_tiny_policy(tmp_path / "tiny", 50, network="grid")
    plain, averaged = load_policy(path), load_policy(path, views=8)
    assert averaged.meta["views"] == 8 and plain.meta["views"] == 1
    obs = played[0]
    answers = [plain.apply_fn(plain.params, symmetry.view_observation(obs, s))
               for s in symmetry.SYMMETRIES]  # fmt: skip
    logits = np.mean([a[0][:, symmetry.view_tables(s)[1]]
                      for a, s in zip(answers, symmetry.SYMMETRIES, strict=True)], axis=0)  # fmt: skip
    value = np.mean([a[1] for a in answers], axis=0)
    got = averaged.apply_fn(averaged.params, obs)
    np.testing.assert_allclose(got[0], logits, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], value, rtol=1e-5, atol=1e-6)
    # the network itself is not its average: the views disagree
    assert not np.allclose(plain.apply_fn(plain.params, obs)[0], logits, atol=1e-4)


def test_hm_eval_with_views_says_so_in_its_title_and_summary(tmp_path, capsys):
    from hackmatrix_train.cli import evaluate
    from train.tiny_policy import write_tiny_policy

    path = write_tiny_policy(tmp_path / "tiny", 30, network="grid")
    out = tmp_path / "summary.json"
    assert evaluate.main([str(path), "--episodes", "2", "--views", "8", "--json", str(out)]) == 0
    assert "params.msgpack, 8 views: 2 episodes" in capsys.readouterr().out
    import json

    assert json.loads(out.read_text())["views"] == 8


def test_a_state_view_is_a_function_of_the_observation_alone(played):
    """``state_view`` gives every observation one of the eight views, the same one eagerly and
    compiled, wherever the observation sits in a batch and alone: the rollout and the loss,
    which see one stored observation in different batches and programs, agree on its view."""
    obs = played[0]
    index = np.asarray(symmetry.state_view(obs))
    assert index.shape == (64,) and set(index.tolist()) == set(range(8))
    np.testing.assert_array_equal(np.asarray(jax.jit(symmetry.state_view)(obs)), index)
    order = np.random.default_rng(0).permutation(64)
    shuffled = jax.tree.map(lambda x: x[order], obs)
    np.testing.assert_array_equal(np.asarray(symmetry.state_view(shuffled)), index[order])
    alone = jax.tree.map(lambda x: x[5], obs)
    assert int(symmetry.state_view(alone)) == index[5]
    moved = obs._replace(player=obs.player.at[:, 2].add(0.5))  # another state, another hash
    assert (np.asarray(symmetry.state_view(moved)) != index).any()


def test_a_network_through_state_views_answers_each_state_in_its_own_view(played):
    """``viewed_by_state``: each row is the network's answer on that row's view, its logits
    mapped back to the state's actions and its value the view's."""
    net = make_network("grid", 28, 32, 2)
    params = moved_params(net, 5)
    obs = played[0]
    logits, value = symmetry.viewed_by_state(net.apply)(params, obs)
    index = np.asarray(symmetry.state_view(obs))
    for sym_index, sym in enumerate(symmetry.SYMMETRIES):
        rows = np.flatnonzero(index == sym_index)
        part = jax.tree.map(lambda x, rows=rows: x[rows], obs)
        vlogits, vvalue = net.apply(params, symmetry.view_observation(part, sym))
        back = symmetry.view_tables(sym)[1]
        np.testing.assert_allclose(logits[rows], vlogits[:, back], atol=1e-5)
        np.testing.assert_allclose(value[rows], vvalue, atol=1e-5)
    plain = net.apply(params, obs)[0]
    assert not np.allclose(logits[index != 0], plain[index != 0], atol=1e-3)


def test_training_through_state_views_stays_on_policy(played):
    """A rollout through ``viewed_by_state`` and PPO's loss on its rows, shuffled, in another
    program: the importance ratio is 1 at the rollout's params, to float rounding (the loss
    sees each state in the rollout's view); the plain network's loss on the same rows is not."""
    env = HackMatrix()
    net = make_network("grid", 28, 32, 2)
    params = moved_params(net, 7)
    apply = symmetry.viewed_by_state(net.apply)
    obs, state = jax.vmap(env.reset, (0, None))(jax.random.split(jax.random.key(3), 16),
                                                env.default_params)  # fmt: skip
    acc = init_episode_acc(16, len(REWARD_COMPONENTS))
    rollout = jax.jit(lambda p: collect_rollout(
        sample_actor(None, apply), lambda q, o: apply(q, o)[1], jax.random.key(4), p, env,
        env.default_params, state, obs, acc, 8,
    )[3])  # fmt: skip
    traj = rollout(params)
    flat = jax.tree.map(lambda x: x.reshape((-1, *x.shape[2:])), traj)
    flat = jax.tree.map(lambda x: x[np.random.default_rng(1).permutation(128)], flat)
    adv = jnp.linspace(-1.0, 1.0, 128)

    @functools.partial(jax.jit, static_argnums=0)
    def deviation(apply_fn, p, batch):
        return ppo_loss(p, apply_fn, batch, adv, adv, 0.2, 0.5, 0.01)[1]["ratio_max_dev"]

    assert float(deviation(apply, params, flat)) < 1e-5
    assert float(deviation(net.apply, params, flat)) > 0.05


def test_hm_train_random_views_trains_the_network_through_its_views(played):
    """``--random-views`` hands the learner the network through state views (the plain
    network stays the run's: its checkpoints and evaluations); refused off HackMatrix."""
    cfg, explicit = config_from_args(build_parser().parse_args(["--random-views"]))
    assert cfg.random_views and "random_views" in explicit
    assert not config_from_args(build_parser().parse_args([]))[0].random_views
    given = []

    def spy(cfg, apply_fn, env, env_params, axis_name=None, **kw):
        given.append(apply_fn)
        return lambda runner, sched: (runner, ({}, {}))

    small = dict(num_envs=4, num_steps=4, total_timesteps=16, num_minibatches=1, time_budget=None,
                 disabled_programs=())  # fmt: skip
    for views in (True, False):
        cfg = dataclasses.replace(TrainConfig(**small), random_views=views, init_params=None)
        trainer = make_train(cfg, HackMatrix(), learner=Learner("spy", spy))
        params = moved_params(trainer.network, 2)
        obs = played[0]
        want = (symmetry.viewed_by_state(trainer.network.apply) if views
                else trainer.network.apply)(params, obs)  # fmt: skip
        np.testing.assert_allclose(given[-1](params, obs)[0], want[0], atol=1e-6)
    with pytest.raises(ValueError, match="--random-views needs HackMatrix"):
        make_train(plain_ppo(num_envs=4, num_steps=4, total_timesteps=16, random_views=True),
                   ProbeSuite(), ProbeParams())  # fmt: skip
