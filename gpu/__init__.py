"""The GPU runbook: the measurements a CUDA GPU gives, as timed stages (``bash gpu/run.sh``).

* ``run.sh STAGE ...``: each stage with its own time limit, within one call's budget;
* ``wheelhouse.sh``: the wheels an offline GPU image lacks, fetched ahead;
* ``long_run.py``: the paper's model on the 4.5M-pair store for minutes, then a resume.
"""
