"""The kit's Hydra configs (``conf/``, shipped inside every wheel): composing them
outside a Hydra app, naming a mistyped override's nearest match, saying what Hydra raised while
it composed or launched in one line. Attentions and scores registered in Python are options of
their groups wherever the configs are composed (:mod:`luong_lit.config_parts`); ``train
--help`` is :mod:`luong_lit.config_help`'s."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any, cast

from luong_lit.config_parts import GROUPS, offer_parts, registered
from luong_lit.errors import ConfigError, UserError, find_user_error
from luong_lit.resources import CONF_DIR
from luong_lit.sweeps.launchers import check_launcher, launch_error, sweep_jobs
from luong_lit.validate import OptionError

__all__ = [
    "CONF_DIR",
    "check_seed",
    "check_sweep",
    "compose",
    "groups",
    "hydra_error",
]
HIDDEN_GROUPS = ("hydra", "paths", "recipes")  # plumbing and shared parts of experiments


def groups() -> dict[str, list[str]]:
    """Each config group a user chooses from, with its options (files starting with ``_`` and
    the groups of :data:`HIDDEN_GROUPS` are internal)."""
    found = {g: registered(g) for g in GROUPS}  # the parts: their constructors declare them
    for d in (p for p in CONF_DIR.iterdir() if p.is_dir() and p.name not in HIDDEN_GROUPS):
        found[d.name] = sorted({*found.get(d.name, []), *(f.stem for f in d.glob("[!_]*.yaml"))})
    return dict(sorted(found.items()))


def _raw_compose(overrides: Sequence[str], config_name: str = "train", hydra: bool = False):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from luong_lit.sweeps.resolvers import register_resolvers

    register_resolvers()
    offer_parts()  # attention=NAME and score=NAME for the parts registered in Python so far
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return hydra_compose(config_name, overrides=list(overrides), return_hydra_config=hydra)


def _nearest(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def _paths(node, prefix: str = "") -> list[str]:
    """Every key path of a config node (``model.net.hidden_size``, ...)."""
    out = []
    for key in node.keys() if hasattr(node, "keys") else []:
        path = f"{prefix}{key}"
        out.append(path)
        out += _paths(node[key], path + ".") if hasattr(node[key], "keys") else []
    return out


def _suggestion(path: str, choices: Sequence[str] = ()) -> str:
    """The nearest key path to ``path`` in the config of the user's group ``choices``
    (``schedule=linear_decay``), part by part (``model.net.hiden_size``:
    ``model.net.hidden_size``), else among all key paths (``modle.lr``: ``model.optimizer.lr``);
    the top level's names include the group names."""
    from omegaconf import OmegaConf

    cfg = OmegaConf.to_container(_raw_compose(list(choices)), resolve=False)
    node, fixed = cfg, []
    for i, part in enumerate(path.split(".")):
        keys = list(node) if isinstance(node, dict) else []
        keys += list(groups()) if i == 0 else []
        close = [part] if part in keys else difflib.get_close_matches(part, keys, n=1, cutoff=0.6)
        if not close or not isinstance(node, dict):
            break
        fixed.append(close[0])
        node = node.get(close[0], {})
    else:
        return ".".join(fixed)
    close = difflib.get_close_matches(path, _paths(cfg), n=1, cutoff=0.6)
    return close[0] if close else ""


def _group_choices(overrides: Sequence[str]) -> list[str]:
    """The overrides that choose a group's option (``schedule=linear_decay``)."""
    names = groups()
    return [o for o in overrides if o.split("=", 1)[0].lstrip("+~") in names and "=" in o]


def _not_a_name(overrides: Sequence[str]) -> tuple[str, object] | None:
    """The first group override whose value (or a swept value) is not an option's name but a
    number, a boolean or null (``attention=5``): ``(group, value)``."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ChoiceSweep

    parser, names = OverridesParser.create(), groups()
    for text in overrides:
        try:
            override = parser.parse_override(text)
        except Exception:  # noqa: BLE001 - an override Hydra cannot parse is said elsewhere
            continue
        value = override.value()
        # a choice sweep's values
        values = value.list if isinstance(value, ChoiceSweep) else [value]
        bad = [v for v in values if not isinstance(v, str)]
        if override.key_or_group in names and bad:
            return override.key_or_group, bad[0]
    return None


def _not_an_option(group: str, option: object) -> str:
    options = groups()[group]
    return (
        f"{group}={option} is not an option of {group}{_nearest(str(option), options)} "
        f"(options: {', '.join(options)})"
    )


#: the config's sections built into objects that take only the options they know (a key added
#: there with ``+`` is refused when the object is built)
BUILT_FROM = ("trainer", "model", "data", "engine", "callbacks", "logger")


def explain(message: str, overrides: Sequence[str] = ()) -> str:
    """Hydra's complaint about an override, with the nearest name that exists (in the config
    the user's group choices among ``overrides`` make)."""
    first = message.strip().splitlines()[0] if message.strip() else message
    typed = _not_a_name(overrides) if "override must be a string" in first else None
    if typed:
        return _not_an_option(*typed)
    missing = re.search(r"Could not find '([\w.]+)/([\w.]+)'", first)
    if missing and missing.group(1) in groups():
        return _not_an_option(*missing.groups())
    unquoted = _unquoted_path(overrides) if "mismatched input" in first else None
    if unquoted:
        key, value = unquoted
        return (
            f"the value of {key} holds '=' or ',', which Hydra reads as its own syntax: quote "
            f"it, e.g. '{key}=\"{value}\"' (single quotes for the shell, double for Hydra)"
        )
    there = re.search(r"Could not append to config. An item is already at '([\w.]+)'", first)
    if there:
        key = there.group(1)
        given = next((o for o in overrides if o.lstrip("+").startswith(f"{key}=")), f"{key}=...")
        return f"{key} is a key of the config already: drop the + ({given.lstrip('+')})"
    unknown = re.search(r"Could not override '([\w.]+)'", first)
    if unknown:
        key = unknown.group(1)
        try:
            near = _suggestion(key, _group_choices(overrides))
        except Exception:  # noqa: BLE001 - a hint is a bonus; the error stands without it
            near = ""
        hint = f"; did you mean {near}?" if near else ""
        if key.split(".")[0] in BUILT_FROM:  # a new key there would be refused when it is built
            return f"{key} is neither a config group nor a key of the config{hint}"
        return (
            f"{key} is neither a config group nor a key of the config{hint} "
            f"(+{key}=VALUE adds a new key)"
        )
    return first


