"""The datamodule, LightningModule and Trainer of a run, from its composed config."""

from __future__ import annotations

from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from luong_lit.data.user_text import user_text
from luong_lit.training.checkpoint_io import AtomicCheckpointIO


def instantiate_all(node: DictConfig | None) -> list[Any]:
    """Instantiate every child of ``node`` that has a ``_target_`` (callbacks, loggers)."""
    if not node:
        return []
    return [
        hydra.utils.instantiate(v)
        for v in node.values()
        if isinstance(v, DictConfig) and "_target_" in v
    ]


def resolved(cfg: DictConfig) -> dict[str, Any]:
    """The config as plain data, resolved where it can be (``${hydra:...}`` needs a Hydra app)."""
    try:
        return OmegaConf.to_container(cfg, resolve=True)
    except Exception:  # noqa: BLE001 - ${hydra:...} outside a Hydra app: keep it unresolved
        return OmegaConf.to_container(cfg, resolve=False)


def checkpoint_extras(cfg: DictConfig, dm) -> dict[str, Any]:
    """What every checkpoint keeps besides the weights: the model and data description, the
    vocabularies and any sentencepiece models, so that decoding needs no training data."""
    extra = {
        "net": OmegaConf.to_container(cfg.model.net, resolve=True),
        "src_vocab": dm.src_vocab.itos,
        "tgt_vocab": dm.tgt_vocab.itos,
        "data": OmegaConf.to_container(cfg.data, resolve=True),
    }
    extra.update(user_text(extra["data"]))  # translate: raw text in, natural text out
    if dm.tokenizer_kind == "sentencepiece":  # translating later needs the same pieces
        extra["sentencepiece"] = {side: tok.proto() for side, tok in dm.tokenizers.items()}
    return extra


def plugins() -> list[Any]:
    """Atomic checkpoint writes; on SLURM, Lightning's environment without its own requeue (a
    sweep's submitit launcher requeues, after :class:`~luong_lit.training.resume.SignalCheckpoint`
    has saved the step: one mechanism, not two)."""
    from lightning.pytorch.plugins.environments import SLURMEnvironment

    found: list[Any] = [AtomicCheckpointIO()]
    if SLURMEnvironment.detect():
        found.append(SLURMEnvironment(auto_requeue=False))
    return found


def build(cfg: DictConfig):
    """Datamodule (set up), LightningModule and Trainer from a composed config."""
    from lightning.pytorch import seed_everything

    seed_everything(cfg.seed, workers=True)
    dm = hydra.utils.instantiate(cfg.data)
    dm.setup("fit")
    net = hydra.utils.instantiate(cfg.model.net)(
        src_vocab_size=len(dm.src_vocab), tgt_vocab_size=len(dm.tgt_vocab)
    )
    model = hydra.utils.instantiate(
        cfg.model,
        net=net,
        extra_state=checkpoint_extras(cfg, dm),
        _recursive_=False,
        _convert_="all",
        optimizer=hydra.utils.instantiate(cfg.model.optimizer),
    )
    trainer = hydra.utils.instantiate(
        cfg.trainer,
        callbacks=instantiate_all(cfg.get("callbacks")),
        logger=instantiate_all(cfg.get("logger")) or False,
        plugins=plugins(),
    )
    for logger in trainer.loggers:  # the resolved config, for dashboards (W&B, TensorBoard hparams)
        logger.log_hyperparams(resolved(cfg))
    return dm, model, trainer
