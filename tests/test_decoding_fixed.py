"""``luong_lit.decoding.fixed``: the fixed-shape beam search finds exactly what the shrinking
one (``beam_search``, which drops finished sentences from the batch at every step on a CPU)
finds, in float64: hypotheses, raw and ranking scores and n-best order exactly, attention to
1e-12 (the shrinking search's products round by the rows it has left), across
length penalties, length bounds, the authors' decoder, prefixes, ensembles, the fast engine's
stepper and local attention; and its steps read nothing on the host but one flag a chunk."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from beam_helpers import B_, TRAP, A, BigramStub
from conftest import small_model, source_batch
from torch.utils._python_dispatch import TorchDispatchMode

from luong_lit.data.vocab import BOS_ID, EOS_ID
from luong_lit.decoding.beam import beam_search
from luong_lit.decoding.ensemble import Ensemble
from luong_lit.decoding.fixed import as_is, fixed_beam_search, most_steps
from luong_lit.decoding.prefix import Prefix
from luong_lit.decoding.search import AUTHORS, BeamSearch
from luong_lit.engines import FastEngine

SEARCHES = [
    BeamSearch(beam=4),
    BeamSearch(beam=4, n_best=3),
    BeamSearch(beam=3, length_penalty="avg", n_best=2),
    BeamSearch(beam=5, length_penalty=0.6),
    BeamSearch(beam=3, min_len_ratio=1.0, max_len_ratio=1.2, max_len_extra=0),
    BeamSearch(beam=2, max_len_ratio=0.0, max_len_extra=1),
    dataclasses.replace(AUTHORS, beam=6, stack_size=7),
]


def _net(seed: int, **options):
    torch.manual_seed(seed)
    sizes = {"embed_size": 12, "hidden_size": 12}
    return small_model(**{**sizes, **options}).double().eval()


def _same(old, new) -> None:
    assert [[(h.ids, h.score, h.norm_score) for h in s] for s in old] == [
        [(h.ids, h.score, h.norm_score) for h in s] for s in new
    ]
    for a, b in zip(old, new):
        for x, y in zip(a, b):
            assert (x.attention is None) == (y.attention is None)
            # the shrinking search's matrix products change their last bits with the rows left
            assert x.attention is None or torch.allclose(x.attention, y.attention, 0, 1e-12)


class Record(TorchDispatchMode):
    """The name of every operator dispatched while it is on, in order."""

    def __init__(self):
        super().__init__()
        self.names: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.name())
        return func(*args, **(kwargs or {}))


MODELS = {
    "global general": lambda: _net(0),
    "local-p, no feeding": lambda: _net(1, attention="local_p", feed_input=False),
    "fast stepper": lambda: FastEngine().for_decoding(_net(2)),
    "ensemble": lambda: Ensemble([_net(3), _net(4, attention="local_m", score="dot")]),
    "no attention": lambda: _net(5, attention="none", score=None, feed_input=False),
}


@pytest.mark.parametrize("name", MODELS)
def test_the_fixed_shape_search_finds_what_the_shrinking_one_finds(name):
    model = MODELS[name]()
    src, src_len = source_batch(9, S=9, seed=3)
    for cfg in SEARCHES:
        old = beam_search(model, src, src_len, cfg, every=1)
        for every in (1, 8):
            _same(old, fixed_beam_search(model, src, src_len, cfg, every=every))


@pytest.mark.parametrize("name", MODELS)
def test_in_chunks_counted_on_the_device_it_finds_the_same(name):
    """The search in chunks of steps on the carry's tensors, each step's index read from the
    device (what a CUDA graph of a chunk replays; here each chunk runs as it is): the same
    hypotheses, scores and attention as the shrinking search, chunks running past the
    longest output included."""
    model = MODELS[name]()
    src, src_len = source_batch(9, S=9, seed=3)
    for cfg in SEARCHES:
        old = beam_search(model, src, src_len, cfg, every=1)
        for every in (1, 3, 8):
            _same(old, fixed_beam_search(model, src, src_len, cfg, every=every, chunks=as_is))


def test_a_chunk_reads_nothing_on_the_host_and_repeats_its_operators():
    """Between two host reads, a chunk of steps: every chunk dispatches the same operators,
    and none of them reads the host (a captured graph could not)."""
    model = FastEngine().for_decoding(_net(7, attention="local_m").float())
    src, src_len = source_batch(8, S=9, seed=5)
    src_len[0] = 2
    with Record() as r:
        fixed_beam_search(model, src, src_len, BeamSearch(beam=3), every=4, chunks=as_is)
    names = r.names
    reads = [i for i, n in enumerate(names) if n == "aten::_local_scalar_dense"]
    between = [names[a + 1 : b] for a, b in zip(reads, reads[1:])]  # the warm-up, each chunk
    assert between[1][0] == "aten::fill_.Scalar"  # the device's step count, set once
    chunks = [between[1][1:], *between[2:]]
    assert len(chunks) >= 3 and all(c == chunks[0] for c in chunks)
    assert chunks[0].count("aten::_log_softmax") == 4  # a chunk: four steps
    assert "aten::nonzero" not in names


def test_the_same_with_prefixes_of_different_lengths():
    model = _net(6)
    src, src_len = source_batch(6, S=8, seed=4)
    prefix = Prefix.of([[5, 6], [], [7], [8, 9, 10], [], [11]], src.device)
    for cfg in SEARCHES[:4]:
        old = beam_search(model, src, src_len, cfg, every=1, prefix=prefix)
        _same(old, fixed_beam_search(model, src, src_len, cfg, prefix=prefix))


def test_a_step_dispatches_the_same_operators_whatever_the_batch_has_finished():
    """The steps of a batch whose sentences end at different steps dispatch the same operators
    in the same order (what one CUDA graph of a chunk of steps replays), and the only host read
    is the flag read every ``every`` steps."""
    model = FastEngine().for_decoding(_net(7).float())
    src, src_len = source_batch(8, S=9, seed=5)
    src_len[0] = 2  # one sentence ends long before the others may
    cfg = BeamSearch(beam=3)
    with Record() as r:
        fixed_beam_search(model, src, src_len, cfg, every=4)
    names = r.names
    reads = [i for i, n in enumerate(names) if n in ("aten::_local_scalar_dense", "aten::nonzero")]
    steps = [i for i, n in enumerate(names) if n == "aten::_log_softmax"]
    assert len(steps) >= 8
    chunk = [names[a:b] for a, b in zip(steps[1:], steps[2:])]  # each whole step after the first
    assert all(c == chunk[0] for c in chunk if "aten::_local_scalar_dense" not in c)
    in_loop = [i for i in reads if steps[0] < i < steps[-1]]
    assert len(in_loop) == (len(steps) - 1) // 4  # one flag a chunk of four steps


def test_the_buffers_hold_the_longest_output_a_width_allows():
    cfg = BeamSearch(max_len_ratio=1.5, max_len_extra=5)
    assert most_steps(10, cfg) == 15 + 5 + 1
    assert most_steps(3, dataclasses.replace(AUTHORS)) == 6 + 1  # floor(1.5 (3 + 1)) words


def test_the_same_on_the_bigram_stubs_ties_included():
    """Tables whose words tie (0.5 against 0.5): which of two equal candidates is kept must not
    depend on the batch's shape either."""
    tied = {BOS_ID: {A: 0.5, B_: 0.5}, A: {A: 0.5, EOS_ID: 0.5}, B_: {B_: 0.5, EOS_ID: 0.5}}
    for table in (TRAP, tied):
        stub = BigramStub(table)
        src, src_len = torch.full((3, 4), 7), torch.tensor([4, 2, 3])
        for cfg in (
            BeamSearch(beam=2, n_best=2),
            BeamSearch(beam=3, length_penalty="avg"),
            AUTHORS,
        ):
            cfg = dataclasses.replace(cfg, beam=min(cfg.beam, 6))
            _same(beam_search(stub, src, src_len, cfg, every=1),
                  fixed_beam_search(stub, src, src_len, cfg))  # fmt: skip


