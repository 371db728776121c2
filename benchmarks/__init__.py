"""Benchmarks a user or a reviewer reruns: ``python -m benchmarks.<name> --help``.

* ``ours_window``: training throughput over a window of steps (any config);
* ``step_profile``: one training step timed (and profiled) without Lightning;
* ``beam_speed``: beam-search speed of a checkpoint, batched against one sentence at a time;
* ``unk_gain``: BLEU gained by unknown-word replacement with three dictionaries;
* ``peer_throughput``, ``peer_beam_speed``: the same model in OpenNMT-py and Joey NMT, side by side.

Results and the commands that produced them are in ``docs/results.md``.
"""
