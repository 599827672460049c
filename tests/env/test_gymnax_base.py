"""``gymnax_base``: the game loads gymnax's two base modules without gymnax's package (and its
seaborn, pandas, scipy, matplotlib), and stays a gymnax environment for code that imports
gymnax after it or before it. Each case runs in a fresh interpreter: the import order is the
point."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

HEAVY = ("gymnax", "gymnax.environments", "seaborn", "matplotlib", "pandas", "scipy")


def run(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=600, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip()


def test_the_game_imports_without_gymnax_package_and_its_plotting_stack():
    out = run(f"""
        import sys
        from hackmatrix_env import HackMatrix
        HackMatrix()
        print(sorted(m for m in {HEAVY!r} if m in sys.modules))
    """)
    assert out == "[]"


@pytest.mark.parametrize("gymnax_first", [False, True], ids=["gymnax-after", "gymnax-before"])
def test_the_env_is_gymnax_own_environment_whichever_imports_first(gymnax_first):
    first, after = ("import gymnax\n", "") if gymnax_first else ("", "import gymnax\n")
    out = run(
        first
        + "from hackmatrix_env import HackMatrix\n"
        + after
        + textwrap.dedent("""
        import sys
        import jax
        import gymnax.environments.environment as base
        import gymnax.environments.spaces as spaces
        from gymnax.wrappers.purerl import LogWrapper
        from hackmatrix_env import gymnax_base
        env = HackMatrix()
        assert gymnax_base.environment is base and gymnax_base.spaces is spaces
        assert isinstance(env, base.Environment) and isinstance(env.action_space(), spaces.Discrete)
        # the package's attributes are the same modules (rejax reads
        # gymnax.environments.spaces.Discrete; `import a.b as x` would not catch a missing one)
        assert vars(gymnax.environments)["environment"] is base
        assert vars(gymnax.environments)["spaces"] is spaces
        assert not any("BindLoaded" in type(f).__name__ for f in sys.meta_path)  # one shot
        cart, _ = gymnax.make("CartPole-v1")  # gymnax's own environments still load
        assert isinstance(cart, base.Environment)
        wrapped = LogWrapper(env)
        obs, state = wrapped.reset(jax.random.key(0), env.default_params)
        print(type(state).__name__, int(obs.action_mask.sum()) > 0)
    """)
    )
    assert out == "LogEnvState True"


def test_a_missing_module_is_a_clear_import_error():
    out = run("""
        from hackmatrix_env.gymnax_base import gymnax_module
        try:
            gymnax_module("no_such_module")
        except ImportError as e:
            print(type(e).__name__, "no_such_module" in str(e))
    """)
    assert out == "ImportError True"


def test_the_evaluation_modules_load_neither_gymnax_package_nor_distrax():
    """``hm-eval``'s imports and env: distrax (TensorFlow Probability) loads at the first
    sampled policy (``network.masked_categorical``), gymnax's package never."""
    out = run(f"""
        import sys
        from hackmatrix_train.evaluate import run_in_chunks
        from hackmatrix_train.policy import evaluate_checkpoint, load_policy
        from hackmatrix_train.search_evaluate import search_summary
        from hackmatrix_train.trainer import make_env
        env = make_env(load_policy(None).cfg)  # the shipped policy's: UNDO out of the mask
        print(type(env).__name__, sorted(m for m in {(*HEAVY, "distrax")!r} if m in sys.modules))
    """)
    assert out == "DisabledActionsWrapper []"
