"""aotwheel's benchmark suite: ``python -m benchmarks`` (see ``benchmarks/run.py``).

Measures the performance targets of issue 6 (P1 parallel AOT, P2 reuse, P3 incremental,
P4 inspect, P5 run-time overhead, P6 size, and the JIT context row) on a generated kernel set
(``benchmarks/workload.py``), writes JSON to ``benchmarks/results/`` and the summary to
``docs/performance.md``.
"""
