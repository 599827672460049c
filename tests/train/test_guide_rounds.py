"""Rounds of guided runs (``hm-train --guide-rounds R``, ``hackmatrix_train.rounds``): each
round starts from the last one's final network (its teacher too), in its own directory; running
the command again keeps the finished rounds and resumes an unfinished one bit-exactly."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import pytest
from hackmatrix_train import checkpoint as ckpt
from hackmatrix_train import guided, ppo
from hackmatrix_train import search as search_module
from hackmatrix_train.cli import train as hm_train
from hackmatrix_train.config import validate
from hackmatrix_train.rounds import round_config, run_rounds
from hackmatrix_train.run import run
from hackmatrix_train.trainer import make_train
from train.recipes import plain_ppo
from train.test_resume_in_place import CFG, ENV, PARAMS, STEPS, snapshot
from train.train_probes import MASKS as PROBE_MASKS
from train.trees import assert_trees_equal

GUIDED = CFG.replace(guide_kl=1.0, guide_envs=4, final_eval_episodes=0, log_interval=1,
                     save_interval=1)  # fmt: skip


def last_legal_actor(cfg, apply_fn):
    """PPO's actor with a stand-in for the search: all the target's mass on each state's last
    legal action, on the first half of the games (the probe env has no search)."""
    sample = ppo.sample_actor(cfg, apply_fn)

    def act(params, obs, env_state, key):
        action, log_prob, value, _ = sample(params, obs, env_state, key)
        mask = obs.action_mask
        last = jnp.argmax(jnp.where(mask, jnp.arange(mask.shape[-1]), -1), axis=-1)
        weight = (jnp.arange(mask.shape[0]) < mask.shape[0] // 2).astype(jnp.float32)
        return action, log_prob, value, (jax.nn.one_hot(last, mask.shape[-1]), weight)

    return act


def teacher_differs(a, b) -> bool:
    return any(not bool((x == y).all()) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b),
                                                        strict=True))  # fmt: skip


def rounds(cfg, lines=None):
    out = (lambda s: lines.append(s)) if lines is not None else (lambda s: None)
    return run_rounds(cfg, frozenset({"guide_rounds"}), out=out, env=ENV, env_params=PARAMS,
                      actor=last_legal_actor)  # fmt: skip


def start_run(tmp_path_factory, seed: int) -> str:
    """A plain PPO run of 2 updates on the probe env (a round's start and teacher)."""
    ck = tmp_path_factory.mktemp("start")
    return run(CFG.replace(checkpoint_dir=str(ck), total_timesteps=2 * STEPS,
                           final_eval_episodes=0, seed=seed), env=ENV, env_params=PARAMS,
               out=lambda s: None)["run_dir"]  # fmt: skip


@pytest.fixture(scope="module")
def start(tmp_path_factory):
    """The first round's start and teacher."""
    return start_run(tmp_path_factory, CFG.seed)


def teacher_search(apply_fn, search_cfg, params, key, state):
    """A stand-in for the search (the probe env has none) whose targets depend on the
    teacher's params: each legal action's logit is its index times the params' mean."""
    mask = PROBE_MASKS[state.kind]
    scale = sum(leaf.mean() for leaf in jax.tree.leaves(params))
    logits = jnp.where(mask, jnp.arange(mask.shape[-1]) * scale, -jnp.inf)
    return SimpleNamespace(policy_target=jax.nn.softmax(logits, -1))


def test_the_teacher_is_an_argument_of_one_compiled_chunk(start, tmp_path_factory, monkeypatch):
    """Two teachers lower to the same program, its params the chunk's argument (not constants
    in it): round 2 compiles nothing round 1 did not, and a guided run from any start finds its
    program in the persistent cache. The argument reaches the search: the two teachers'
    targets differ."""
    monkeypatch.setattr(search_module, "run_search", teacher_search)
    other = start_run(tmp_path_factory, CFG.seed + 1)
    programs, kls = [], []
    for init in (start, other):
        trainer = make_train(GUIDED.replace(init_params=init), ENV, PARAMS,
                             devices=jax.devices()[:1])  # fmt: skip
        runner = trainer.init()
        args = (runner, jnp.int32(1), trainer.schedule_arrays(), trainer.frozen)
        programs.append(trainer.chunk.lower(*args).as_text())
        kls.append(float(trainer.run_chunk(runner, 1)[1]["train/search_kl"]))
        assert_trees_equal(trainer.frozen, guided.start_params(trainer.cfg, ENV, PARAMS))
    assert programs[0] == programs[1]
    assert kls[0] != kls[1], kls


def test_each_round_starts_from_the_last_and_a_rerun_continues(start, tmp_path):
    cfg = GUIDED.replace(checkpoint_dir=str(tmp_path), total_timesteps=2 * STEPS,
                         init_params=start, guide_rounds=2)  # fmt: skip
    lines = []
    result = rounds(cfg, lines)
    first, second = (Path(r["run_dir"]) for r in result["rounds"])
    assert [r["state"] for r in result["rounds"]] == ["new", "new"]
    assert (first.name, second.name) == ("guided-mlp-8x8-s7-round1", "guided-mlp-8x8-s7-round2")
    assert result["run_dir"] == str(second) and result["update"] == 2
    # each round is a guided run of its own, from the last round's final network
    for run_dir, its_start, k in ((first, start, 1), (second, str(first), 2)):
        meta = json.loads((run_dir / "params.json").read_text())
        assert meta["learner"] == "guided-ppo-start-kl1-4" and meta["update"] == 2
        assert meta["config"]["init_params"] == its_start
        assert meta["config"]["guide_rounds"] == 1
        assert f"round {k} of 2 (--guide-rounds), from {its_start}" in meta["config"]["notes"]
        assert f"params initialised from {its_start}" in lines
    # the second round's teacher (its start) is the first round's final network, not the start
    teacher = guided.start_params(round_config(cfg, 2, str(first)), ENV, PARAMS)
    final_1, _ = ckpt.load_params(first)
    assert_trees_equal(ckpt.flatten_state(teacher), final_1)
    assert teacher_differs(teacher, guided.start_params(cfg, ENV, PARAMS))

    # the same command again: both rounds are kept, nothing is written
    before = snapshot(tmp_path)
    again = rounds(cfg)
    assert [r["state"] for r in again["rounds"]] == ["finished", "finished"]
    assert snapshot(tmp_path) == before

    # an interrupted second round (its last checkpoint at update 1) resumes to the same end
    final_2 = (second / "params.msgpack").read_bytes()
    for name in ("ckpt_00000002.msgpack", "ckpt_00000002.json", "params.msgpack",
                 "params.json"):  # fmt: skip
        (second / name).unlink()
    resumed = rounds(cfg)
    assert [r["state"] for r in resumed["rounds"]] == ["finished", "resumed"]
    assert (second / "params.msgpack").read_bytes() == final_2


def test_rounds_need_a_guided_run_from_a_start_and_no_resume(start, capsys):
    with pytest.raises(ValueError, match="--guide-rounds must be >= 1"):
        validate(plain_ppo(guide_rounds=0))
    for bad in ({}, {"guide_kl": 1.0, "guide_teacher": "online"}):
        with pytest.raises(ValueError, match="needs --guide-kl > 0 and --guide-teacher start"):
            validate(plain_ppo(guide_rounds=2, **bad))
    assert hm_train.main(["--guide-kl", "1", "--init-params", start, "--guide-rounds", "2",
                          "--resume", start, "--no-wandb"]) == 2  # fmt: skip
    assert "--resume continues one round" in capsys.readouterr().err


def test_round_config_names_each_round_after_the_run():
    cfg = GUIDED.replace(init_params="a", guide_rounds=3, run_suffix="x")
    assert round_config(cfg, 2, "b").run_suffix == "x-round2"
    assert round_config(cfg, 2, "b").init_params == "b"
    assert round_config(cfg.replace(run_suffix=None), 3, "c").run_suffix == "round3"
    validate(round_config(cfg, 2, "b"))


def test_later_rounds_pull_with_their_own_kl_weight():
    """``--guide-kl-later``: round 1 keeps ``--guide-kl``, every later round (whose teacher is
    the last round's network) takes the later weight, saved in its own config and learner."""
    cfg = GUIDED.replace(init_params="a", guide_rounds=3, guide_kl_later=3.0)
    first, *later = (round_config(cfg, k, "b") for k in (1, 2, 3))
    assert first.guide_kl == GUIDED.guide_kl and [c.guide_kl for c in later] == [3.0, 3.0]
    assert all(c.guide_kl_later is None for c in (first, *later))  # a round is one run
    assert guided.learner_of(later[0]).name.startswith("guided-ppo-start-kl3-")
    assert guided.learner_of(first).name.startswith("guided-ppo-start-kl1-")
    assert round_config(cfg.replace(guide_kl_later=None), 2, "b").guide_kl == GUIDED.guide_kl
    validate(cfg)
    validate(later[0])
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="--guide-kl-later must be > 0"):
            validate(cfg.replace(guide_kl_later=bad))
    parsed = hm_train.config_from_args(hm_train.build_parser().parse_args(
        ["--guide-kl", "1", "--guide-rounds", "2", "--guide-kl-later", "3"]))[0]  # fmt: skip
    assert parsed.guide_kl_later == 3.0


