"""The datamodule, LightningModule and Trainer of a run, from its composed config.

Every object is built before any data is read, so that each checks its own options once, at
start-up (:mod:`luong_lit.validate`); the network is first built on the ``meta`` device with
stand-in vocabulary sizes, then for real once the vocabularies exist. An error is named by the
option's path in the config (:mod:`luong_lit.training.instantiate`).
"""

from __future__ import annotations

import logging
from functools import partial
from pathlib import Path
from typing import Any, cast

import torch
from lightning.pytorch.plugins.io import TorchCheckpointIO
from omegaconf import DictConfig, OmegaConf

from luong_lit.checkpoint import CheckpointMeta, atomic_save
from luong_lit.checkpoint.groups import data_options, net_options, preprocessing
from luong_lit.data.sources.registry import cased_target_file
from luong_lit.data.text.user_text import user_text
from luong_lit.errors import ConfigError
from luong_lit.nn.build import build_net
from luong_lit.plugins import parts_of
from luong_lit.quiet import quiet
from luong_lit.runtime import configure_cpu_from
from luong_lit.training import finetune
from luong_lit.training.instantiate import config_error, instantiate_all, instantiate_at, refused
from luong_lit.training.lightning_internals import (
    check_lightning_version,
    leave_signals_to_the_kit,
    observe_ranks_gently,
)
from luong_lit.training.lost_ranks import ddp_strategy
from luong_lit.training.precision import note_cpu_mixed
from luong_lit.training.progress import progress_bar
from luong_lit.training.stopping import check_current_name
from luong_lit.validate import integer

log = logging.getLogger(__name__)


def resolved(cfg: DictConfig) -> dict[str, Any]:
    """The config as plain data, resolved where it can be (``${hydra:...}`` needs a Hydra app)."""
    try:
        return OmegaConf.to_container(cfg, resolve=True)
    except Exception:  # noqa: BLE001 - ${hydra:...} outside a Hydra app: keep it unresolved
        return OmegaConf.to_container(cfg, resolve=False)


def checkpoint_meta(cfg: DictConfig, dm) -> CheckpointMeta:
    """What every checkpoint keeps besides the weights: the model and data description, the
    vocabularies and any sentencepiece models, so that decoding needs no training data."""
    data = OmegaConf.to_container(cfg.data, resolve=True)
    text = user_text(data, cased_target_file(data))  # translate: raw text in, natural text out
    pieces = None
    if dm.tokenisation.tokenizer == "sentencepiece":  # translating later needs the same pieces
        pieces = {side: tok.proto() for side, tok in dm.tokenizers.items()}
    recipe = text.get("preprocess")
    net = OmegaConf.to_container(cfg.model.net, resolve=True)
    return CheckpointMeta(
        net=net_options(net),
        src_vocab=tuple(dm.src_vocab.itos),
        tgt_vocab=tuple(dm.tgt_vocab.itos),
        data=data_options(data),
        overrides=tuple(_overrides()),  # how the run was asked for (to resume it as it was)
        preprocess=None if recipe is None else preprocessing(recipe),
        recaser=text.get("recaser"),
        sentencepiece=pieces,
        parts=parts_of(net, data.get("dataset")),  # what registered a part of the user's own
    )


def checkpoint_extras(cfg: DictConfig, dm) -> dict[str, Any]:
    """:func:`checkpoint_meta` as the plain data every checkpoint stores."""
    return checkpoint_meta(cfg, dm).to_dict()


def _overrides() -> list[str]:
    """The command line's overrides of this Hydra run (none outside a Hydra app)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return []
    return [o for o in HydraConfig.get().overrides.task if not o.startswith("ckpt_path=")]


class AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning writes every checkpoint to a temporary file in the same directory, then renames
    it over the target (:func:`luong_lit.checkpoint.atomic_save`): a crash mid-write leaves the
    previous checkpoint intact."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path, storage_options=None) -> None:
        atomic_save(checkpoint, path)


def plugins() -> list[Any]:
    """Atomic checkpoint writes; on SLURM, Lightning's environment without its own requeue (a
    sweep's submitit launcher requeues, after :class:`~luong_lit.training.signals.SignalCheckpoint`
    has saved the step: one mechanism, not two)."""
    from lightning.pytorch.plugins.environments import SLURMEnvironment

    found: list[Any] = [AtomicCheckpointIO()]
    if SLURMEnvironment.detect():
        found.append(SLURMEnvironment(auto_requeue=False))
    return found


def _module(cfg: DictConfig, net, parts: dict[str, Any], extra_state: dict | None = None):
    """The LightningModule of ``cfg.model`` around ``net``."""
    return instantiate_at(
        "model", cfg.model, net=net, extra_state=extra_state, _recursive_=False, _convert_="all",
        **parts,
    )  # fmt: skip


def net_description(cfg: DictConfig) -> dict[str, Any]:
    """``model.net`` as the plain data that the network's one builder reads
    (:func:`luong_lit.nn.build.build_net`), as a checkpoint keeps it."""
    return cast(dict[str, Any], OmegaConf.to_container(cfg.model.net, resolve=True))


def _model_parts(cfg: DictConfig) -> tuple[Any, dict[str, Any]]:
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
        _module(cfg, probe, parts)
    return make_net, parts


def _trainer(cfg: DictConfig):
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


def build(cfg: DictConfig, resuming: Path | None = None, resumed: bool | None = None):
    """Datamodule (set up), LightningModule and Trainer from a composed config; with
    ``init_from``, the model starts from that checkpoint's weights and vocabularies (a run
    ``resuming`` from its own checkpoint takes both from there). ``resumed``: the trainer
    resumes (a file or a named checkpoint; unset: whether ``resuming`` is given), so that
    Lightning's resume warnings are filtered too."""
    from lightning.pytorch import seed_everything

    configure_cpu_from(cfg)
    check_current_name("objective", cfg.get("objective"))
    max_epochs = cfg.trainer.get("max_epochs")
    if max_epochs != -1:  # -1: no limit (Lightning's convention)
        integer("trainer.max_epochs", max_epochs, 1, nullable=True)
    quiet(resuming=resuming is not None if resumed is None else resumed)
    seed_everything(cfg.seed, workers=True)
    source = finetune.source_of(cfg)
    dm = instantiate_at("data", cfg.data)
    if source is not None:  # the fine-tuned model's vocabularies
        dm.given_vocab = finetune.vocabularies(resuming or source)
    make_net, parts = _model_parts(cfg)
    trainer = _trainer(cfg)
    dm.setup("fit")  # the first data read, after every option is checked
    net = make_net(src_vocab_size=len(dm.src_vocab), tgt_vocab_size=len(dm.tgt_vocab))
    model = _module(cfg, net, parts, checkpoint_extras(cfg, dm))
    if source is not None:
        finetune.start_from(model, dm, source, cfg.get("freeze"), resumed=resuming is not None)
    for logger in trainer.loggers:  # the resolved config, for dashboards (W&B, TensorBoard hparams)
        logger.log_hyperparams(resolved(cfg))
    note_cpu_mixed(trainer)
    note_data_parallel(trainer, cfg)
    return dm, model, trainer


def note_data_parallel(trainer, cfg: DictConfig) -> None:
    """One line at the start of a data-parallel run: what a step's batch is, every rank's."""
    ranks = trainer.world_size
    if ranks > 1 and trainer.is_global_zero:
        each, unit = cfg.data.batch_size, cfg.data.get("batch_by", "sentences")
        log.info(
            "data-parallel: %d ranks x %s %s (data.batch_size, each rank's) = %s %s a step",
            ranks, each, unit, ranks * int(each), unit,
        )  # fmt: skip