def _unquoted_path(overrides: Sequence[str]) -> tuple[str, str] | None:
    """The first ``key=value`` whose unquoted value holds ``=`` (or a ``,`` in a path): a run
    folder of a sweep (``0_attention=global,score=dot``) given as it is."""
    for text in overrides:
        key, _, value = str(text).partition("=")
        if value and value[:1] not in "\"'[{" and ("=" in value or ("," in value and "/" in value)):
            return key, value
    return None


def compose(overrides: Sequence[str], config_name: str = "train", hydra: bool = False):
    """``conf/<name>.yaml`` with ``overrides``, composed as ``python -m luong_lit
    train`` does (``hydra``: with Hydra's own config); a bad override is one
    :class:`ConfigError` that names it and its nearest match."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        cfg = _raw_compose(overrides, config_name, hydra)
    except UserError:
        raise
    except (HydraException, OmegaConfBaseException, ValueError) as err:  # ValueError: attention=5
        raise ConfigError(f"cannot compose the config: {explain(str(err), overrides)}") from None
    check_switches(cfg)
    return cfg


#: the paper's switches: set at the config's root, where recipes read them too (the paper's
#: epochs and halving follow ``dropout``); ``model.net`` only repeats them
SWITCHES = ("dropout", "feed_input", "reverse_source")


def check_switches(cfg) -> None:
    """Refuse a paper switch (:data:`SWITCHES`) set under ``model.net`` instead of at the root,
    where the rest of the config would not see it."""
    from omegaconf import OmegaConf

    net = OmegaConf.select(cfg, "model.net")
    # model.net is a config group: a mapping
    raw = (
        cast(dict[str, Any], OmegaConf.to_container(net, resolve=False)) if net is not None else {}
    )
    for key in [k for k in SWITCHES if k in raw]:
        if raw[key] != f"${{{key}}}":
            raise ConfigError(
                f"model.net.{key} is set from {key} at the config's root (the recipe reads it "
                f"too): set {key}={str(net.get(key)).lower()} instead"
            )


def check_seed(seed: object) -> None:
    """``seed``: an integer in numpy's range of seeds (or null: Lightning picks one)."""
    if seed is None:
        return
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        why = f"is out of range: it must be an integer from 0 to {2**32 - 1}, or null"
        raise OptionError("seed", seed, why)


def check_sweep(overrides: Sequence[str]) -> None:
    """A ``-m`` sweep's overrides, checked before Hydra starts it: its jobs compose (those of
    :func:`luong_lit.sweeps.launchers.sweep_jobs`), the first one's seed is one, and its
    launcher can start here."""
    jobs = sweep_jobs(overrides, groups())
    if not jobs:
        return
    for job in jobs[1:]:
        compose(job)
    cfg = compose(jobs[0], hydra=True)
    check_seed(cfg.get("seed"))
    launcher = cfg.hydra.launcher
    choice = cfg.hydra.runtime.choices.get("hydra/launcher")
    check_launcher(str(launcher.get("_target_", "")), str(choice))


def _launcher(overrides: Sequence[str]) -> str:
    chosen = [o.split("=", 1)[1] for o in overrides if o.startswith("hydra/launcher=")]
    return chosen[-1] if chosen else "basic"


def hydra_error(err: BaseException, overrides: Sequence[str]) -> UserError:
    """What Hydra raised while composing the config or launching the jobs, as one
    :class:`~luong_lit.errors.UserError`: ours if it wraps one, a launcher that cannot start,
    a bad override (named, with its nearest match), else Hydra's first line."""
    from hydra.errors import ConfigCompositionException, OverrideParseException

    ours = find_user_error(err)
    if ours is not None:
        return ours
    text = str(err).strip()
    said = launch_error(text, _launcher(overrides))
    if said is None and (
        isinstance(err, (ConfigCompositionException, OverrideParseException))
        or "override must be a string" in text
    ):
        said = f"cannot compose the config: {explain(text, overrides)}"
    first = text.splitlines()[0] if text else type(err).__name__
    return ConfigError(said or f"Hydra cannot run it: {first}")
