"""Sweeps: the jobs of ``-m`` runs on one machine's GPUs and CPU cores, and on SLURM."""
