"""``python -m luong_lit.train --help``: the config groups and their options (the default
starred), the experiments with the first sentence of each one's opening comment, and three
example commands (:func:`help_text`)."""

from __future__ import annotations

from pathlib import Path

from luong_lit.config import groups
from luong_lit.resources import CONF_DIR


def _first_comment(path: Path, width: int = 76) -> str:
    """The first sentence of a config file's opening comment, at most ``width`` characters."""
    words = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        if "@package" not in line:
            words += line.lstrip("# ").split()
    text = " ".join(words).split(". ")[0].split(" (see ")[0].rstrip(".:")
    return text if len(text) <= width else text[: width - 1].rsplit(" ", 1)[0] + "…"


def _defaults() -> dict[str, str]:
    """The default option of each group, from ``train.yaml``'s defaults list."""
    import yaml

    listed = yaml.safe_load((CONF_DIR / "train.yaml").read_text(encoding="utf-8"))["defaults"]
    return {k: str(v) for item in listed if isinstance(item, dict) for k, v in item.items()}


EXAMPLES = """\
  python -m luong_lit.train experiment=table4_local_p_general trainer=gpu
  python -m luong_lit.train -m attention=local_p,global score=dot,general   # a sweep: 4 runs
  python -m luong_lit.train hydra.run.dir=logs/train/runs/RUN ckpt_path=last   # resume RUN"""


def help_text() -> str:
    """``python -m luong_lit.train --help``: the groups and their options, the experiments, and
    three example commands."""
    defaults = _defaults()
    lines = [
        "usage: python -m luong_lit.train [-m] [GROUP=OPTION | KEY=VALUE ...]",
        "",
        "Train a model of Luong, Pham & Manning (2015); also python -m luong_lit train and",
        "luong-lit train. Each override picks a group's option or sets a key; -m sweeps over",
        "comma-separated values. A run writes its config, logs, checkpoints and results.json",
        "under logs/train/runs/<date_time>/.",
        "",
        "config groups (* the default):",
    ]
    for group, options in groups().items():
        if group == "experiment":
            continue
        shown = [o + ("*" if defaults.get(group) == o else "") for o in options]
        lines.append(f"  {group:<11} {', '.join(shown)}")
    lines += ["", f"experiments (experiment=NAME; * the default, {defaults.get('experiment')}):"]
    for name in groups()["experiment"]:
        star = "*" if name == defaults.get("experiment") else " "
        lines.append(
            f"  {name + star:<26} {_first_comment(CONF_DIR / 'experiment' / (name + '.yaml'))}"
        )
    lines += ["", "examples:", EXAMPLES, ""]
    lines.append("The composed config: --cfg job. Hydra's own options: --hydra-help.")
    return "\n".join(lines) + "\n"
