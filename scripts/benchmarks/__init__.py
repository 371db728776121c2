"""Speed and memory benchmarks, each run as ``python -m scripts.benchmarks.<name> --help``.

* ``ours_window``: training throughput over a window of steps (any config);
* ``step_profile``: one training step timed (and profiled) without Lightning;
* ``beam_speed``: beam-search speed of a checkpoint, batched against one sentence at a time;
* ``bucket_padding``: the decoder steps a fixed-shape step runs, square or pair buckets;
* ``scale`` (with ``scale_datasets``): a WMT'14-size corpus prepared, opened and tokenised;
* ``startup``: a training process's start to its first batch, in this or another checkout;
* ``sweep_wall``: a 4-job sweep with the basic launcher and with joblib (``--gpu``: on one GPU);
* ``serve_load``: the translation server under N concurrent clients, batching on and off.

The peers side by side are in ``scripts/peers/``, the GPU runbook in ``scripts/gpu/``, quality
studies in ``scripts/studies/``. Results and the commands that produced them are in
``docs/results.md``.
"""
