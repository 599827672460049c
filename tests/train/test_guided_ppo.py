"""PPO guided by the search (``hackmatrix_train.guided``, ``hm-train --guide-kl``): PPO's
update with its actor and loss injected. The KL term's value and gradient on a hand-built batch,
the config's choice of learner and its refusals, and a tiny run in which the actor's ``extra``
reaches PPO's loss and pulls the network toward the targets."""

from __future__ import annotations

import functools
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_train import guided
from hackmatrix_train.cli import train as hm_train
from hackmatrix_train.config import validate
from hackmatrix_train.ppo import LEARNER as PPO
from hackmatrix_train.run import default_run_name
from hackmatrix_train.search import policy_mask
from hackmatrix_train.trainer import make_train
from repo_files import ROOT
from train.recipes import plain_ppo
from train.train_probes import MASKS as PROBE_MASKS
from train.train_probes import ProbeParams, ProbeSuite


def _batch():
    """Four rows: logits, a target (a distribution over each row's legal actions), a mask."""
    mask = np.zeros((4, 28), bool)
    mask[0, [0, 1, 2, 4]] = True
    mask[1, [1, 3, 5, 9, 20]] = True
    mask[2, :] = True
    mask[3, [0, 6]] = True
    rng = np.random.default_rng(0)
    logits = jnp.asarray(rng.normal(size=(4, 28)), jnp.float32)
    raw = np.where(mask, rng.gamma(0.5, size=(4, 28)), 0.0)
    target = jnp.asarray(raw / raw.sum(-1, keepdims=True), jnp.float32)
    return logits, target, jnp.asarray(mask)


def _kl_rows(logits, target, mask):
    p = np.asarray(jax.nn.softmax(jnp.where(mask, logits, -1e9), -1), np.float64)
    t = np.asarray(target, np.float64)
    m = np.asarray(mask) & (t > 0)
    return np.array([np.sum(t[i, m[i]] * np.log(t[i, m[i]] / p[i, m[i]])) for i in range(len(t))])


def test_search_kl_is_the_weighted_mean_of_the_rows_kl():
    logits, target, mask = _batch()
    weight = jnp.asarray([1.0, 0.0, 1.0, 1.0])
    kl, override = guided.search_kl(logits, mask, target, weight)
    rows = _kl_rows(logits, target, mask)
    np.testing.assert_allclose(float(kl), rows[[0, 2, 3]].mean(), rtol=1e-5)
    differs = np.argmax(np.asarray(target), -1) != np.argmax(
        np.where(np.asarray(mask), np.asarray(logits), -np.inf), -1
    )
    assert float(override) == pytest.approx(differs[[0, 2, 3]].mean())
    # no searched row: nothing to learn, and no division by zero
    none = guided.search_kl(logits, mask, target, jnp.zeros(4))
    assert float(none[0]) == 0.0 and float(none[1]) == 0.0


def test_search_kl_gradient_pulls_the_searched_rows_toward_the_target():
    logits, target, mask = _batch()
    weight = jnp.asarray([1.0, 0.0, 1.0, 1.0])
    grad = np.asarray(jax.grad(lambda z: guided.search_kl(z, mask, target, weight)[0])(logits))
    p = np.asarray(jax.nn.softmax(jnp.where(mask, logits, -1e9), -1))
    m = np.asarray(mask)
    expected = (p - np.asarray(target)) * np.asarray(weight)[:, None] / 3.0
    np.testing.assert_allclose(grad[m], expected[m], atol=1e-6)
    assert (grad[1] == 0).all() and (grad[~m] == 0).all()  # unsearched rows, masked actions
    after = logits - 1.0 * grad
    before_rows, after_rows = _kl_rows(logits, target, mask), _kl_rows(after, target, mask)
    assert (after_rows[[0, 2, 3]] < before_rows[[0, 2, 3]]).all()
    np.testing.assert_allclose(after_rows[1], before_rows[1])


def test_reverse_kl_is_the_weighted_mean_of_the_rows_kl_a_zero_target_at_the_floor():
    """KL(policy || target) per row, averaged over the searched rows; where the target has no
    mass on a legal action its log is ``LOG_FLOOR``, so policy mass there costs, never pays."""
    logits, target, mask = _batch()
    target = target.at[0].set(jnp.zeros(28).at[1].set(1.0))  # row 0: one of 4 legal actions
    weight = jnp.asarray([1.0, 0.0, 1.0, 1.0])
    p = np.asarray(jax.nn.softmax(jnp.where(mask, logits, -1e9), -1), np.float64)
    m, t = np.asarray(mask), np.asarray(target, np.float64)
    log_t = np.where(t > 0, np.log(np.where(t > 0, t, 1.0)), guided.LOG_FLOOR)
    rows = np.array([np.sum(p[i, m[i]] * (np.log(p[i, m[i]]) - log_t[i, m[i]])) for i in range(4)])
    assert (rows >= 0).all()
    got = float(guided.reverse_kl(logits, mask, target, weight))
    np.testing.assert_allclose(got, rows[[0, 2, 3]].mean(), rtol=1e-5)
    # row 0's mass off the target costs -LOG_FLOOR per unit, less the policy's entropy
    assert rows[0] >= -guided.LOG_FLOOR * (1 - p[0, 1]) - np.log(4)


