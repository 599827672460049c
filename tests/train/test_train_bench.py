"""``hm-bench train``: each requested batch shape is the one it builds, timed and reported."""

from __future__ import annotations

import json

from hackmatrix_bench.train import main


def test_bench_reports_each_minibatch_count_it_was_asked_for(tmp_path, capsys):
    out = tmp_path / "bench.json"
    argv = ["--env", "probe", "--network", "mlp", "--num-envs", "16", "--num-steps", "8",
            "--updates", "1", "--update-epochs", "1", "--num-minibatches", "2", "4",
            "--json", str(out)]  # fmt: skip
    assert main(argv) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [(r["num_minibatches"], r["update_epochs"], r["res_blocks"]) for r in rows] == [
        (2, 1, 0),
        (4, 1, 0),
    ]
    assert all(r["timed_env_steps"] == 16 * 8 and r["steps_per_second"] > 0 for r in rows)
    table = capsys.readouterr().out.splitlines()
    assert [line.split()[4] for line in table[2:]] == ["2", "4"]  # the table's mb column
