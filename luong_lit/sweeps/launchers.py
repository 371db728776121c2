"""A sweep's launcher, checked before Hydra starts it, and what a launcher that cannot start
says: SLURM's without ``srun`` on the machine, a plugin that is not installed.

A sweep's first job (each swept key at its first value), and one for each further option of a
swept config group (:func:`sweep_jobs`), are composed before Hydra runs the sweep
(:func:`luong_lit.config.check_sweep`), so that a bad override or a launcher that cannot start
here is one line before any folder is made.
"""

from __future__ import annotations

import shutil
from collections.abc import Collection, Sequence

from luong_lit.errors import ConfigError

LAUNCHERS = "pip install 'luong_lit[launchers]'"  # the extra with Hydra's launcher plugins


def _values(override) -> list[str]:
    """A swept override's values as override strings (none for a search's ``interval(...)``)."""
    try:
        return list(override.sweep_string_iterator())
    except Exception:  # noqa: BLE001 - not a list of values: a search's, left out
        return []


def sweep_jobs(overrides: Sequence[str], groups: Collection[str]) -> list[list[str]] | None:
    """Jobs of a sweep whose configs are composed from different files: the first (each swept
    key at its first value of ``a,b``, ``range(...)``; a search's ``interval(...)`` left out),
    then one for each further value of a swept config group (of ``groups``), the others at
    their first. None if an override cannot be parsed (Hydra says so itself)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except Exception:  # noqa: BLE001 - Hydra reports a malformed override itself
        return None
    choices = [
        [f"{o.get_key_element()}={v}" for v in _values(o)] if o.is_sweep_override() else [text]
        for text, o in zip(overrides, parsed)
    ]
    first = [c[0] for c in choices if c]
    jobs = [first]
    for i, (o, values) in enumerate(zip(parsed, choices)):
        if o.is_sweep_override() and o.key_or_group in groups:
            at = sum(1 for c in choices[:i] if c)  # its place in the first job
            jobs += [first[:at] + [v] + first[at + 1 :] for v in values[1:]]
    return jobs


def slurm_message(launcher: str) -> str:
    return (
        f"hydra/launcher={launcher}: SLURM's srun is not on this machine; start the sweep where "
        "SLURM runs (a cluster's login node), or here with hydra/launcher=submitit_local or joblib"
    )


def check_launcher(target: str, launcher: str) -> None:
    """A sweep's launcher (its class ``target``, chosen as ``hydra/launcher=launcher``) that can
    start on this machine: SLURM's needs ``srun``."""
    if target.endswith("SlurmLauncher") and shutil.which("srun") is None:
        raise ConfigError(slurm_message(launcher))


def launch_error(text: str, launcher: str) -> str | None:
    """What Hydra or a launcher raised (``text``) when the launcher cannot start, said with
    what to do; None for another error."""
    if 'Could not detect "srun"' in text:
        return slurm_message(launcher)
    if "Unknown plugin class" in text or "IS THE PLUGIN INSTALLED" in text:
        first = text.strip().splitlines()[0]
        return f"hydra/launcher={launcher} cannot start ({first}); the launchers: {LAUNCHERS}"
    return None
