"""The GPU runbook: what a CUDA GPU measures, as timed stages (``bash scripts/gpu/run.sh``).

* ``run.sh STAGE ...``: each stage with its own time limit, within one call's budget;
* ``wheelhouse.sh``: the wheels an offline GPU image lacks, fetched ahead;
* ``long_run.py``: the paper's model on the 4.5M-pair store for minutes, then a resume.
"""