def test_a_bad_learner_setting_is_refused():
    with pytest.raises(ValueError, match="--guide-kl"):
        guided.learner(-1.0, 8)
    with pytest.raises(ValueError, match="--guide-envs"):
        guided.learner(1.0, 0)
    with pytest.raises(ValueError, match="--guide-teacher"):
        guided.learner(1.0, 8, "anchor")
    with pytest.raises(ValueError, match="--guide-divergence"):
        guided.learner(1.0, 8, divergence="backward")
    with pytest.raises(ValueError, match="--init-params"):  # the start is the teacher
        guided.start_params(plain_ppo())


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"guide_kl": -0.5}, "--guide-kl must be >= 0"),
        ({"guide_kl": float("nan")}, "--guide-kl must be >= 0"),
        ({"guide_kl": 1.0, "guide_envs": 0, "init_params": "p"}, "--guide-envs must be >= 1"),
        ({"guide_kl": 1.0, "guide_teacher": "anchor", "init_params": "p"}, "--guide-teacher"),
        ({"guide_kl": 1.0}, "give --init-params"),  # the frozen start needs a start
        ({"guide_bonus": -5.0}, "--guide-bonus must be >= 0"),
        ({"guide_bonus": float("inf")}, "--guide-bonus must be >= 0"),
        ({"guide_kl": 1.0, "guide_divergence": "js", "init_params": "p"}, "--guide-divergence"),
    ],
)
def test_the_config_refuses_a_bad_guide_setting(fields, message):
    with pytest.raises(ValueError, match=message):
        validate(plain_ppo(**fields))


def test_hm_train_refuses_a_guided_run_without_its_start(capsys):
    assert hm_train.main(["--guide-kl", "1", "--no-wandb", "--total-timesteps", "1000"]) == 2
    assert "give --init-params" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        hm_train.main(["--guide-kl", "1", "--guide-teacher", "anchor"])
    assert exit_.value.code == 2


def test_the_config_chooses_the_learner_and_names_the_run():
    plain = plain_ppo()
    assert guided.learner_of(plain) is PPO
    assert default_run_name(plain).startswith("ppo-")
    online = plain.replace(guide_kl=0.5, guide_envs=8, guide_teacher="online")
    validate(online)  # the online teacher needs no start
    assert guided.learner_of(online).name == "guided-ppo-online-kl0.5-8"
    assert default_run_name(online).startswith("guided-")
    with pytest.raises(ValueError, match="--guide-kl chooses the guided learner"):
        make_train(online, learner=PPO, devices=jax.devices()[:1])
    bonus = online.replace(guide_bonus=5.0)
    assert guided.learner_of(bonus).name == "guided-ppo-online-kl0.5-8-bonus5"
    reverse = bonus.replace(guide_divergence="reverse")
    assert guided.learner_of(reverse).name == "guided-ppo-online-kl0.5-8-bonus5-reverse"


def test_the_tree_bonus_reaches_the_teachers_search(monkeypatch):
    """``--guide-bonus``: the teacher's tree rewards each program acquired with the bonus, in
    the run's counting (UNDO aside or not); without it the tree's reward is the canonical one.
    The rest of the search is the run's ``--search-*``; unsearched games get no target."""
    from hackmatrix_env import HackMatrix

    env = HackMatrix()
    keys = jax.random.split(jax.random.key(0), 2)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, env.default_params)
    seen = []

    def recording_search(apply_fn, search_cfg, params, key, part):
        seen.append(search_cfg)
        return _last_legal_search(apply_fn, search_cfg, params, key, part)

    def sample_actor(cfg, apply_fn):  # PPO's move: not what this test is about
        return lambda params, obs, state, key: (jnp.zeros(2, jnp.int32),) + (jnp.zeros(2),) * 3

    monkeypatch.setattr(guided.ppo, "sample_actor", sample_actor)
    cfg = plain_ppo(disabled_programs=("undo",), search_simulations=4)
    for bonus in (0.0, 5.0):
        act = guided.guided_actor(cfg, None, 1, search=recording_search, tree_bonus=bonus,
                                  teacher_params={})  # fmt: skip
        _, _, _, (target, weight) = act({}, obs, state, jax.random.key(1))
        assert weight.tolist() == [1.0, 0.0] and float(target[1].sum()) == 0.0
        assert float(target[0].sum()) == pytest.approx(1.0)
    assert [c.program_bonus for c in seen] == [0.0, 5.0]
    assert all(c.program_bonus_skips_undo == bool(cfg.program_terms_skip_undo) for c in seen)
    assert all(c.num_simulations == 4 and c.disabled == (14,) for c in seen)


