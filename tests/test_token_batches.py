"""Token-based batches (``data.max_tokens``, fairseq's convention) and gradient accumulation
normalised as one large batch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import compose_cfg, small_model, tiny_overrides

from luong_lit.data.loading.batching import Batch, BucketBatchSampler, collate
from luong_lit.errors import UserError
from luong_lit.nn.fast.static import static_nll
from luong_lit.training.loss_norm import loss_denominator


def test_token_batches_never_exceed_the_budget_and_hold_every_sentence_once():
    rng = np.random.default_rng(0)
    src, tgt = rng.integers(1, 51, 2000), rng.integers(1, 51, 2000)
    for budget in (51, 200, 1000):
        batches = BucketBatchSampler(src, tgt, budget, batch_by="tokens", seed=1).batches()
        padded = [len(b) * (int(tgt[b].max()) + 1) for b in batches]
        assert max(padded) <= budget
        assert sorted(int(i) for b in batches for i in b) == list(range(2000))
        spread = np.mean([int(tgt[b].max()) - int(tgt[b].min()) for b in batches])
        assert spread < 5  # sentences of similar length together


def pair(seed: int, n: int) -> list[tuple[int, list[int], list[int]]]:
    g = torch.Generator().manual_seed(seed)
    lens = torch.randint(2, 9, (n, 2), generator=g).tolist()
    ids = [(torch.randint(4, 20, (s,), generator=g), torch.randint(4, 20, (t,), generator=g))
           for s, t in lens]  # fmt: skip
    return [(i, s.tolist(), t.tolist()) for i, (s, t) in enumerate(ids)]


def grads(model, loss) -> list[torch.Tensor]:
    model.zero_grad()
    loss.backward()
    return [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("loss_norm", ["sentences", "tokens"])
def test_one_accumulated_step_equals_one_large_batchs_gradient(loss_norm):
    torch.manual_seed(0)
    model = small_model()
    a, b = pair(1, 3), pair(2, 5)
    group = (8, sum(len(t) + 1 for _, _, t in a + b))  # the step's sentences and tokens
    parts = []
    for examples in (a, b):
        batch = collate(examples)
        batch.group = group
        nll, tokens = static_nll(model, batch.src, batch.src_len, batch.tgt_in, batch.tgt_out)
        parts.append(nll / loss_denominator(loss_norm, batch, tokens, 2, 128) / 2)  # as Lightning
    accumulated = grads(model, sum(parts))
    big = collate(a + [(i + 3, s, t) for i, s, t in b])
    nll, tokens = static_nll(model, big.src, big.src_len, big.tgt_in, big.tgt_out)
    whole = grads(model, nll / loss_denominator(loss_norm, big, tokens, 1, 128))
    for x, y in zip(accumulated, whole):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-7)


def test_the_train_loader_gives_each_batch_its_steps_totals(toy_corpus, tmp_path):
    from luong_lit.data.loading.datamodule import TranslationDataModule

    cfg = compose_cfg(
        [*tiny_overrides(toy_corpus), "data.max_tokens=40", "data.max_len=20"], tmp_path
    )
    from omegaconf import OmegaConf

    data = OmegaConf.to_container(cfg.data, resolve=True)
    dm = TranslationDataModule(**{k: v for k, v in data.items() if not k.startswith("_")})
    dm.setup("fit")
    dm._accumulate = lambda: 3  # noqa: SLF001 - as a trainer with accumulate_grad_batches=3
    found: list[Batch] = list(dm.train_dataloader())
    assert all(b.num_tgt_tokens <= 40 for b in found)
    for start in range(0, len(found), 3):
        group = found[start : start + 3]
        totals = (sum(len(b) for b in group), sum(b.num_tgt_tokens for b in group))
        assert all(b.group == totals for b in group)


def test_max_tokens_must_hold_the_longest_sentence(toy_corpus, tmp_path):
    from luong_lit.training.build import build
    from luong_lit.training.run_folder import RunFolder

    cfg = compose_cfg([*tiny_overrides(toy_corpus), "data.max_tokens=30", "data.max_len=50"],
                      tmp_path)  # fmt: skip
    with pytest.raises(UserError, match="max_tokens=30 is out of range"):
        build(cfg, RunFolder.open(cfg))
