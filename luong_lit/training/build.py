"""A run's datamodule, LightningModule and Trainer from its composed config, in its folder
(:func:`build`), and what every checkpoint keeps besides the weights (:func:`checkpoint_meta`).

Every object is built before any data is read, so that each checks its own options once, at
start-up (:mod:`luong_lit.validate`); the objects and their one-line errors are
:mod:`luong_lit.training.instantiate`'s.
"""

from __future__ import annotations

import logging
from typing import Any

from omegaconf import DictConfig, OmegaConf

from luong_lit.checkpoint import CheckpointMeta
from luong_lit.checkpoint.groups import data_options, net_options, preprocessing
from luong_lit.data.sources.registry import cased_target_file
from luong_lit.data.text.user_text import user_text
from luong_lit.plugins import parts_of
from luong_lit.reports import check_current_name
from luong_lit.runtime import configure_cpu_from, cuda_starting, quiet
from luong_lit.training import finetune
from luong_lit.training.checkpoint_io import WRITES, write_checkpoints
from luong_lit.training.instantiate import instantiate_at, lightning_module, model_parts, trainer_of
from luong_lit.training.run_folder import RunFolder
from luong_lit.validate import integer, one_of

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
        overrides=tuple(
            o for o in finetune.command_overrides() if not o.startswith("ckpt_path=")
        ),  # as asked: to resume as it was  # fmt: skip
        preprocess=None if recipe is None else preprocessing(recipe),
        recaser=text.get("recaser"),
        sentencepiece=pieces,
        parts=parts_of(net, data.get("dataset")),  # what registered a part of the user's own
    )


def build(cfg: DictConfig, folder: RunFolder):
    """Datamodule (set up), LightningModule and Trainer from a composed config, in the run's
    ``folder`` (:meth:`RunFolder.open`); with ``init_from``, the model starts from that
    checkpoint's weights and vocabularies (a run resuming from its own checkpoint takes both
    from there)."""
    from lightning.pytorch import seed_everything

    check_run_options(cfg)
    configure_cpu_from(cfg)
    quiet(resuming=folder.kind == "resume")
    seed_everything(cfg.seed, workers=True)
    dm = instantiate_at("data", cfg.data)
    if folder.vocab is not None:  # a fine-tuned model's vocabularies
        dm.given_vocab = folder.vocab
    make_net, parts = model_parts(cfg)
    trainer = trainer_of(cfg)
    with cuda_starting(_one_device(trainer)):  # meanwhile:
        dm.setup("fit")  # the first data read, after every option is checked
        net = make_net(src_vocab_size=len(dm.src_vocab), tgt_vocab_size=len(dm.tgt_vocab))
        model = lightning_module(cfg, net, parts, checkpoint_meta(cfg, dm).to_dict())
    for logger in trainer.loggers:  # the resolved config, for dashboards (W&B, TensorBoard hparams)
        logger.log_hyperparams(resolved(cfg))
    write_checkpoints(trainer, cfg.get("checkpoint_writes", "auto"))  # off the training thread?
    if folder.start is not None:
        resumed = folder.resume_from is not None
        finetune.start_from(model, dm, folder.start, cfg.get("freeze"), resumed=resumed)
    return dm, model, trainer


def _one_device(trainer):
    """The device of a run on one device in this process (none for data-parallel strategies)."""
    from lightning.pytorch.strategies import SingleDeviceStrategy

    strategy = trainer.strategy
    return strategy.root_device if isinstance(strategy, SingleDeviceStrategy) else None


def check_run_options(cfg: DictConfig) -> None:
    """The run's own options, before anything is built: ``threads``, the sweep's
    ``objective`` (a figure's current name), ``checkpoint_writes``, ``trainer.max_epochs``."""
    check_current_name("objective", cfg.get("objective"))
    integer("threads", cfg.get("threads"), 1, nullable=True)
    one_of("checkpoint_writes", cfg.get("checkpoint_writes", "auto"), WRITES)
    max_epochs = cfg.trainer.get("max_epochs")
    if max_epochs != -1:  # -1: no limit (Lightning's convention)
        integer("trainer.max_epochs", max_epochs, 1, nullable=True)
