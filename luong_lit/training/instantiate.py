"""A run's objects built from its config nodes, every error named by its option: the network
factory, the engine, optimizer and schedule (:func:`model_parts`), the LightningModule
(:func:`lightning_module`), the callbacks, loggers and Trainer (:func:`trainer_of`); the one
place where what a constructor, Hydra or Lightning raised becomes a
:class:`~luong_lit.errors.ConfigError`.

The network and the module are first built on the ``meta`` device with stand-in vocabulary
sizes, the optimizer on a stand-in parameter, so that each checks its options before any data
is read; the network is built for real once the vocabularies exist.

* A key the target does not take is refused before anything is built, with the keys it does
  take (read from its signature).
* Our own option checks (:class:`~luong_lit.validate.OptionError`) get the node's path
  (``model.net.hidden_size``); any other :class:`~luong_lit.errors.UserError` passes as it is.
* Lightning's ``MisconfigurationException`` (a trainer option it refuses) becomes one line, as
  does any error of a third party's constructor that is asked to (``refuses=True``).
"""

from __future__ import annotations

import datetime
import inspect
from functools import partial
from typing import Any, cast

import hydra
import torch
from omegaconf import DictConfig, OmegaConf

from luong_lit.errors import ConfigError, UserError, find_cause, find_user_error
from luong_lit.nn.build import build_net
from luong_lit.training import progress
from luong_lit.training.checkpoint_io import AtomicCheckpointIO
from luong_lit.training.lightning_internals import (
    check_lightning_version,
    leave_signals_to_the_kit,
    observe_ranks_gently,
)
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


def plugins() -> list[Any]:
    """Atomic checkpoint writes (:mod:`~luong_lit.training.checkpoint_io`; how:
    :func:`~luong_lit.training.checkpoint_io.write_checkpoints`); on SLURM, Lightning's
    environment without its own requeue (a sweep's submitit launcher requeues, after
    :class:`~luong_lit.training.signals.SignalCheckpoint` has saved the step: one mechanism,
    not two)."""
    from lightning.pytorch.plugins.environments import SLURMEnvironment

    found: list[Any] = [AtomicCheckpointIO()]
    if SLURMEnvironment.detect():
        found.append(SLURMEnvironment(auto_requeue=False))
    return found


def lightning_module(cfg: DictConfig, net, parts: dict[str, Any], extra_state: dict | None = None):
    """The LightningModule of ``cfg.model`` around ``net``."""
    return instantiate_at(
        "model", cfg.model, net=net, extra_state=extra_state, _recursive_=False, _convert_="all",
        **parts,
    )  # fmt: skip


def net_description(cfg: DictConfig) -> dict[str, Any]:
    """``model.net`` as the plain data that the network's one builder reads
    (:func:`luong_lit.nn.build.build_net`), as a checkpoint keeps it."""
    return cast(dict[str, Any], OmegaConf.to_container(cfg.model.net, resolve=True))


def model_parts(cfg: DictConfig) -> tuple[Any, dict[str, Any]]:
    """The network factory, the engine, the optimizer factory and the schedule, each checked:
    the network and the module are built once on the ``meta`` device, the optimizer once on a
    stand-in parameter."""
    make_net = partial(build_net, net_description(cfg))
    parts = {
        "engine": instantiate_at("engine", cfg.engine, _convert_="all"),
        "optimizer": instantiate_at("model.optimizer", cfg.model.optimizer),
        "scheduler": instantiate_at("model.scheduler", cfg.model.get("scheduler")),
    }
    try:
        parts["optimizer"](params=[torch.nn.Parameter(torch.zeros(1))])
    except (ValueError, TypeError) as err:
        raise refused("model.optimizer", err) from None
    with torch.device("meta"):
        try:
            probe = make_net(src_vocab_size=8, tgt_vocab_size=8)
        except Exception as err:  # noqa: BLE001 - named by its option where it is ours
            raise config_error("model.net", err) from None
        lightning_module(cfg, probe, parts)
    return make_net, parts


def ddp_strategy(strategy, timeout_s: float | None):
    """The trainer's strategy with the process group's ``timeout_s`` (Lightning's DDP strategy
    for ``ddp`` and ``ddp_spawn``); any other strategy as it is."""
    if strategy not in ("ddp", "ddp_spawn") or timeout_s is None:
        return strategy
    from lightning.pytorch.strategies import DDPStrategy

    start = {"start_method": "spawn"} if strategy == "ddp_spawn" else {}
    return DDPStrategy(timeout=datetime.timedelta(seconds=float(timeout_s)), **start)


def progress_bar(callbacks: list, wanted: bool):
    """The progress bar to add to a trainer's ``callbacks``: tqdm's, redrawn every
    ``read_every_n_steps`` steps of the :class:`~.progress.ProgressLog` among them, when ``wanted``
    (``trainer.enable_progress_bar``) and both standard streams are terminals; else None (no
    bar: the :class:`ProgressLog` lines instead)."""
    if not (wanted and progress.is_terminal()):
        return None
    found = next((c for c in callbacks if isinstance(c, progress.ProgressLog)), None)
    return progress.RunProgressBar(refresh_rate=found.read_every if found else 10)


def trainer_of(cfg: DictConfig):
    check_lightning_version()  # the kit reaches into Lightning: only the versions it was tested on
    if str(cfg.trainer.get("accelerator")) in ("gpu", "cuda") and not torch.cuda.is_available():
        raise ConfigError(
            "trainer=gpu asks for a CUDA GPU, and torch finds none here "
            "(torch.cuda.is_available() is false): train on the CPU with trainer=cpu, or "
            "install a CUDA build of torch (README, Installing)"
        )
    callbacks = instantiate_all("callbacks", cfg.get("callbacks"))
    bar = progress_bar(callbacks, bool(cfg.trainer.get("enable_progress_bar", True)))
    if bar is not None:  # at a terminal; elsewhere the lines of callbacks.progress
        callbacks.append(bar)
    loggers = instantiate_all("logger", cfg.get("logger")) or False
    named = cfg.trainer.get("strategy", "auto")
    if named == "ddp_spawn":
        refuse_spawned_ema(callbacks)
    strategy = ddp_strategy(named, cfg.get("ddp_timeout_s"))
    trainer = instantiate_at("trainer", cfg.trainer, refuses=True, callbacks=callbacks,
                             enable_progress_bar=bar is not None, logger=loggers,
                             plugins=plugins(), strategy=strategy)  # fmt: skip
    leave_signals_to_the_kit(trainer)  # the kit's handler is in charge (training/signals.py)
    observe_ranks_gently()  # a lost rank is said in one line (training/lost_ranks.py)
    return trainer


def refuse_spawned_ema(callbacks: list) -> None:
    """Lightning's weight averaging cannot be sent to ranks that ``ddp_spawn`` starts (its
    average function is a local one, which pickle refuses): one line, before any work."""
    from luong_lit.training.ema import AveragedWeights

    if any(isinstance(c, AveragedWeights) for c in callbacks):
        raise ConfigError("callbacks.ema.decay: Lightning's EMAWeightAveraging cannot be sent to "
                          "the ranks of trainer=ddp_sim (ddp_spawn pickles every callback); "
                          "use trainer=ddp, or leave the decay unset")  # fmt: skip
