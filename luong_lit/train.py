"""Train a model: ``python -m luong_lit.train [experiment=NAME] [overrides...]``.

Sweeps: ``python -m luong_lit.train -m attention=local_p,global score=dot,general``.
Every run writes its config, logs, checkpoints and ``results.json`` under its own directory.
"""
from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import hydra
import torch
from omegaconf import DictConfig, OmegaConf

from luong_lit.checkpoint import AtomicCheckpointIO, CheckpointError
from luong_lit.data.io import DataError
from luong_lit.nn import ConfigError
from luong_lit.runtime import configure_cpu_from

log = logging.getLogger(__name__)
USER_ERRORS = (DataError, ConfigError, CheckpointError)


def _instantiate_dict(node: DictConfig | None) -> list[Any]:
    """Instantiate every child of ``node`` that has a ``_target_`` (callbacks, loggers)."""
    if not node:
        return []
    return [hydra.utils.instantiate(v) for v in node.values() if isinstance(v, DictConfig) and "_target_" in v]


def _unwrap(err: BaseException) -> BaseException:
    """Hydra wraps errors raised in constructors; find ours underneath."""
    seen = err
    while seen is not None and not isinstance(seen, USER_ERRORS):
        seen = seen.__cause__ or seen.__context__
    return seen or err


def build(cfg: DictConfig):
    """Datamodule, LightningModule and Trainer from a composed config."""
    from lightning.pytorch import seed_everything

    seed_everything(cfg.seed, workers=True)
    dm = hydra.utils.instantiate(cfg.data)
    dm.setup("fit")
    net = hydra.utils.instantiate(cfg.model.net)(src_vocab_size=len(dm.src_vocab), tgt_vocab_size=len(dm.tgt_vocab))
    extra = {"net": OmegaConf.to_container(cfg.model.net, resolve=True),
             "src_vocab": dm.src_vocab.itos, "tgt_vocab": dm.tgt_vocab.itos,
             "data": OmegaConf.to_container(cfg.data, resolve=True)}
    if dm.tokenizer_kind == "sentencepiece":  # translating later needs the same pieces
        extra["sentencepiece"] = {side: tok.proto() for side, tok in dm.tokenizers.items()}
    model = hydra.utils.instantiate(cfg.model, net=net, extra_state=extra, _recursive_=False, _convert_="all",
                                    optimizer=hydra.utils.instantiate(cfg.model.optimizer))
    trainer = hydra.utils.instantiate(cfg.trainer, callbacks=_instantiate_dict(cfg.get("callbacks")),
                                      logger=_instantiate_dict(cfg.get("logger")) or False,
                                      plugins=[AtomicCheckpointIO()])
    for logger in trainer.loggers:  # the resolved config, for dashboards (W&B, TensorBoard hparams)
        logger.log_hyperparams(_resolved(cfg))
    return dm, model, trainer


def _resolved(cfg: DictConfig) -> dict[str, Any]:
    try:
        return OmegaConf.to_container(cfg, resolve=True)
    except Exception:  # noqa: BLE001 - ${hydra:...} outside a Hydra app: keep it unresolved
        return OmegaConf.to_container(cfg, resolve=False)


def evaluate_tests(dm, model, trainer, out_dir: Path) -> dict[str, Any]:
    """Perplexity and greedy BLEU of the best checkpoint on every configured test set."""
    from luong_lit.callbacks import dev_bleu
    from luong_lit.metrics.perplexity import perplexity

    ckpt = getattr(trainer.checkpoint_callback, "best_model_path", "")
    if ckpt:
        state = torch.load(ckpt, map_location="cpu", weights_only=True)["state_dict"]
        model.load_state_dict(state)
    net = model.net.eval()
    results: dict[str, Any] = {"checkpoint": Path(ckpt).name if ckpt else "final weights"}
    for name in dm.test_spec:
        ppl = perplexity(net, dm.splits[name].examples())
        results[name] = {"ppl": ppl, "bleu_greedy": dev_bleu(net, dm, name)}
        log.info("test %s: ppl %.2f, greedy BLEU %.2f", name, ppl, results[name]["bleu_greedy"])
    (out_dir / "results.json").write_text(json.dumps(results, indent=2))
    return results


def train(cfg: DictConfig) -> dict[str, Any]:
    """Fit (resuming if ``ckpt_path`` is set), then evaluate the test sets."""
    configure_cpu_from(cfg)
    out_dir = Path(cfg.paths.output_dir)
    dm, model, trainer = build(cfg)
    trainer.fit(model, dm, ckpt_path=cfg.get("ckpt_path"))
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    if cfg.get("test_after_training") and dm.test_spec and trainer.is_global_zero:
        metrics["test"] = evaluate_tests(dm, model, trainer, out_dir)
    return metrics


@hydra.main(version_base="1.3", config_path="../conf", config_name="train")
def main(cfg: DictConfig) -> float | None:
    try:
        metrics = train(cfg)
    except Exception as err:  # noqa: BLE001 - turn our own errors into one clear line
        ours = _unwrap(err)
        if not isinstance(ours, USER_ERRORS):
            raise
        print(f"error: {ours}", file=sys.stderr)
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        if HydraConfig.get().mode == RunMode.MULTIRUN:
            return None  # the sweep goes on with its other jobs
        sys.exit(2)
    return metrics.get("val/ppl")


if __name__ == "__main__":
    main()
