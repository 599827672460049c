"""The commands: argument parsing and ``main`` for ``hm-train`` (``train``), ``hm-eval``
(``evaluate``), ``hm-watch`` (``watch``) and ``hm-play`` (``play``), nothing else.

Each ``main`` parses, checks, and calls the library: ``run.run``, ``policy.evaluate_checkpoint``,
``watch.record``, ``terminal.play``; it says what it starts before the game and the network
load (seconds on a cold start). A bad input ends a command with one line,
``<prog>: error: <what>``, and exit status 2 (``hackmatrix_env.argparsing``). The search's
flags are the same in every command (``common.add_search_flags``).
"""
