"""The commands' help: every option of hm-train, hm-eval, hm-watch and hm-play has help text
and shows its default at most once; recipe errors suggest the field meant."""

from __future__ import annotations

import re

import pytest
from hackmatrix_train.cli import evaluate, play, train, watch
from hackmatrix_train.recipe import load_recipe, shipped_recipes

PARSERS = {
    "hm-train": train.build_parser,
    "hm-eval": evaluate.build_parser,
    "hm-watch": watch.build_parser,
    "hm-play": play.build_parser,
}


def options(help_text: str) -> dict[str, str]:
    """Each option's entry of an argparse help text: its flags line and help, joined."""
    entries: dict[str, str] = {}
    current = None
    for line in help_text.splitlines():
        m = re.match(r"^  (-{1,2}[\w-]+|[a-z_]+\b)(.*)$", line)
        if m and (m.group(1).startswith("-") or m.group(2).startswith(("  ", ""))):
            current = m.group(1)
            entries[current] = m.group(2)
        elif current is not None and line.startswith("    "):
            entries[current] += " " + line.strip()
        else:
            current = None
    return entries


@pytest.mark.parametrize("prog", PARSERS)
def test_every_option_has_help_and_at_most_one_default(prog):
    text = PARSERS[prog]().format_help()
    entries = {k: v for k, v in options(text).items() if k.startswith("-")}
    assert len(entries) >= 10, text
    for flag, entry in entries.items():
        words = entry.split()
        metavar_free = [w for w in words if not w.isupper() and not w.startswith(("{", "["))]
        assert len(" ".join(metavar_free)) > 10, f"{prog} {flag} has no help: {entry!r}"
        assert entry.count("default:") + entry.count("(the default)") <= 1, (
            f"{prog} {flag}: {entry!r}"
        )
        assert "(default: None)" not in entry, f"{prog} {flag}: {entry!r}"


def test_the_search_flags_are_spelt_the_same_in_every_command():
    shared = ("--search-mode", "--search-depth", "--search-gumbel-scale", "--search-considered")
    for prog, build in PARSERS.items():
        text = build().format_help()
        assert all(flag in text for flag in shared), prog
        assert "--gumbel-scale" not in text.replace("--search-gumbel-scale", ""), prog


def test_an_unknown_recipe_key_suggests_the_field(tmp_path):
    path = tmp_path / "r.toml"
    path.write_text("learning_rate = 1e-3\n")
    with pytest.raises(
        ValueError, match=r"'learning_rate' is not a recipe field \(did you mean 'lr'\?\)"
    ):
        load_recipe(path)
    path.write_text("num_env = 8\n")
    with pytest.raises(ValueError, match="did you mean 'num_envs'"):
        load_recipe(path)
    path.write_text("[search]\nsimulations = 8\n")
    with pytest.raises(ValueError, match="did you mean 'num_simulations'"):
        load_recipe(path)


def test_a_recipe_error_is_one_line_and_exit_status_2(tmp_path, capsys):
    path = tmp_path / "r.toml"
    path.write_text("learning_rate = 1e-3\n")
    assert train.main(["--recipe", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hm-train: error: recipe"), err


def test_the_shipped_recipes_load_by_name_and_set_search_tables(tmp_path):
    assert set(shipped_recipes()) >= {"depth", "programs", "reference"}
    assert load_recipe("reference")["network"] == "mlp"
    path = tmp_path / "s.toml"
    path.write_text('lr = 1e-4\n[search]\nnum_simulations = 16\nmode = "oracle"\n')
    cfg, _ = train.config_from_args(train.build_parser().parse_args(["--recipe", str(path)]))
    assert (cfg.search.num_simulations, cfg.search.mode) == (16, "oracle")
    args = train.build_parser().parse_args(["--recipe", str(path), "--search-mode", "honest"])
    cfg, explicit = train.config_from_args(args)
    assert (cfg.search.num_simulations, cfg.search.mode) == (16, "honest")
    assert explicit == {"search_mode"}


def test_a_zero_default_is_shown_and_the_terms_are_explained():
    entries = options(evaluate.build_parser().format_help())
    assert "(default: 0)" in entries["--seed"]  # 0 is a default, not "unset"
    text = evaluate.build_parser().format_help()
    assert "wins by the exit" in text and "UNDO quirk" in text and "programs acquired" in text


def test_every_config_field_is_a_flag_with_its_own_help():
    """``TrainConfig`` and ``SearchConfig`` hold each flag's help (``flag``): hm-train has a flag
    for every field that has help, every search flag, and shows that help."""
    import dataclasses

    from hackmatrix_train.config import SEARCH_FLAGS, TrainConfig
    from hackmatrix_train.search_config import PLAY_SEARCH_FLAGS, SearchConfig

    entries = options(train.build_parser().format_help())
    helped = {f.name for f in dataclasses.fields(TrainConfig) if "help" in f.metadata}
    assert helped == {f.name for f in dataclasses.fields(TrainConfig)} - {"search", "notes"}
    search_help = {f.name: f.metadata["help"] for f in dataclasses.fields(SearchConfig)
                   if "help" in f.metadata}  # fmt: skip
    assert set(search_help) == set(SEARCH_FLAGS.values()) | set(PLAY_SEARCH_FLAGS.values())
    for name, help_text in [
        *((f.name, f.metadata["help"]) for f in dataclasses.fields(TrainConfig) if f.name in helped),
        *((dest, search_help[field]) for dest, field in SEARCH_FLAGS.items()
          if dest != "search_track_cryptogs"),  # the trainer's search follows no one game
    ]:  # fmt: skip
        entry = "".join(entries["--" + name.replace("_", "-")].split())  # wrapping aside
        assert "".join(help_text.split()) in entry, name


@pytest.mark.parametrize("prog", ["hm-eval", "hm-watch", "hm-play"])
def test_the_tree_bonus_is_a_flag_of_the_commands_that_play_not_of_the_trainer(prog):
    """The test-time tree's bonus (``PLAY_SEARCH_FLAGS``) is the playing commands' switch; the
    trainer's tree takes its bonus from ``--guide-bonus`` and has no such flag."""
    import dataclasses

    from hackmatrix_train.search_config import PLAY_SEARCH_FLAGS, SearchConfig

    helps = {f.name: f.metadata["help"] for f in dataclasses.fields(SearchConfig)
             if f.name in PLAY_SEARCH_FLAGS.values()}  # fmt: skip
    entries = options(PARSERS[prog]().format_help())
    trainer = options(train.build_parser().format_help())
    for dest, field in PLAY_SEARCH_FLAGS.items():
        flag = "--" + dest.replace("_", "-")
        assert "".join(helps[field].split()) in "".join(entries[flag].split())
        assert flag not in trainer