def test_later_rounds_search_with_their_own_simulations():
    """``--guide-simulations-later N``: round 1's teacher searches with the ``--search-*``
    flags, every later round's with N simulations as a tree per 8 (one tree when 8 does not
    divide N), the rest of the search as it was, saved in the round's own config."""
    cfg = GUIDED.replace(init_params="a", guide_rounds=3, guide_simulations_later=32,
                         search_simulations=16, search_determinizations=2,
                         search_considered=28)  # fmt: skip
    first, *later = (round_config(cfg, k, "b") for k in (1, 2, 3))
    assert first.search == cfg.search
    assert [(c.search.num_simulations, c.search.determinizations) for c in later] == [(32, 4)] * 2
    assert later[0].search == dataclasses.replace(cfg.search, num_simulations=32,
                                                  determinizations=4)  # fmt: skip
    assert all(c.guide_simulations_later is None for c in (first, *later))  # a round is one run
    odd = round_config(cfg.replace(guide_simulations_later=12), 2, "b").search
    assert (odd.num_simulations, odd.determinizations) == (12, 1)
    assert round_config(cfg.replace(guide_simulations_later=None), 2, "b").search == cfg.search
    validate(later[0])
    for bad in (0, -8):
        with pytest.raises(ValueError, match="--guide-simulations-later must be an int >= 1"):
            validate(cfg.replace(guide_simulations_later=bad))
    parsed = hm_train.config_from_args(hm_train.build_parser().parse_args(
        ["--guide-kl", "1", "--guide-rounds", "2", "--guide-simulations-later", "32"]))[0]  # fmt: skip
    assert parsed.guide_simulations_later == 32


