"""Objects built from config nodes, every error named by its option: the one place where what a
constructor, Hydra or Lightning raised becomes a :class:`~luong_lit.errors.ConfigError`.

* A key the target does not take is refused before anything is built, with the keys it does
  take (read from its signature).
* Our own option checks (:class:`~luong_lit.validate.OptionError`) get the node's path
  (``model.net.hidden_size``); any other :class:`~luong_lit.errors.UserError` passes as it is.
* Lightning's ``MisconfigurationException`` (a trainer option it refuses) becomes one line, as
  does any error of a third party's constructor that is asked to (``refuses=True``).
"""

from __future__ import annotations

import inspect
from typing import Any

import hydra
from omegaconf import DictConfig

from luong_lit.errors import ConfigError, UserError, find_cause, find_user_error
from luong_lit.validate import OptionError

HYDRA_KEYS = {"_target_", "_partial_", "_recursive_", "_convert_", "_args_"}


def options_of(target: str | None) -> list[str] | None:
    """The keyword arguments a ``_target_`` takes; None if it takes any (``**kwargs``) or
    cannot be read."""
    try:
        obj = hydra.utils.get_object(target) if target else None
        params = list(inspect.signature(obj).parameters.values()) if obj is not None else None
    except (ImportError, ValueError, TypeError, AttributeError):
        return None
    if params is None or any(p.kind == p.VAR_KEYWORD for p in params):
        return None
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in params if p.kind in kinds and p.name != "self"]


def check_keys(path: str, node: Any, given: dict[str, Any]) -> None:
    """Refuse a key of ``node`` (or of the keywords ``given`` beside it) that its ``_target_``
    does not take, naming the key by its path and listing the keys it does take."""
    if not isinstance(node, DictConfig) or "_target_" not in node:
        return
    known = options_of(node.get("_target_"))
    if known is None:
        return
    unknown = sorted((set(node.keys()) | set(given)) - HYDRA_KEYS - set(known))
    if unknown:
        raise ConfigError(
            f"{path}.{unknown[0]} is not an option of {node.get('_target_')}; its options: "
            + ", ".join(known)
        )


EXTRAS = {  # a package a config option needs -> the extra of the kit that installs it
    "wandb": "wandb",
    "submitit": "launchers",
    "joblib": "launchers",
    "optuna": "launchers",
    "aiohttp": "serve",
    "eflomal": "align",
}


def missing_package(path: str, err: BaseException) -> ConfigError | None:
    """A package that the object at ``path`` needs is not installed: one line with the README's
    install command for the kit's extra that holds it (never ``pip install -U``)."""
    missing = find_cause(err, lambda e: isinstance(e, ModuleNotFoundError))
    if missing is None:
        return None
    text = f"{getattr(missing, 'name', None) or ''} {missing}"
    package = next((p for p in EXTRAS if p in text), getattr(missing, "name", None))
    extra = EXTRAS.get(package)
    how = f'pip install -e ".[{extra}]" (from a wheel: "luong_lit[{extra}]")' if extra else ""
    how = how or f"pip install {package}"
    return ConfigError(f"{path} needs {package}, which is not installed: {how}")


def config_error(path: str, err: BaseException) -> BaseException:
    """What building the config at ``path`` raised, as a user error that names the option."""
    ours = find_user_error(err)
    if isinstance(ours, OptionError):
        return ours.within(path)
    if isinstance(ours, UserError):
        return ours
    missing = missing_package(path, err)
    if missing is not None:
        return missing
    from lightning.fabric.utilities.exceptions import MisconfigurationException

    lightning = find_cause(err, lambda e: isinstance(e, MisconfigurationException))
    if lightning is not None:  # Lightning's word on a trainer option: ours, in one line
        return ConfigError(f"{path}: {lightning}")
    return err


def refused(path: str, err: BaseException) -> ConfigError:
    """A value the object at ``path`` refused (its own words, after its type)."""
    cause = err.__cause__ or err
    return ConfigError(f"{path}: {type(cause).__name__}: {cause}")


def instantiate_at(path: str, node: Any, *, refuses: bool = False, **kwargs) -> Any:
    """``hydra.utils.instantiate(node, **kwargs)``, its errors named by ``path``; ``refuses``:
    any error of the target (a third party's constructor, such as Lightning's ``Trainer``)
    means it refused a value (:func:`refused`)."""
    check_keys(path, node, {k: v for k, v in kwargs.items() if not k.startswith("_")})
    try:
        return hydra.utils.instantiate(node, **kwargs)
    except Exception as err:  # noqa: BLE001 - turned into one clear line where it is ours
        translated = config_error(path, err)
        if translated is err and refuses:
            translated = refused(path, err)
        raise translated from None


def instantiate_all(path: str, node: DictConfig | None) -> list[Any]:
    """Instantiate every child of ``node`` that has a ``_target_`` (callbacks, loggers); a
    factory that returns None (a callback switched off by its options) adds nothing."""
    if not node:
        return []
    made = [
        instantiate_at(f"{path}.{k}", v)
        for k, v in node.items()
        if isinstance(v, DictConfig) and "_target_" in v
    ]
    return [x for x in made if x is not None]
