"""The honest search with the player's cryptog belief (``SearchConfig.track_cryptogs``).

Differential: hm-watch's stepper (``episodes.Stepper``, which follows the belief from move to
move itself) plays exactly the episodes hm-eval's search evaluation (``make_search_evaluate``,
which carries it as the actor's memory) scores, on games from stage 6 where cryptogs go
unseen; and the belief is used: the same search without it plays other moves.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_env import EnvParams, HackMatrix
from hackmatrix_env.hidden import invisible_cryptogs
from hackmatrix_train import episodes as E
from hackmatrix_train.policy import load_policy, search_config
from hackmatrix_train.search_evaluate import make_search_evaluate
from train.tiny_policy import write_tiny_policy

SEED, EPISODES, MAX_STEPS, SIMS, STAGE = 5, 4, 30, 4, 6


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    path = write_tiny_policy(tmp_path_factory.mktemp("policy") / "run", MAX_STEPS)
    policy = load_policy(path, max_steps=MAX_STEPS)
    env_params = EnvParams(max_steps_in_episode=MAX_STEPS, start_stage=STAGE)
    return policy.apply_fn, policy.params, env_params, policy


def _recorded(setup, track: bool):
    apply_fn, params, env_params, meta = setup
    cfg = search_config(meta, num_simulations=SIMS, mode="honest", track_cryptogs=track)
    stepper = E.Stepper(env_params, apply_fn, True, meta.disabled, cfg)
    return E.play(stepper, params, SEED, EPISODES, keep_states=True)


@pytest.fixture(scope="module")
def tracked(setup):
    return _recorded(setup, track=True)


def test_stepper_plays_the_tracked_evaluations_episodes(setup, tracked):
    apply_fn, params, env_params, meta = setup
    cfg = search_config(meta, num_simulations=SIMS, mode="honest", track_cryptogs=True)
    run = make_search_evaluate(HackMatrix(), env_params, apply_fn, cfg, EPISODES, MAX_STEPS)
    acc = jax.device_get(run(params, jax.random.key(SEED)))
    for i, ep in enumerate(tracked):
        assert int(acc["length"][i]) == len(ep.actions)
        assert float(acc["ret"][i]) == pytest.approx(ep.ret, abs=1e-4)
        assert acc["actions"][i].tolist() == np.bincount(ep.actions, minlength=28).tolist()
    # not vacuous: cryptogs went unseen while the belief was followed
    unseen = [
        bool(jnp.any(invisible_cryptogs(s.game.enemies, s.game.player.pos, s.game.show_flag)))
        for ep in tracked
        for s in ep.states
    ]
    assert sum(unseen) >= 5


def test_the_belief_reaches_the_search(setup, tracked):
    """Same keys, same games: only the belief differs, and the search's Q values with it."""
    uniform = _recorded(setup, track=False)
    differs = 0
    for a, b in zip(tracked, uniform, strict=True):
        for fa, fb in zip(a.frames[1:], b.frames[1:], strict=False):
            if fa["action"] != fb["action"]:
                break  # the games part here
            differs += fa["search"] != fb["search"]
    assert differs > 0