def _last_legal_search(apply_fn, search_cfg, params, key, state):
    """A stand-in for the search: all its mass on each state's last legal action."""
    return _last_legal_target(policy_mask(state, search_cfg.disabled))


def _last_legal_target(mask):
    """All of each row's mass on its last legal action (the stand-ins' ``policy_target``)."""
    last = jnp.argmax(jnp.where(mask, jnp.arange(mask.shape[-1]), -1), axis=-1)
    return SimpleNamespace(policy_target=jax.nn.one_hot(last, mask.shape[-1]))


def _last_legal_probe_search(apply_fn, search_cfg, params, key, state):
    """The same stand-in on the probe suite's states (their mask is their kind's)."""
    return _last_legal_target(PROBE_MASKS[state.kind])


def test_the_actors_targets_reach_the_loss_and_pull_the_policy():
    """With the search replaced by a fixed target (the last legal action), PPO's update with
    the KL term lowers the KL to it, update after update, far below where PPO alone ends.
    Half the games are searched: the rest carry weight 0.

    On the probe suite (it compiles in seconds; the learner does not depend on the env): its
    masked-best probe pays 1 for action 1 and 0 for action 2, the last legal one, so PPO
    alone moves away from the target there while the KL term pulls toward it."""
    envs, steps = 8, 8
    cfg = plain_ppo(
        num_envs=envs, num_steps=steps, total_timesteps=envs * steps * 40, network="mlp",
        hidden_dim=32, num_layers=1, lr=3e-3, update_epochs=4, num_minibatches=2,
        no_wandb=True, final_eval_episodes=0, seed=0,
    )  # fmt: skip
    actor = functools.partial(guided.guided_actor, searched_envs=envs // 2,
                              search=_last_legal_probe_search)  # fmt: skip

    def kl_over(kl_coef, divergence="forward"):
        """Each divergence's logged KL, averaged over chunks of 1, 15 and 15 updates."""
        chosen = guided.learner(kl_coef, envs // 2, "online", divergence=divergence)
        trainer = make_train(cfg, ProbeSuite(), ProbeParams(), learner=chosen, actor=actor,
                             devices=jax.devices()[:1])  # fmt: skip
        runner, seen = trainer.init(), {"train/search_kl": [], "train/reverse_kl": []}
        for n in (1, 15, 15):
            runner, metrics = trainer.run_chunk(runner, n)
            for name, values in seen.items():
                values.append(float(metrics[name]))
        return seen

    # PPO alone: with kl_coef 0 the divergence changes nothing trained, and both KLs are logged,
    # so one run is the free baseline of both
    free = kl_over(0.0)
    pulled = kl_over(10.0)["train/search_kl"]
    assert pulled[2] < 0.5 * pulled[0], pulled
    assert pulled[2] < 0.5 * free["train/search_kl"][2], (pulled, free)
    # --guide-divergence reverse: its own KL, logged as train/reverse_kl, falls the same way
    reverse = kl_over(10.0, "reverse")["train/reverse_kl"]
    assert reverse[2] < 0.5 * reverse[0], reverse
    assert reverse[2] < 0.5 * free["train/reverse_kl"][2], (reverse, free)


def test_the_guided_recipe_is_the_recorded_runs_command():
    """``--recipe guided`` is the command the runs of experiments/long_game.md spelled out
    flag by flag, and it names a start that exists."""
    flags = [
        "--guide-kl",
        "1",
        "--guide-envs",
        "32",
        "--guide-teacher",
        "start",
        "--init-params",
        "policies/default-cpu-42m-s1-vf0125",
        "--lr",
        "3e-4",
        "--ent-coef",
        "0.002",
        "--ent-coef-end",
        "0.002",
        "--explore-floor",
        "0.001",
        "--explore-floor-end",
        "0.001",
        "--search-simulations",
        "16",
        "--search-determinizations",
        "2",
        "--search-considered",
        "28",
        "--total-timesteps",
        "5881856",
    ]
    parse = hm_train.build_parser().parse_args
    by_recipe, _ = hm_train.config_from_args(parse(["--recipe", "guided", "--seed", "3"]))
    by_flags, _ = hm_train.config_from_args(parse([*flags, "--seed", "3"]))
    assert by_recipe == by_flags
    assert guided.learner_of(by_recipe).name == "guided-ppo-start-kl1-32"
    validate(by_recipe, 2)
    assert (ROOT / by_recipe.init_params / "params.msgpack").exists()
