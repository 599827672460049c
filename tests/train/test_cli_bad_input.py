"""Every ``hm-*`` tool refuses bad input the same way: one line on stderr, exit status 2.

The error is stderr's last line and its only ``error:`` line; a tool that found the input bad
only while loading it may have said what it was starting first (its progress lines).

Table-driven, in process (``main(argv)``), and fast: only flag and path checks run, nothing
trains, evaluates or compiles. Each row is ``(tool, argv, what the one line says)``; ``{tmp}``
is an empty directory and ``{log}`` an existing (empty) file.
"""

from __future__ import annotations

import pytest
from hackmatrix_parity import cli as parity_cli
from hackmatrix_train.cli import evaluate, play, train, watch

MAINS = {
    "hm-train": train.main,
    "hm-eval": evaluate.main,
    "hm-watch": watch.main,
    "hm-play": play.main,
    "hm-parity": parity_cli.main,
}
try:  # the benchmarks member (development only)
    from hackmatrix_bench import bench

    MAINS["hm-bench"] = bench.main
except ImportError:  # pragma: no cover - a wheel-only install
    bench = None

CASES = [
    # hm-train
    ("hm-train", "--resume nowhere", "no such file or directory: nowhere"),
    ("hm-train", "--init-params nowhere", "no such file or directory: nowhere"),
    ("hm-train", "--resume {tmp}", "cannot resume: no checkpoint in"),
    ("hm-train", "--rewind 3", "--rewind needs --resume"),
    ("hm-train", "--resume {tmp} --checkpoint-dir x", "cannot move it"),
    ("hm-train", "--resume {tmp} --run-name x", "cannot move it"),
    ("hm-train", "--resume {tmp} --run-suffix x", "cannot move it"),
    ("hm-train", "--resume {tmp} --init-params {tmp}", "give one"),
    ("hm-train", "--cpu-devices 2 --num-envs 255", "255 x --num-steps"),
    ("hm-train", "--num-envs abc", "invalid int value: 'abc'"),
    ("hm-train", "--total-timesteps 1e3.5", "not a count"),
    ("hm-train", "--total-timesteps 10 --time-budget 5", "not allowed with argument"),
    ("hm-train", "--bogus", "unrecognized arguments: --bogus"),
    ("hm-train", "--search-depth 0", "--search-depth: max_depth must be"),
    # hm-eval
    ("hm-eval", "nowhere", "no such file or directory: nowhere"),
    ("hm-eval", "--random --greedy", "--greedy chooses the checkpoint's actions"),
    ("hm-eval", "{tmp} --greedy --sampled", "not allowed with argument"),
    ("hm-eval", "{tmp} --episodes 0", "--episodes must be >= 1"),
    ("hm-eval", "{tmp} --random --sampled", "--sampled chooses the checkpoint's actions"),
    ("hm-eval", "{tmp} --start-stage 9", "--start-stage must be in 1..8"),
    ("hm-eval", "{tmp} --views 9", "--views must be 1 to 8"),
    ("hm-eval", "--random --views 8", "--views averages the checkpoint's network"),
    ("hm-eval", "{tmp} --max-steps-in-episode 0", "--max-steps-in-episode must be >= 1"),
    ("hm-eval", "{tmp}", "no checkpoint in"),
    ("hm-eval", "{tmp} --search-track-cryptogs", "--search-track-cryptogs sets the honest"),
    (
        "hm-eval",
        "{tmp} --search 8 --search-mode oracle --search-track-cryptogs",
        "--search-mode honest",
    ),
    ("hm-eval", "{tmp} --search-program-bonus 10", "give --search N"),
    ("hm-eval", "{tmp} --search-considered 4", "give --search N"),
    ("hm-eval", "{tmp} --search-mode oracle", "give --search N"),
    ("hm-eval", "{tmp} --search 8 --search-program-bonus -1", "program_bonus must be finite"),
    ("hm-eval", "{tmp} --search 8 --search-program-bonus nan", "program_bonus must be finite"),
    ("hm-eval", "{tmp} --search 8 --search-program-bonus-from-stage 3", "give --search-program"),
    (
        "hm-eval",
        "{tmp} --search 8 --search-program-bonus 5 --search-program-bonus-from-stage 9",
        "must be a stage, 1 to 8",
    ),
    # hm-watch
    ("hm-watch", "nowhere", "no such file or directory: nowhere"),
    ("hm-watch", "--actions nowhere.json", "no such file or directory: nowhere.json"),
    ("hm-watch", "{tmp} --random", "--random plays the random policy"),
    ("hm-watch", "--random --actions {log}", "--random has nothing to play"),
    ("hm-watch", "--random --sampled", "--sampled chooses the checkpoint's actions"),
    ("hm-watch", "--random --views 8", "--views averages the checkpoint's network"),
    ("hm-watch", "--views 0", "--views must be 1 to 8"),
    ("hm-watch", "--greedy --sampled", "not allowed with argument"),
    ("hm-watch", "--search-mode oracle", "give --search N"),
    ("hm-watch", "--search 8 --search-program-bonus inf", "program_bonus must be finite"),
    ("hm-watch", "--search-program-bonus 5", "give --search N"),
    ("hm-watch", "--random --episodes 0", "--episodes must be >= 1"),
    ("hm-watch", "--random --start-stage 0", "--start-stage must be in 1..8"),
    ("hm-watch", "--random --gif g.gif --gif-episode 4", "--gif-episode must be in 0..3"),
    ("hm-watch", "{log}", "corrupt sidecar"),
    # hm-play
    ("hm-play", "--scenario nowhere.json", "no such file or directory: nowhere.json"),
    ("hm-play", "--swift-bin nowhere", "no such file or directory: nowhere"),
    ("hm-play", "--hint --hint-policy nowhere", "no such file or directory: nowhere"),
    ("hm-play", "--views 8", "--views sets the hint's network: give --hint"),
    ("hm-play", "--stage 9", "--stage must be in 1..8"),
    ("hm-play", "--max-steps 0", "--max-steps must be >= 1"),
    ("hm-play", "--swift --save-actions x.json", "--save-actions replays JAX games only"),
    ("hm-play", "--hint --swift", "cannot be used with --swift"),
    ("hm-play", "--seed x", "invalid int value"),
    ("hm-play", "--search-considered 4", "give --hint"),
    ("hm-play", "--hint --search-program-bonus-from-stage 2", "give --search-program-bonus"),
    # hm-parity
    ("hm-parity", "--swift-bin nowhere", "no such file or directory: nowhere"),
    ("hm-parity", "--scenarios 0", "--scenarios must be >= 1"),
    ("hm-parity", "--workers 0", "--workers must be >= 1"),
    ("hm-parity", "--invalid-prob 2", "--invalid-prob must be in [0, 1]"),
    ("hm-parity", "--bogus", "unrecognized arguments: --bogus"),
    # hm-bench
    ("hm-bench", "nosuch", "unknown benchmark 'nosuch'"),
    ("hm-bench", "env --num-envs 0", "must be positive"),
]


