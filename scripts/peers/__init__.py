"""OpenNMT-py 3.5.1 and Joey NMT 2.3.0 beside luong_lit: the same model and data in each.

    bash scripts/peers/setup.sh                          # once: the peers' venvs and data
    python -m scripts.peers.throughput --out DIR         # training target tokens/s, side by side
    python -m scripts.peers.beam_speed --out DIR         # beam-5 decoding speed of 10-epoch models

``setup.sh`` installs each peer into its own virtual environment from the pinned
``*_requirements.txt`` here and prepares Multi30k for it; ``*_m30k_small.yaml`` are the peers'
configs of the main job's model; ``boot.py`` starts a peer with the given torch threads. Results
and their commands: ``docs/results.md``.
"""
