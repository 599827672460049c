"""The project's benchmarks (a development package of the workspace, in no published wheel).

``hm-bench`` (``hackmatrix_bench.bench:main``) is the one front door: ``uv run hm-bench`` lists
every benchmark, ``uv run hm-bench <what> -h`` gives one's options.
"""
