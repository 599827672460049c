"""The search trainer (``experiments/search_trainer.py``), a learner that plugs into the
trainer from outside its package: its targets flow into the network.

A tiny run from a fresh network: the Gumbel search (the game as model) acts for 20 updates of
16 games x 8 moves, and the network learns its improved policy and lambda-returns. On a fixed
set of 32 short stage-1 episodes the greedy network must then score more than it did at its
initialisation, and lean toward the moves the search prefers. The run also resumes bit-exactly,
with the trainer's own checkpoint machinery.
"""

from __future__ import annotations

import csv
import importlib.util
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_env import EnvParams
from hackmatrix_env.constants import NUM_ACTIONS
from hackmatrix_train import checkpoint as ckpt
from hackmatrix_train.evaluate import evaluate_params
from hackmatrix_train.run import run
from hackmatrix_train.trainer import make_train
from repo_files import ROOT
from train.recipes import plain_ppo

_spec = importlib.util.spec_from_file_location(
    "search_trainer", ROOT / "experiments" / "search_trainer.py"
)
search_trainer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(search_trainer)
LEARNER = search_trainer.learner()

UPDATES, ENVS, STEPS, MAX_STEPS = 20, 16, 8, 40


def _cfg(tmp_path, **fields):
    base = dict(
        num_envs=ENVS, num_steps=STEPS, total_timesteps=ENVS * STEPS * UPDATES,
        network="mlp", hidden_dim=32, num_layers=1, search_simulations=8, lr=3e-3,
        update_epochs=4, num_minibatches=2, no_wandb=True, checkpoint_dir=str(tmp_path),
        final_eval_episodes=0, max_steps_in_episode=MAX_STEPS, disabled_programs=("undo",),
        log_interval=UPDATES // 2, save_interval=UPDATES // 2, seed=0, run_name="search",
    )  # fmt: skip
    return plain_ppo(**{**base, **fields})


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("search_train")
    cfg = _cfg(tmp)
    run(cfg, out=lambda *_: None, learner=LEARNER)
    return cfg, tmp / "search"


def _greedy_summary(cfg, params):
    env_params = EnvParams(max_steps_in_episode=MAX_STEPS, start_stage=1)
    trainer = make_train(cfg, learner=LEARNER)
    return evaluate_params(
        trainer.env, env_params, trainer.network.apply, params, 32, seed=11, greedy=True
    )


@pytest.mark.slow
def test_search_training_improves_the_greedy_policy(trained):
    cfg, run_dir = trained
    trainer = make_train(cfg, learner=LEARNER)
    init = jax.device_get(trainer.init().params)
    flat, _ = ckpt.load_params(run_dir)
    final = ckpt.unflatten_state(flat, init, source=str(run_dir))
    before, after = _greedy_summary(cfg, init), _greedy_summary(cfg, final)
    assert after["return_mean"] > before["return_mean"] + 0.5, (before, after)


@pytest.mark.slow
def test_search_training_resumes_bit_exactly(trained):
    """Rewound to its middle checkpoint and resumed, the run ends on the same parameters."""
    cfg, run_dir = trained
    straight = (run_dir / "params.msgpack").read_bytes()
    resumed = cfg.replace(resume=str(run_dir), rewind=UPDATES // 2)
    with pytest.raises(ValueError, match="trained by the search learner"):  # not as PPO
        run(resumed, explicit=frozenset({"resume", "rewind"}), out=lambda *_: None)
    with pytest.raises(ValueError, match="not search-raw"):  # nor with another target
        run(resumed, explicit=frozenset({"resume", "rewind"}), out=lambda *_: None,
            learner=search_trainer.learner("raw"))  # fmt: skip
    run(resumed, explicit=frozenset({"resume", "rewind"}), out=lambda *_: None, learner=LEARNER)
    assert (run_dir / "params.msgpack").read_bytes() == straight
    kept = list(run_dir.glob("rewound_from_*/params.msgpack"))
    assert len(kept) == 1 and kept[0].read_bytes() == straight  # the later files were kept


def _target_entropy(metrics) -> float:
    """Cross-entropy to the policy target minus the KL from it: the target's own entropy."""
    return float(metrics["train/policy_ce"]) - float(metrics["train/target_kl"])


@pytest.mark.slow
def test_the_improved_policy_target_keeps_its_entropy(trained):
    _, run_dir = trained
    with open(run_dir / "progress.csv") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(_target_entropy(row) > 0.05 for row in rows), rows


def _search_output(action, policy_target):
    """A search's output as the actor reads it: the move, the prior's argmax (the move + 1:
    every move overrides it), the root value and the policy target."""
    return SimpleNamespace(
        action=action, prior_action=action + 1, root_value=jnp.zeros(action.shape),
        policy_target=policy_target,
    )  # fmt: skip


def test_the_action_target_is_the_played_move(tmp_path):
    """``--target action``: the actor hands the loss the one-hot of the move the search played
    where the default target is the search's improved policy; against the one-hot the
    cross-entropy equals the KL from it (a one-hot has no entropy). A stand-in search (the
    actor's ``search`` argument) plays fixed moves: the real search's targets are
    ``test_search_options.py``'s, and the fixture's run trains on them."""
    n = 8
    k = jax.random.split(jax.random.key(0), 3)
    improved = jax.nn.softmax(3 * jax.random.normal(k[0], (n, NUM_ACTIONS)))
    played = jax.random.randint(k[1], (n,), 0, NUM_ACTIONS)

    def stand_in(apply_fn, search_cfg, params, key, state):
        return _search_output(played, improved)

    cfg = _cfg(tmp_path)
    targets = {}
    for target in ("action", "improved"):
        act = search_trainer.search_actor(cfg, None, search=stand_in, target=target)
        action, _, _, (targets[target], overridden) = act(None, None, None, k[2])
        np.testing.assert_array_equal(np.asarray(action), np.asarray(played))
        np.testing.assert_array_equal(np.asarray(overridden), np.ones(n, np.float32))
    np.testing.assert_array_equal(
        np.asarray(targets["action"]), np.asarray(jax.nn.one_hot(played, NUM_ACTIONS))
    )
    np.testing.assert_array_equal(np.asarray(targets["improved"]), np.asarray(improved))

    class Obs:
        action_mask = jnp.ones((n, NUM_ACTIONS), bool)

    logits, value = jax.random.normal(k[2], (n, NUM_ACTIONS)), jnp.zeros(n)
    _, aux = search_trainer.search_loss(
        None, lambda p, o: (logits, value), Obs(), targets["action"], value, 1.0
    )
    assert float(aux["target_kl"]) > 0.1
    np.testing.assert_allclose(float(aux["policy_ce"]), float(aux["target_kl"]), rtol=1e-6)


def test_a_bad_search_target_is_refused(tmp_path):
    with pytest.raises(ValueError, match="--target"):
        search_trainer.learner("visits")


def test_the_tree_rewards_carry_the_runs_program_bonus(tmp_path):
    """The value targets carry the bonus, so the tree's rewards must too (same units)."""
    search_config = search_trainer.search_config
    assert search_config(_cfg(tmp_path, program_bonus=5.0)).program_bonus == 5.0
    assert search_config(_cfg(tmp_path, program_bonus=0.0)).program_bonus == 0.0


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (dict(program_bonus=5.0, program_bonus_end=0.0), "--program-bonus-end"),
        (dict(program_potential=1.0), "--program-potential"),
    ],
)
def test_shaping_the_tree_cannot_follow_is_refused(tmp_path, fields, message):
    with pytest.raises(ValueError, match=message):
        make_train(_cfg(tmp_path, **fields), learner=LEARNER)