def test_the_later_rounds_teacher_searches_as_asked(start, tmp_path, monkeypatch):
    """Two rounds end to end with a recording stand-in for the search: round 1's teacher
    plans with the run's search, round 2's with ``--guide-simulations-later``'s, and round 2's
    saved config says so (it resumes and loads with the search it trained with)."""
    seen = []

    def recording_search(apply_fn, search_cfg, params, key, state):
        seen.append((search_cfg.num_simulations, search_cfg.determinizations))
        return teacher_search(apply_fn, search_cfg, params, key, state)

    monkeypatch.setattr(search_module, "run_search", recording_search)
    cfg = GUIDED.replace(checkpoint_dir=str(tmp_path), total_timesteps=2 * STEPS,
                         init_params=start, guide_rounds=2, guide_simulations_later=16,
                         search_simulations=8, search_determinizations=1)  # fmt: skip
    result = run_rounds(cfg, frozenset({"guide_rounds"}), out=lambda s: None, env=ENV,
                        env_params=PARAMS)  # fmt: skip
    assert sorted(set(seen)) == [(8, 1), (16, 2)] and seen[0] == (8, 1), seen
    second = Path(result["rounds"][1]["run_dir"])
    saved = json.loads((second / "params.json").read_text())["config"]["search"]
    assert (saved["num_simulations"], saved["determinizations"]) == (16, 2)