@pytest.mark.parametrize(("tool", "argv", "says"), CASES, ids=[f"{t} {a}" for t, a, _ in CASES])
def test_bad_input_is_one_line_and_exit_status_2(tool, argv, says, tmp_path, capsys, monkeypatch):
    if tool not in MAINS:
        pytest.skip(f"{tool} is not installed")
    monkeypatch.chdir(tmp_path)  # relative paths ("nowhere", outputs) stay in the test's folder
    (tmp_path / "empty").mkdir()
    (tmp_path / "log.json").write_text("")
    args = argv.format(tmp=tmp_path / "empty", log=tmp_path / "log.json").split()
    try:
        status = MAINS[tool](args)
    except SystemExit as e:
        status = e.code
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert status == 2, err
    assert "Traceback" not in err and sum("error" in line for line in lines) == 1, err
    assert lines[-1].startswith(f"{tool}") and "error: " in lines[-1], err
    assert says in lines[-1], err
    assert len(lines) <= 2, err  # at most the tool's first line before the error


def test_help_tells_the_truth_about_defaults(capsys):
    with pytest.raises(SystemExit):
        watch.main(["-h"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: True)" not in text  # --greedy/--sampled: one of them is the default
    assert "play the most likely action (the default)" in text
    assert "sample actions from the policy --actions" in text  # no default shown for --sampled
