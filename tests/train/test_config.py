"""Config, auto-scaling plan and CLI flags (no jit)."""

from __future__ import annotations

import argparse
import warnings

import pytest
from hackmatrix_env.argparsing import count as parse_count
from hackmatrix_train.cli.train import build_parser, config_from_args
from hackmatrix_train.config import (
    MIN_EPOCHS,
    TARGET_MINIBATCH,
    TrainConfig,
    plan,
    validate,
)
from hackmatrix_train.saved_configs import REMOVED_FIELDS
from hypothesis import given, settings
from hypothesis import strategies as st
from train.recipes import RECIPES, plain_ppo

# The reference CLI's flags and defaults (issue 6), written out independently of config.py.
REFERENCE_DEFAULTS = {
    "num_envs": 256, "num_steps": 128, "total_timesteps": 10_000_000, "lr": 2.5e-4,
    "gamma": 0.99, "gae_lambda": 0.95, "num_minibatches": 4, "update_epochs": 4,
    "clip_eps": 0.2, "vf_coef": 0.5, "ent_coef": 0.15, "max_grad_norm": 0.5,
    "hidden_dim": 256, "num_layers": 2, "log_interval": 10, "no_wandb": False,
    "project": "hackmatrix", "entity": None, "run_name": None, "run_suffix": None,
    "resume": None, "rewind": None, "save_interval": None, "save_interval_minutes": 10,
    "checkpoint_dir": "checkpoints", "no_artifact": False, "seed": 0, "auto_tune": False,
}  # fmt: skip
REFERENCE_FLAGS = [
    "--num-envs", "--num-steps", "--total-timesteps", "--lr", "--gamma", "--gae-lambda",
    "--num-minibatches", "--update-epochs", "--clip-eps", "--vf-coef", "--ent-coef",
    "--max-grad-norm", "--hidden-dim", "--num-layers", "--log-interval", "--no-wandb",
    "--project", "--entity", "--run-name", "--run-suffix", "--resume", "--rewind",
    "--save-interval", "--save-interval-minutes", "--checkpoint-dir", "--no-artifact", "--seed",
    "--auto-tune",
]  # fmt: skip


def test_reference_recipe_matches_reference_cli():
    argv = ["--recipe", str(RECIPES / "reference.toml")]
    cfg, explicit = config_from_args(build_parser().parse_args(argv))
    assert explicit == frozenset()
    for name, value in REFERENCE_DEFAULTS.items():
        assert getattr(cfg, name) == value, name


def test_every_reference_flag_is_accepted():
    parser = build_parser()
    options = {s for a in parser._actions for s in a.option_strings}
    assert set(REFERENCE_FLAGS) <= options
    argv = [
        "--num-envs",
        "64",
        "--num-steps",
        "32",
        "--total-timesteps",
        "2M",
        "--lr",
        "1e-3",
        "--gamma",
        "0.9",
        "--gae-lambda",
        "0.8",
        "--num-minibatches",
        "8",
        "--update-epochs",
        "3",
        "--clip-eps",
        "0.1",
        "--vf-coef",
        "1.0",
        "--ent-coef",
        "0.01",
        "--max-grad-norm",
        "1.0",
        "--hidden-dim",
        "64",
        "--num-layers",
        "3",
        "--log-interval",
        "5",
        "--no-wandb",
        "--project",
        "p",
        "--entity",
        "e",
        "--run-name",
        "r",
        "--run-suffix",
        "x",
        "--resume",
        "d",
        "--rewind",
        "7",
        "--save-interval",
        "20",
        "--save-interval-minutes",
        "2.5",
        "--checkpoint-dir",
        "c",
        "--no-artifact",
        "--seed",
        "3",
        "--auto-tune",
    ]
    cfg, explicit = config_from_args(parser.parse_args(argv))
    assert cfg.num_envs == 64 and cfg.total_timesteps == 2_000_000 and cfg.lr == 1e-3
    assert cfg.no_wandb and cfg.no_artifact and cfg.auto_tune
    assert (cfg.rewind, cfg.save_interval, cfg.save_interval_minutes) == (7, 20, 2.5)
    assert (cfg.entity, cfg.run_name, cfg.run_suffix, cfg.resume) == ("e", "r", "x", "d")
    assert "num_envs" in explicit and "gamma" in explicit and "network" not in explicit


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("10M", 10_000_000),
        ("500k", 500_000),
        ("1e7", 10_000_000),
        ("1_000", 1000),
        ("2.5M", 2_500_000),
    ],
)
def test_parse_count(text, value):
    assert parse_count(text) == value


