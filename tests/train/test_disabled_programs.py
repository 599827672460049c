"""``--disabled-programs``: programs taken out of the agent's mask, the game left as it is.

``DisabledActionsWrapper`` narrows every observation's mask (``restrict_mask``: the disabled
actions go, unless nothing else is legal) and passes the game through untouched. The trainer
builds its env with it (``trainer.make_env``), so training, the end-of-run evaluation, ``hm-eval``
and ``hm-watch``'s ``Stepper`` all choose from the same narrowed mask.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from builders import make_state
from hackmatrix_env import EnvParams, HackMatrix
from hackmatrix_env.adapters import DisabledActionsWrapper, allowed_actions, restrict_mask
from hackmatrix_env.constants import NUM_ACTIONS, Action
from hackmatrix_env.observation import observe
from hackmatrix_train.config import TrainConfig, describe_plan, disabled_actions, validate
from train.recipes import plain_ppo
from undo_testlib import UNDO_ACTION, OwnsUndo

PLAIN = HackMatrix()
RIGHT = int(Action.RIGHT)


@pytest.mark.parametrize("seed", range(3))
def test_restrict_mask_drops_the_disabled_actions_unless_nothing_else_is_legal(seed):
    rng = np.random.default_rng(seed)
    masks = rng.random((500, NUM_ACTIONS)) < rng.uniform(0.02, 0.5, (500, 1))
    allowed = rng.random(NUM_ACTIONS) < 0.7
    got = np.asarray(restrict_mask(jnp.asarray(masks), jnp.asarray(allowed)))
    for mask, row in zip(masks, got, strict=True):
        narrowed = mask & allowed
        np.testing.assert_array_equal(row, narrowed if narrowed.any() else mask)
    assert (got <= masks).all()  # never adds an action
    assert (got.any(axis=1) == masks.any(axis=1)).all()  # never empties a playable row
    # the draw covers both cases: rows narrowed and rows kept whole as the fallback
    fallback = ~(masks & allowed).any(axis=1) & masks.any(axis=1)
    assert fallback.any() and (~fallback & (got != masks).any(axis=1)).any()


@pytest.mark.parametrize("bad", [-1, NUM_ACTIONS, True, 3.0, "undo"])
def test_disabled_actions_must_be_action_indices(bad):
    with pytest.raises(ValueError, match="action indices"):
        allowed_actions([bad])


def test_the_wrapper_narrows_the_mask_and_plays_the_game_unchanged():
    """Step for step against the plain env from a state where UNDO becomes legal."""
    env = DisabledActionsWrapper(PLAIN, [UNDO_ACTION])
    state = make_state((5, 1), owned=["undo"], credits=5, energy=5, stage=1)
    params = PLAIN.default_params
    keys = jax.random.split(jax.random.key(1), 3)
    undo_was_legal = False
    for key in keys:
        plain = PLAIN.step(key, state, jnp.int32(RIGHT), params)
        wrapped = env.step(key, state, jnp.int32(RIGHT), params)
        (p_obs, p_state, *p_rest), (w_obs, w_state, *w_rest) = plain, wrapped
        for a, b in zip(
            jax.tree.leaves((p_state, p_rest[:3])),
            jax.tree.leaves((w_state, w_rest[:3])),
            strict=True,
        ):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        for name in ("player", "programs", "grid"):
            np.testing.assert_array_equal(getattr(p_obs, name), getattr(w_obs, name))
        allowed = jnp.asarray(allowed_actions([UNDO_ACTION]))
        np.testing.assert_array_equal(w_obs.action_mask, restrict_mask(p_obs.action_mask, allowed))
        final = w_rest[3]["final_observation"].action_mask
        np.testing.assert_array_equal(
            final, restrict_mask(p_rest[3]["final_observation"].action_mask, allowed)
        )
        undo_was_legal |= bool(p_obs.action_mask[UNDO_ACTION])
        assert not bool(w_obs.action_mask[UNDO_ACTION])
        state = p_state
    assert undo_was_legal  # the plain game offered UNDO, the wrapper took it away
    obs, _ = env.reset(jax.random.key(0), params)
    assert not bool(obs.action_mask[UNDO_ACTION]) and bool(obs.action_mask.any())


def test_uniform_play_without_undo_runs_it_only_when_nothing_else_is_legal():
    """Uniform masked play in games that own UNDO: the plain mask offers it on many steps, the
    narrowed one only where it is the single legal action."""
    num_envs, steps = 16, 96
    env = DisabledActionsWrapper(OwnsUndo(), [UNDO_ACTION])
    params = EnvParams(max_steps_in_episode=40)
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    @jax.jit
    def run(key):
        k0, k1 = jax.random.split(key)
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(k0, num_envs), params)

        def body(carry, key):
            obs, state = carry
            k_act, k_env = jax.random.split(key)
            raw = jax.vmap(observe)(state).action_mask  # the game's own mask of this state
            logits = jnp.where(obs.action_mask, 0.0, -jnp.inf)
            action = jax.random.categorical(k_act, logits).astype(jnp.int32)
            obs2, state2, _, _, _, info = step(
                jax.random.split(k_env, num_envs), state, action, params
            )
            out = {
                "raw": raw,
                "mask": obs.action_mask,
                "action": action,
                "invalid": info["invalid_action"],
            }
            return (obs2, state2), out

        return jax.lax.scan(body, (obs, state), jax.random.split(k1, steps))[1]

    o = jax.device_get(run(jax.random.key(3)))
    raw_undo = o["raw"][..., UNDO_ACTION]
    only_undo = raw_undo & (o["raw"].sum(-1) == 1)
    assert raw_undo.sum() > 200  # the game offered UNDO on many steps
    np.testing.assert_array_equal(
        o["mask"], np.asarray(restrict_mask(o["raw"], allowed_actions([UNDO_ACTION])))
    )
    assert not (o["action"] == UNDO_ACTION)[~only_undo].any()
    assert not o["invalid"].any()


def _biased_to_undo(params, obs):
    logits = jnp.zeros(obs.action_mask.shape, jnp.float32).at[..., UNDO_ACTION].set(10.0)
    return logits, jnp.zeros(obs.action_mask.shape[:-1])


def test_the_watch_stepper_chooses_from_the_narrowed_mask():
    from hackmatrix_train.episodes import Stepper

    obs = jax.tree.map(lambda x: jnp.stack([x, x]), observe(make_state((2, 2), owned=["undo"])))
    mask = np.zeros((2, NUM_ACTIONS), bool)
    mask[0, [RIGHT, UNDO_ACTION]] = True  # UNDO and a move
    mask[1, UNDO_ACTION] = True  # UNDO alone
    obs = obs._replace(action_mask=jnp.asarray(mask))
    key = jax.random.key(0)
    plain = Stepper(PLAIN.default_params, _biased_to_undo, greedy=True)
    without = Stepper(PLAIN.default_params, _biased_to_undo, greedy=True, disabled=(UNDO_ACTION,))
    assert plain._decide(None, obs, key)[0].tolist() == [UNDO_ACTION, UNDO_ACTION]
    action, probs, _ = without._decide(None, obs, key)
    assert action.tolist() == [RIGHT, UNDO_ACTION]
    assert float(probs[0, UNDO_ACTION]) == 0.0


def test_config_names_programs_and_refuses_unknown_ones():
    from hackmatrix_train.cli.train import build_parser, config_from_args

    args = build_parser().parse_args(["--disabled-programs", "undo", "warp"])
    cfg, explicit = config_from_args(args)
    assert cfg.disabled_programs == ("undo", "warp") and "disabled_programs" in explicit
    assert disabled_actions(cfg) == (int(Action.WARP), UNDO_ACTION)
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg  # the checkpoint's JSON round trip
    assert plain_ppo().disabled_programs == () and disabled_actions(plain_ppo()) == ()
    assert "disabled programs (out of the agent's mask, the game unchanged): undo, warp" in (
        describe_plan(cfg)
    )
    assert "disabled" not in describe_plan(plain_ppo())
    with pytest.raises(ValueError, match="unknown program names \\['undoo'\\]"):
        validate(cfg.replace(disabled_programs=("undoo",)))


def test_the_trainer_builds_its_env_without_the_disabled_programs():
    from hackmatrix_train.trainer import make_env, make_train

    cfg = plain_ppo(num_envs=4, num_steps=4, total_timesteps=16, disabled_programs=("undo",))
    env = make_env(cfg)
    assert isinstance(env, DisabledActionsWrapper) and env.disabled == (UNDO_ACTION,)
    assert isinstance(make_env(cfg.replace(disabled_programs=())), HackMatrix)
    assert isinstance(make_train(cfg).env, DisabledActionsWrapper)
    with pytest.raises(ValueError, match="--disabled-programs"):
        make_train(cfg, env=PLAIN)


@pytest.mark.slow  # compiles the narrowed env's training and evaluation programs
def test_hm_train_and_hm_eval_report_the_disabled_programs(tmp_path):
    import json

    from hackmatrix_train.cli.train import build_parser, config_from_args
    from hackmatrix_train.policy import evaluate_checkpoint
    from hackmatrix_train.run import run

    argv = (
        "--num-envs 8 --num-steps 16 --total-timesteps 128 --log-interval 1 --hidden-dim 16 "
        "--num-layers 1 --num-minibatches 2 --update-epochs 1 --no-wandb --network mlp "
        f"--max-steps-in-episode 30 --checkpoint-dir {tmp_path} --final-eval-episodes 4 "
        "--disabled-programs undo --run-name noundo"
    ).split()
    cfg, explicit = config_from_args(build_parser().parse_args(argv))
    result = run(cfg, explicit, out=lambda _: None)
    final = json.loads((tmp_path / "noundo" / "eval_final.json").read_text())
    assert final["disabled_programs"] == ["undo"] and final["program_use"]["undo"] == 0
    again = evaluate_checkpoint(tmp_path / "noundo", episodes=4)
    assert again["disabled_programs"] == ["undo"]
    assert again["return_mean"] == pytest.approx(final["return_mean"])
    assert (
        evaluate_checkpoint(tmp_path / "noundo", episodes=4, random=True)["disabled_programs"] == []
    )
    assert result["final_eval"] == final
