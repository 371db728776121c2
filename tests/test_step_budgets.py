"""What a decoder step asks of the host, counted on the CPU at the main job's shape (2x256,
global general, input feeding, its vocabularies; the fast engine's decode-time form): each
step of the fixed-shape beam search and of greedy search dispatches at most 70 operators that
compute (views, which launch no kernel on a GPU, not counted) and the steps read the host
once in 8 (``every=8``, a GPU's setting). The encoder, run once a batch, and the read of the
results at its end are not steps; ``scripts/benchmarks/host_reads.py`` counts them too. And
the fixed-shape training step reads nothing on the host."""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from luong_lit.decoding.fixed import fixed_beam_search
from luong_lit.decoding.greedy import greedy_decode
from luong_lit.decoding.search import BeamSearch
from luong_lit.engines import FastEngine

READS = {"aten::_local_scalar_dense", "aten::nonzero", "aten::is_nonzero", "aten::equal"}
BUDGET, EVERY = 70, 8


class Dispatched(TorchDispatchMode):
    """Each operator dispatched that is not a view (``views``: every one), by name, in order."""

    def __init__(self, views: bool = False) -> None:
        super().__init__()
        self.names: list[str] = []
        self.views = views

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.views or not func.is_view:
            self.names.append(func.name())
        return func(*args, **(kwargs or {}))


def main_job_stepper():
    from luong_lit.nn import Seq2Seq

    torch.manual_seed(0)
    net = Seq2Seq(src_vocab_size=5921, tgt_vocab_size=7859, embed_size=256, hidden_size=256,
                  num_layers=2, attention="global", score="general")  # fmt: skip
    return FastEngine().for_decoding(net.eval())


def per_step(names: list[str], marker: str) -> list[list[str]]:
    """The operators from one step's ``marker`` to the next's: one whole step each (the
    search's end of a step, the model's next step), the first step and the end left out."""
    at = [i for i, n in enumerate(names) if n == marker]
    assert len(at) >= 2 * EVERY, f"only {len(at)} steps"
    return [names[a:b] for a, b in zip(at[1:], at[2:])]


def check(steps: list[list[str]]) -> None:
    most = max(len(s) for s in steps)
    assert most <= BUDGET, f"a step dispatches {most} operators (budget {BUDGET})"
    reads = sum(n in READS for s in steps for n in s)
    assert reads <= len(steps) // EVERY, f"{reads} host reads in {len(steps)} steps"


@pytest.fixture(scope="module")
def batch():
    g = torch.Generator().manual_seed(1)
    src_len = torch.randint(9, 18, (8,), generator=g)
    src = torch.randint(4, 5921, (8, int(src_len.max())), generator=g)
    src[torch.arange(src.size(1)) >= src_len.unsqueeze(1)] = 0
    return src, src_len


def test_a_beam_step_stays_within_its_operators_and_reads_the_host_once_in_8(batch):
    stepper = main_job_stepper()
    with Dispatched() as d:
        fixed_beam_search(stepper, *batch, BeamSearch(beam=5), False, every=EVERY)
    check(per_step(d.names, "aten::_log_softmax"))


def test_a_greedy_step_likewise(batch):
    stepper = main_job_stepper()
    with Dispatched() as d:
        greedy_decode(stepper, *batch, every=EVERY)
    check(per_step(d.names, "aten::argmax"))