@pytest.mark.parametrize("text", ["ten", "1.5", "-3", "M"])
def test_parse_count_rejects(text):
    with pytest.raises(argparse.ArgumentTypeError):
        parse_count(text)


def test_plan_keeps_reference_batch():
    cfg = plan(plain_ppo())
    assert (cfg.num_minibatches, cfg.update_epochs) == (4, 4)
    assert cfg.minibatch_size == TARGET_MINIBATCH
    assert cfg.notes == ()


def test_plan_scales_1024_envs():
    cfg = plan(plain_ppo(num_envs=1024))
    # batch 131072 -> 16 minibatches of 8192; 16 grad steps/update kept -> 1 epoch, floored at 2
    assert cfg.num_minibatches == 16 and cfg.minibatch_size == 8192
    assert cfg.update_epochs == MIN_EPOCHS
    assert any("num_minibatches" in n for n in cfg.notes)


def test_plan_respects_explicit_flags():
    cfg = plan(plain_ppo(num_envs=1024, num_minibatches=4), explicit=frozenset({"num_minibatches"}))
    assert (cfg.num_minibatches, cfg.update_epochs) == (4, 4)
    cfg = plan(plain_ppo(num_envs=1024, update_epochs=6), explicit=frozenset({"update_epochs"}))
    assert cfg.num_minibatches == 16 and cfg.update_epochs == 6


def test_plan_auto_tune_picks_envs():
    cfg = plan(plain_ppo(auto_tune=True), num_devices=2, platform="cpu")
    assert cfg.num_envs == 512
    cfg = plan(plain_ppo(auto_tune=True, num_envs=64), explicit=frozenset({"num_envs"}))
    assert cfg.num_envs == 64
    gpu = plan(plain_ppo(auto_tune=True, num_steps=32), num_devices=1, platform="gpu")
    assert gpu.num_envs == 16384  # one GPU: a batch of 524,288 in minibatches of <= 8,192
    assert gpu.num_minibatches == 64 and gpu.batch_size // gpu.num_minibatches == 8192


@settings(deadline=None, max_examples=40)
@given(
    envs=st.sampled_from([8, 64, 256, 512, 1024, 4096, 16384]),
    steps=st.sampled_from([16, 64, 128, 256]),
    devices=st.sampled_from([1, 2, 4]),
)
def test_plan_minibatch_near_target(envs, steps, devices):
    envs = envs * devices
    cfg = plan(
        plain_ppo(num_envs=envs, num_steps=steps, total_timesteps=10**9), num_devices=devices
    )
    validate(cfg, devices)
    assert cfg.minibatch_size <= max(TARGET_MINIBATCH, plain_ppo().minibatch_size)
    assert cfg.update_epochs >= min(MIN_EPOCHS, plain_ppo().update_epochs)
    if cfg.batch_size > 4 * TARGET_MINIBATCH:
        assert cfg.minibatch_size > TARGET_MINIBATCH // 4


@pytest.mark.parametrize(
    ("kw", "msg"),
    [
        ({"num_envs": 10, "num_steps": 3, "num_minibatches": 4}, "not divisible"),
        ({"total_timesteps": 10}, "smaller than one batch"),
        ({"network": "cnn"}, "--network"),
        ({"num_envs": 0}, "--num-envs"),
        ({"vf_clip_eps": -0.1}, "--vf-clip-eps"),
        ({"vf_clip_eps": float("nan")}, "--vf-clip-eps"),
    ],
)
def test_validate_errors(kw, msg):
    with pytest.raises(ValueError, match=msg):
        validate(plain_ppo(**kw))


def test_config_dict_roundtrip():
    cfg = plan(plain_ppo(num_envs=2048, ent_coef_end=0.01))
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="unknown config keys"):
        TrainConfig.from_dict({"bogus": 1})


# A config saved before the start-stage and start-kit curricula were removed, all "off".
OLD_CURRICULUM_KEYS = {
    "start_stage": 1, "start_stage_max": None, "kit_siphons": 0, "kit_credits": 0,
    "kit_energy": 0, "kit_programs": 0, "kit_prob": 1.0, "kit_pool": None,
}  # fmt: skip
# ... and before the search trainer left hm-train (the PPO learner's values)
OLD_LEARNER_KEYS = {"algo": "ppo", "search_target": "improved"}


def test_a_saved_config_with_the_removed_curriculum_keys_still_loads(recwarn):
    assert REMOVED_FIELDS == {**OLD_CURRICULUM_KEYS, **OLD_LEARNER_KEYS}
    cfg = plan(plain_ppo(num_envs=64, network="grid"))
    assert TrainConfig.from_dict({**cfg.to_dict(), **OLD_CURRICULUM_KEYS}) == cfg
    assert not recwarn.list  # the curricula were off: nothing changes, nothing to say


