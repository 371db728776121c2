"""Benchmarks a user or a reviewer reruns: ``python -m benchmarks.<name> --help``.

* ``ours_window``: training throughput over a window of steps (any config);
* ``step_profile``: one training step timed (and profiled) without Lightning;
* ``beam_speed``: beam-search speed of a checkpoint, batched against one sentence at a time;
* ``unk_gain``: BLEU gained by unknown-word replacement with three dictionaries;
* ``peer_throughput``, ``peer_beam_speed``: the same model in OpenNMT-py and Joey NMT, side by side;
* ``scale`` (with ``scale_datasets``): a WMT'14-size corpus prepared, opened and tokenised;
* ``startup``: a training process's start to its first batch, in this or another checkout;
* ``sweep_wall``: a 4-job sweep with the basic launcher and with joblib (``--gpu``: on one GPU);
* ``raw_text``: BLEU of raw text in, natural text out, and what each recasing choice gives;
* ``serve_load``: the translation server under N concurrent clients, batching on and off.

Results and the commands that produced them are in ``docs/results.md``.
"""