@pytest.mark.slow
def test_a_raw_target_at_a_tiny_scale_is_the_networks_own_policy(tmp_path):
    """``--target raw``: the improved policy with Q in the value's units; at a value
    scale of 1e-6 the Q differences of one update's states move it nowhere: the KL from the
    target to the (unchanged: lr 1e-9) network is ~0. (The default target's KL is not: the
    search's own tests compare the two targets; this one checks the trainer hands the search
    its scale and the raw form.)"""
    cfg = _cfg(
        tmp_path, search_target_value_scale=1e-6, total_timesteps=ENVS * STEPS, update_epochs=1,
        lr=1e-9,
    )  # fmt: skip
    search_cfg = search_trainer.search_config(cfg, "raw")
    assert (search_cfg.target_q, search_cfg.target_value_scale) == ("raw", 1e-6)
    trainer = make_train(cfg, learner=search_trainer.learner("raw"))
    _, metrics = trainer.run_chunk(trainer.init(), 1)
    metrics = jax.device_get(metrics)
    assert float(metrics["train/target_kl"]) < 1e-5, metrics
    assert float(metrics["train/override_frac"]) > 0  # the search did play: it overruled moves


def test_the_overrides_target_learns_only_where_the_search_overruled():
    """``--target overrides``: the cross-entropy is the mean over the rows the weight
    picks (the moves where the search overruled the network), the value loss over all rows."""

    search_loss = search_trainer.search_loss

    k = jax.random.split(jax.random.key(0), 4)
    n = 32
    logits = jax.random.normal(k[0], (n, NUM_ACTIONS))
    value = jax.random.normal(k[1], (n,))
    target = jax.nn.softmax(3 * jax.random.normal(k[2], (n, NUM_ACTIONS)))
    returns = jax.random.normal(k[3], (n,))
    picked = np.arange(n) % 3 == 0

    class Obs:
        def __init__(self, rows):
            self.action_mask = jnp.ones((rows, NUM_ACTIONS), bool)

    def net(rows):
        return lambda p, o: (logits[rows], value[rows])

    everything = np.ones(n, bool)
    _, sub = search_loss(None, net(picked), Obs(picked.sum()), target[picked], returns[picked], 1.0)
    _, all_rows = search_loss(None, net(everything), Obs(n), target, returns, 1.0)
    _, weighted = search_loss(
        None, net(everything), Obs(n), target, returns, 1.0, jnp.asarray(picked, jnp.float32)
    )
    np.testing.assert_allclose(weighted["policy_ce"], sub["policy_ce"], rtol=1e-5)
    np.testing.assert_allclose(weighted["target_kl"], sub["target_kl"], rtol=1e-5)
    np.testing.assert_allclose(weighted["vf_loss"], all_rows["vf_loss"], rtol=1e-6)
    assert abs(float(weighted["policy_ce"]) - float(all_rows["policy_ce"])) > 1e-3


def test_the_script_leaves_jax_unstarted_until_hm_train_sets_the_devices():
    """Run as a script, the module is imported before ``hm-train`` sets the CPU devices, which
    must come before JAX starts: importing it starts nothing (gymnax would: it builds arrays)."""
    import subprocess
    import sys

    code = (
        "import runpy, sys; from jax._src import xla_bridge as xb; "
        f"runpy.run_path({str(ROOT / 'experiments' / 'search_trainer.py')!r}); "
        "sys.exit(1 if xb._backends else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