@pytest.mark.parametrize(
    "used",
    [{"start_stage_max": 4}, {"start_stage": 3}, {"kit_siphons": 3, "kit_prob": 0.5},
     {"kit_programs": 1, "kit_pool": "undo"}],
)  # fmt: skip
def test_a_saved_curriculum_setting_is_ignored_with_a_warning_naming_it(used):
    cfg = plain_ppo(seed=3)
    saved = {**cfg.to_dict(), **OLD_CURRICULUM_KEYS, **used}
    with pytest.warns(UserWarning, match="ignoring removed training-curriculum") as caught:
        assert TrainConfig.from_dict(saved) == cfg
    (warning,) = caught
    for name, value in used.items():
        assert f"{name}={value!r}" in str(warning.message)


@pytest.mark.parametrize(
    "flag", ["--start-stage", "--start-stage-max", "--kit-siphons", "--kit-prob", "--kit-pool"]
)
def test_hm_train_no_longer_takes_the_curriculum_flags(flag, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args([flag, "1"])
    assert "unrecognized arguments" in capsys.readouterr().err


def test_hm_train_defaults_are_the_field_defaults_and_reference_is_plain_ppo():
    from hackmatrix_train.cli.train import build_parser, config_from_args

    cfg, explicit = config_from_args(build_parser().parse_args([]))
    assert explicit == frozenset()
    assert cfg == TrainConfig()  # one set of defaults: the default recipe
    assert cfg.network == "grid" and cfg.program_bonus > 0 and cfg.disabled_programs == ("undo",)
    assert cfg.run_suffix is None  # the default's runs are named after the recipe alone
    ref, _ = config_from_args(
        build_parser().parse_args(["--recipe", str(RECIPES / "reference.toml")])
    )
    assert ref == plain_ppo()
    assert (ref.network, ref.ent_coef, ref.num_steps, ref.explore_floor) == ("mlp", 0.15, 128, 0.0)
    assert (ref.time_budget, ref.ent_coef_end, ref.explore_floor_end) == (None, None, None)
    assert not ref.program_terms_skip_undo and ref.disabled_programs == ()


def test_explicit_flags_override_the_recipe():
    from hackmatrix_train.cli.train import build_parser, config_from_args

    args = build_parser().parse_args(["--network", "mlp", "--ent-coef", "0.05"])
    cfg, explicit = config_from_args(args)
    assert explicit == {"network", "ent_coef"}
    assert (cfg.network, cfg.ent_coef) == ("mlp", 0.05)
    assert cfg.num_steps == 32  # the rest from the defaults
    off, _ = config_from_args(build_parser().parse_args(["--explore-floor", "0"]))
    assert off.explore_floor == 0 and off.explore_floor_end is None
    validate(off)
    unclipped, _ = config_from_args(build_parser().parse_args(["--vf-clip-eps", "0"]))
    assert unclipped.vf_clip_eps == 0.0 and unclipped.clip_eps == 0.2
    validate(unclipped)
    assert config_from_args(build_parser().parse_args([]))[0].vf_clip_eps is None
    depth = ["--recipe", str(RECIPES / "depth.toml")]
    flagged, explicit = config_from_args(build_parser().parse_args([*depth, "--lr", "2e-3"]))
    assert flagged.lr == 2e-3 and explicit == {"lr"} and flagged.vf_coef == 0.5


def test_the_depth_and_programs_recipes_are_the_default_without_program_terms_nor_annealed_rate():
    from hackmatrix_train.cli.train import build_parser, config_from_args
    from hackmatrix_train.run import default_run_name

    default, _ = config_from_args(build_parser().parse_args([]))
    depth_argv = ["--recipe", str(RECIPES / "depth.toml")]
    depth, explicit = config_from_args(build_parser().parse_args(depth_argv))
    assert explicit == frozenset()
    assert depth == default.replace(
        program_bonus=0.0,
        program_terms_skip_undo=False,
        explore_floor=0.01,
        explore_floor_end=0.001,
        explore_floor_start=0.6,
        disabled_programs=(),
        lr=5e-4,
        anneal_lr=False,
        vf_coef=0.5,  # the plain PPO weight
        time_budget=None,  # a fixed 25M steps
        run_suffix="depth",
    )
    assert default_run_name(depth) == default_run_name(default) + "-depth"
    validate(depth)
    programs_argv = ["--recipe", str(RECIPES / "programs.toml")]
    programs, _ = config_from_args(build_parser().parse_args(programs_argv))
    assert programs == depth.replace(
        program_bonus=2.0, program_terms_skip_undo=True, run_suffix="programs"
    )
    validate(programs)
    stronger, _ = config_from_args(
        build_parser().parse_args([*programs_argv, "--program-bonus", "5"])
    )
    assert stronger.program_bonus == 5.0 and stronger.program_terms_skip_undo


def test_the_default_recipe_is_the_measured_flag_set():
    """The default is the command line of the runs it is documented by: the programs recipe
    with a bonus of 5, the floor from the first update, UNDO out of the mask, a learning
    rate of 1e-3 annealed to 0, a quarter of the value weight and a time budget of 50 min."""
    from hackmatrix_env.constants import FIRST_PROGRAM, PROGRAM_NAMES
    from hackmatrix_train.cli.train import build_parser, config_from_args
    from hackmatrix_train.config import disabled_actions

    measured_flags = [
        "--recipe",
        str(RECIPES / "programs.toml"),
        "--program-bonus",
        "5",
        "--explore-floor-start",
        "0",
        "--explore-floor",
        "0.003",
        "--explore-floor-end",
        "0.001",
        "--disabled-programs",
        "undo",
        "--lr",
        "1e-3",
        "--anneal-lr",
        "--vf-coef",
        "0.125",
        "--time-budget",
        "50",
    ]
    measured, _ = config_from_args(build_parser().parse_args(measured_flags))
    default, explicit = config_from_args(build_parser().parse_args([]))
    assert explicit == frozenset()
    assert default == measured.replace(run_suffix=None, total_timesteps=default.total_timesteps)
    assert disabled_actions(default) == (FIRST_PROGRAM + PROGRAM_NAMES.index("undo"),)
    validate(default)
    undo_back, _ = config_from_args(build_parser().parse_args(["--disabled-programs"]))
    assert undo_back.disabled_programs == () and undo_back.program_bonus == 5.0
    constant, explicit = config_from_args(build_parser().parse_args(["--no-anneal-lr"]))
    assert not constant.anneal_lr and explicit == frozenset({"anneal_lr"})


@pytest.mark.parametrize(
    ("text", "error"),
    [("lr = 'fast'", "lr = 'fast'"), ("best = 1", "'best' is not a recipe field"),
     ("lr = ", "cannot read recipe"), ("num_envs = 1.5", "num_envs = 1.5"), ("seed = 'none'", "seed = 'none'")],
)  # fmt: skip
def test_a_bad_recipe_is_a_clear_error(tmp_path, text, error):
    from hackmatrix_train.recipe import load_recipe

    path = tmp_path / "bad.toml"
    path.write_text(text + "\n")
    with pytest.raises(ValueError, match=error):
        load_recipe(path)
    with pytest.raises(ValueError, match=error):
        config_from_args(build_parser().parse_args(["--recipe", str(path)]))
    with pytest.raises(ValueError, match="cannot read recipe"):
        config_from_args(build_parser().parse_args(["--recipe", str(tmp_path / "missing.toml")]))


def test_a_recipe_refines_its_base(tmp_path):
    """``base`` loads the named recipe first and the file's own keys override it: the shipped
    ``hour`` recipe is the guided recipe with the hour's flags, and a file's base resolves
    beside it."""
    hour, _ = config_from_args(build_parser().parse_args(["--recipe", "hour", "--seed", "4"]))
    flags = "--guide-bonus 10 --program-bonus 10 --guide-divergence reverse --guide-rounds 2"
    flags += " --guide-envs 16 --guide-kl-later 3"
    flags += " --gamma 0.997 --away-penalty 1 --run-suffix hour --seed 4 --recipe guided"
    spelled, _ = config_from_args(build_parser().parse_args(flags.split()))
    assert hour == spelled and hour.guide_envs == 16 and hour.lr == 3e-4

    (tmp_path / "parent.toml").write_text("lr = 1e-3\nseed = 7\n[search]\nnum_simulations = 8\n")
    child = tmp_path / "child.toml"
    child.write_text('base = "parent.toml"\nseed = 9\nsearch_simulations = 4\n')
    cfg, _ = config_from_args(build_parser().parse_args(["--recipe", str(child)]))
    assert (cfg.lr, cfg.seed, cfg.search.num_simulations) == (1e-3, 9, 4)


@pytest.mark.parametrize(
    ("files", "error"),
    [({"a.toml": 'base = "a.toml"'}, "refine themselves"),
     ({"a.toml": 'base = "b.toml"', "b.toml": 'base = "a.toml"'}, "refine themselves"),
     ({"a.toml": "base = 3"}, "is not a recipe name or file"),
     ({"a.toml": 'base = "missing.toml"'}, "cannot read recipe")],
)  # fmt: skip
def test_a_bad_base_is_a_clear_error(tmp_path, files, error):
    for name, text in files.items():
        (tmp_path / name).write_text(text + "\n")
    with pytest.raises(ValueError, match=error):
        config_from_args(build_parser().parse_args(["--recipe", str(tmp_path / "a.toml")]))


def test_every_recipe_file_loads_and_validates():
    paths = sorted(RECIPES.glob("*.toml"))
    assert {p.stem for p in paths} >= {"depth", "guided", "hour", "programs", "reference"}
    for path in paths:
        cfg, _ = config_from_args(build_parser().parse_args(["--recipe", path.stem]))
        assert cfg != TrainConfig()
        validate(cfg)


def test_a_config_saved_with_flat_search_keys_loads_into_search():
    """Configs saved before ``search`` was nested carry ``search_*`` keys: they load into it,
    and a saved config round-trips."""
    saved = plain_ppo(seed=4).to_dict()
    del saved["search"]
    saved.update(search_simulations=32, search_mode="oracle", search_depth=None,
                 search_gumbel_scale=0.5, search_considered=4, search_target_value_scale=0.02)  # fmt: skip
    cfg = TrainConfig.from_dict(saved)
    s = cfg.search
    assert (s.num_simulations, s.mode, s.gumbel_scale, s.max_num_considered_actions) == (
        32, "oracle", 0.5, 4,
    )  # fmt: skip
    assert s.target_value_scale == 0.02 and cfg.setting("search_mode") == "oracle"
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg
    assert "gamma" not in cfg.to_dict()["search"]  # the run's units are not search settings
    with pytest.raises(ValueError, match="search-depth: max_depth"):
        cfg.replace(search_depth=0)


def test_a_saved_config_lacking_a_field_loads_as_the_run_it_was():
    """Checkpoints saved before a field existed ran without it: ``SAVED_DEFAULTS`` fills it,
    not the default recipe (a missing ``disabled_programs`` is no program disabled)."""
    saved = plain_ppo(seed=4).to_dict()
    for key in ("disabled_programs", "program_bonus", "program_terms_skip_undo", "time_budget"):
        del saved[key]
    assert TrainConfig.from_dict(saved) == plain_ppo(seed=4)


@pytest.mark.parametrize(
    ("envs", "minibatches", "cores", "want"),
    [(256, 4, 2, 2), (256, 4, 3, 2), (256, 4, 1, 1), (8, 2, 16, 8), (6, 4, 4, 3)],
)
def test_cpu_device_count_splits_envs_and_minibatches_evenly(envs, minibatches, cores, want):
    from hackmatrix_train.distributed import cpu_device_count

    cfg = plain_ppo(num_envs=envs, num_steps=4, num_minibatches=minibatches)
    n = cpu_device_count(cfg, cores)
    assert n == want
    validate(cfg.replace(total_timesteps=10**6), n)


def test_bench_drops_its_own_flags_before_running_each_device_count():
    from hackmatrix_bench.train import without_flags

    argv = [
        "--num-envs",
        "256",
        "512",
        "--cpu-devices",
        "2",
        "1",
        "--json=x.json",
        "--updates",
        "3",
    ]
    assert without_flags(argv, ("--cpu-devices", "--json")) == [
        "--num-envs", "256", "512", "--updates", "3",
    ]  # fmt: skip
    assert without_flags(["--json", "a", "--env", "probe"], ("--json",)) == ["--env", "probe"]


def test_the_default_run_directory_names_the_algorithm_network_batch_and_seed():
    from hackmatrix_train.run import default_run_name

    base = TrainConfig()
    assert default_run_name(base) == f"ppo-grid-{base.num_envs}x{base.num_steps}-s0"
    other = base.replace(network="mlp", seed=3)
    assert default_run_name(other) == f"ppo-mlp-{base.num_envs}x{base.num_steps}-s3"
    assert default_run_name(other.replace(run_name="mine", run_suffix="x")) == "mine-x"


def test_a_saved_search_trainer_config_loads_with_a_warning():
    """``algo`` and ``search_target`` left the config with the search trainer: a checkpoint
    that carries them still loads (its params evaluate), and says what it was."""
    saved = TrainConfig().to_dict()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the default learner's keys load silently
        TrainConfig.from_dict({**saved, "algo": "ppo", "search_target": "improved"})
    with pytest.warns(UserWarning, match="search trainer"):
        cfg = TrainConfig.from_dict({**saved, "algo": "search", "search_target": "raw"})
    assert cfg == TrainConfig.from_dict(saved)
