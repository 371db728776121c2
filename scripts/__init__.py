"""The kit's tooling, run from the repository's root (``python -m scripts.<folder>.<tool>``):
benchmarks, the peer comparisons, the GPU stages and the studies behind the results log
(``scripts/README.md``: one line per tool)."""
