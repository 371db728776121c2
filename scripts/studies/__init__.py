"""Studies a user runs on a trained checkpoint, giving the results log's quality figures.

* ``python -m scripts.studies.raw_text CKPT --out DIR``: raw text in, natural text out, scored with
  sacreBLEU, and what each part of the recasing gives;
* ``python -m scripts.studies.unk_gain CKPT``: the BLEU gained by unknown-word replacement with
  three dictionaries (copy, MUSE, one aligned from the model's own training text).

Each prints JSON; ``docs/results.md`` has the figures and the commands that gave them.
"""