def test_a_beam_wider_than_the_vocabulary_is_refused_in_one_line():
    src, src_len = torch.full((2, 3), 7), torch.tensor([3, 2])
    with pytest.raises(ValueError, match="beam size 7 is larger than the target vocabulary of 6"):
        fixed_beam_search(BigramStub(TRAP), src, src_len, BeamSearch(beam=7))


def test_a_corpus_decodes_alike_with_either_search(monkeypatch):
    """``decode_corpus`` on an accelerator (``sync_every`` 8) searches at a fixed shape; on a
    CPU it drops finished sentences. Both give a corpus the same n-best lists and the same
    words after unknown-word replacement."""
    from luong_lit.data.vocab import Vocab
    from luong_lit.decoding import corpus

    model = _net(8, tgt_vocab_size=20)
    with torch.no_grad():
        model.decoder.W_s.bias[1] += 2.0  # <unk> now and then: words to replace
    g = torch.Generator().manual_seed(6)
    src_ids = [torch.randint(1, 20, (int(n),), generator=g).tolist()
               for n in torch.randint(0, 12, (23,), generator=g)]  # fmt: skip
    vocab = Vocab(["<pad>", "<unk>", "<s>", "</s>", *(f"w{i}" for i in range(16))])
    src_words = [[f"s{i}" for i in ids] for ids in src_ids]
    found = {}
    for every in (1, 8):
        monkeypatch.setattr(corpus, "sync_every", lambda device, every=every: every)
        assert (corpus.beam_for(torch.device("cpu")) is beam_search) == (every == 1)
        search = BeamSearch(beam=3, n_best=2, min_len_ratio=0.8)
        hyps = corpus.decode_corpus(model, src_ids, search=search, batch_size=5,
                                    keep_attention=True)  # fmt: skip
        found[every] = (hyps, corpus.output_words(hyps, vocab, src_words))
    _same(found[1][0], found[8][0])
    replaced = [w for ws in found[1][1] for w in ws if w.startswith("s")]  # a source word's
    assert found[1][1] == found[8][1] and replaced
