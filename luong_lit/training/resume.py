"""Resuming a run from its folder: ``python -m luong_lit.train hydra.run.dir=RUN ckpt_path=last``.

A resumed run takes its settings from its folder (:func:`resume_argv`): the overrides it was
started with (``RUN/.hydra/overrides.yaml``; where the folder has none, those its
``checkpoints/last.ckpt`` keeps), then the command line's. The command line may change only
:data:`MAY_CHANGE` (how long the run goes on, how it is shown, logged and loaded); any other
difference from the run's config is refused in one line that lists each
(``model.net.hidden_size: run 256, here 512``). With nothing to resume (no ``hydra.run.dir``, no
such folder, no ``checkpoints/last.ckpt`` in it), one line says so and lists the runs that can
be resumed (:func:`~luong_lit.training.run_folder.nothing_to_resume`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from luong_lit.errors import ConfigError
from luong_lit.training.folders import LAST, check_budget, check_finished
from luong_lit.training.run_folder import nothing_to_resume

#: what a resumed run may change (a key, or a group or section and all it holds)
MAY_CHANGE = (
    "trainer.max_epochs",
    "trainer.max_steps",
    "trainer.enable_progress_bar",
    "threads",
    "logger",
    "data.num_workers",
    "data.mirror",
    "callbacks.checkpoint",
    "callbacks.progress",
    "test_after_training",
    "ddp_timeout_s",
    "checkpoint_writes",
)
SHOWN = 8  # differences named in a refusal; the rest are counted


def _parse(overrides: Sequence[str]) -> list:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create().parse_overrides(list(overrides))


def _key(override) -> str:
    return override.key_or_group + (f"@{override.package}" if override.package else "")


def _own(override) -> bool:
    """An override of the run itself (not Hydra's, not the checkpoint to resume from)."""
    key = _key(override)
    return key != "ckpt_path" and not key.startswith("hydra.") and key != "hydra"


def own_overrides(overrides: Sequence[str]) -> list[str]:
    """``overrides`` without Hydra's and ``ckpt_path`` (see :func:`_own`), as written."""
    return [text for text, o in zip(overrides, _parse(overrides)) if _own(o)]


def resume_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` of a single run; for ``ckpt_path=last``, the run's own overrides (from its
    folder) followed by ``argv``'s, checked to change only :data:`MAY_CHANGE`. Raises a
    :class:`ConfigError` when there is nothing to resume or the command changes the run."""
    try:
        given = _parse(argv)
    except Exception:  # noqa: BLE001 - a malformed override: composing it says so
        return list(argv)
    if not any(_key(o) == "ckpt_path" and not o.is_delete() and o.value() == "last" for o in given):
        return list(argv)
    run_dir = next((Path(str(o.value())) for o in given if _key(o) == "hydra.run.dir"), None)
    if run_dir is None or not (run_dir / LAST).is_file():
        raise nothing_to_resume(run_dir, *_log_dir(argv))
    was, source = run_overrides(run_dir)
    if was is None:  # not started from the command line: resumed as the command says
        return list(argv)
    merged = merged_overrides(was, argv)
    before, after = check_changes(run_dir, source, was, merged)
    check_budget(run_dir, after)
    check_finished(run_dir, before, after)
    return merged


def run_overrides(run_dir: Path) -> tuple[list[str] | None, str]:
    """The overrides the run in ``run_dir`` was started with (its own only) and where they
    were read; None where neither its folder nor its checkpoint keeps them."""
    import yaml

    from luong_lit.checkpoint.files import read_meta

    saved = run_dir / ".hydra" / "overrides.yaml"
    if saved.is_file():
        listed, source = yaml.safe_load(saved.read_text(encoding="utf-8")) or [], str(saved)
    else:
        listed, source = list(read_meta(run_dir / LAST).overrides) or None, str(run_dir / LAST)
    if listed is None:
        return None, source
    return [_as_today(t) for t in own_overrides(listed)], source


#: config keys renamed since a run may have started: its recorded override, as named today
RENAMED = {"callbacks.beam_bleu.beam_size": "callbacks.beam_bleu.beam"}


def _as_today(text: str) -> str:
    """A recorded override as today's config reads it: ``+key=value`` as ``++key=value`` (the
    key may have joined the config since the run started, as ``trainer.max_steps`` did, and
    ``+`` would then refuse it), a renamed key (:data:`RENAMED`) by its new name."""
    key, sep, value = text.lstrip("+").partition("=")
    text = text[: len(text) - len(text.lstrip("+"))] + RENAMED.get(key, key) + sep + value
    return "++" + text[1:] if text.startswith("+") and not text.startswith("++") else text


def merged_overrides(was: Sequence[str], argv: Sequence[str]) -> list[str]:
    """The run's overrides that ``argv`` does not set again, then ``argv``'s; an override that
    replaces one added with ``+`` is written ``++`` (add or change)."""
    prior = {_key(o): text for text, o in zip(was, _parse(was))}
    out = []
    for text, o in zip(argv, _parse(argv)):
        before = prior.pop(_key(o), None)
        if before is not None and "+" in before[:1] + text[:1] and not text.startswith("~"):
            text = "++" + text.lstrip("+")
        out.append(text)
    return [text for text in was if text in prior.values()] + out


def _composed(overrides: Sequence[str], where: str) -> dict[str, Any]:
    from omegaconf import OmegaConf

    from luong_lit.config import compose

    try:
        cfg = compose(own_overrides(overrides))
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}") from None
    return OmegaConf.to_container(cfg, resolve=False)


def _leaves(node: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(node, dict) or not node:
        return {prefix.rstrip("."): node}
    out: dict[str, Any] = {}
    for key, value in node.items():
        out.update(_leaves(value, f"{prefix}{key}."))
    return out


def _may_change(key: str) -> bool:
    return any(key == k or key.startswith(k + ".") for k in MAY_CHANGE)


def _shown(value: Any) -> str:
    if value is _UNSET:
        return "unset"
    if value is None:
        return "null"
    return str(value).lower() if isinstance(value, bool) else str(value)


_UNSET = object()


def check_changes(
    run_dir: Path, source: str, was: Sequence[str], merged: Sequence[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Refuse, in one line, a resume whose config differs from the run's elsewhere than in
    :data:`MAY_CHANGE`: each difference named, with the run's value and the command's. Returns
    both configs' leaves (``{"trainer.max_epochs": 10, ...}``): the run's and the command's."""
    before = _leaves(_composed(was, source))
    after = _leaves(_composed(merged, "this command"))
    changed = [
        f"{key}: run {_shown(before.get(key, _UNSET))}, here {_shown(after.get(key, _UNSET))}"
        for key in sorted(set(before) | set(after), key=lambda k: (k not in before, k))
        if not _may_change(key) and before.get(key, _UNSET) != after.get(key, _UNSET)
    ]
    if not changed:
        return before, after
    more = f"; and {len(changed) - SHOWN} more" if len(changed) > SHOWN else ""
    raise ConfigError(
        f"ckpt_path=last resumes {run_dir} with its own settings ({source}), and this command "
        f"changes {len(changed)}: {'; '.join(changed[:SHOWN])}{more}. A resumed run may change "
        f"only {', '.join(MAY_CHANGE)}; leave the others out (or train a new run)"
    )


def _log_dir(argv: Sequence[str]) -> tuple[str, str]:
    """Where runs are written (``paths.log_dir``) and the task's name, from ``argv``."""
    from luong_lit.config import compose

    cfg = compose(own_overrides(argv))
    return str(cfg.paths.log_dir), str(cfg.get("task_name", "train"))