def test_the_fixed_shape_training_step_reads_nothing_and_encodes_in_a_call_a_layer():
    """The main job's model (``init_state`` last): its fixed-shape step's forward and backward
    read the host never, and its encoder dispatches as many operators for 8 source words as
    for 24 (one LSTM call a layer); the masked loop of ``init_state`` copy grows with them."""
    from luong_lit.data.loading.batching import collate
    from luong_lit.data.loading.buckets import pad_batch
    from luong_lit.nn import Seq2Seq
    from luong_lit.nn.fast.static import static_memory, static_nll

    def net(init_state):
        torch.manual_seed(0)
        return Seq2Seq(src_vocab_size=50, tgt_vocab_size=60, embed_size=16, hidden_size=16,
                       num_layers=2, init_state=init_state, src_eos=True, reverse_source=True,
                       dropout=0.2).train()  # fmt: skip

    def padded(S):
        g = torch.Generator().manual_seed(S)
        pairs = [(i, torch.randint(4, 50, (n,), generator=g).tolist(), [5] * 6)
                 for i, n in enumerate([S, S - 3, 2])]  # fmt: skip
        return pad_batch(collate(pairs), 4, S + 2, 8)

    def counted(fn):
        with Dispatched() as d:
            fn()
        return d.names

    p = padded(10)
    names = counted(lambda: static_nll(net("last"), p.src, p.src_len, p.tgt_in, p.tgt_out)[0]
                    .backward())  # fmt: skip
    assert not [n for n in names if n in READS]
    sizes = {}
    for init_state in ("last", "copy"):
        model = net(init_state)
        for S in (8, 24):
            b = padded(S)
            with Dispatched() as d:
                static_memory(model, b.src, b.src_len)
            sizes[init_state, S] = len(d.names)
    assert sizes["last", 8] == sizes["last", 24] < sizes["copy", 8] < sizes["copy", 24]


@pytest.mark.parametrize("clipping", ["all", "without_embeddings"])
def test_a_whole_fixed_shape_training_step_makes_nothing_from_the_host_nor_reads_it(
    toy_corpus, tmp_path, clipping
):
    """Lightning's whole step with the fixed-shape engine, as a GPU captures it
    (``engine.graphs=static``): from one step's start to the next (the module's hooks and
    logging, the loss, clipping, the optimizer, the schedule, the bar's and the loggers'
    bookkeeping) nothing is read from the device, and within the step's own hooks no tensor is
    made from host data (on a GPU, a copy the host waits for), on steps whose lines and rows
    are not written (the first step and the one that validates left out); with the paper's
    clipping over every parameter and with the authors' norm without the embeddings."""
    from conftest import compose_cfg, tiny_overrides
    from lightning.pytorch import Callback

    from luong_lit.training.build import build
    from luong_lit.training.run_folder import RunFolder

    class EachStep(Callback):  # first of the callbacks: its hooks run before the others'
        def __init__(self) -> None:
            self.mode = Dispatched(views=True)  # a tensor made from data is an alias of it
            self.starts: list[int] = []
            self.ends: list[int] = []

        def on_train_start(self, *args) -> None:
            self.mode.__enter__()

        def on_train_batch_start(self, *args) -> None:
            self.starts.append(len(self.mode.names))

        def on_train_batch_end(self, *args) -> None:
            self.ends.append(len(self.mode.names))

        def on_train_end(self, *args) -> None:
            self.mode.__exit__(None, None, None)

    overrides = ["engine.graphs=static", "trainer.max_steps=8", "test_after_training=false",
                 "logger=csv", "trainer.log_every_n_steps=100", "trainer.enable_progress_bar=true",
                 "callbacks.progress.read_every_n_steps=100",
                 f"model.clip_exclude_embeddings={clipping == 'without_embeddings'}"]  # fmt: skip
    cfg = compose_cfg([*tiny_overrides(toy_corpus), *overrides], tmp_path)
    dm, module, trainer = build(cfg, RunFolder.open(cfg))
    watch = EachStep()
    trainer.callbacks.insert(0, watch)
    trainer.fit(module, dm)
    names, starts = watch.mode.names, watch.starts
    assert len(starts) == 8
    for k in range(1, 7):
        read = [n for n in names[starts[k] : starts[k + 1]] if n in READS]
        made = [n for n in names[starts[k] : watch.ends[k]] if n == "aten::lift_fresh"]
        assert not read and not made, (k, read, made)
