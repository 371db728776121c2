"""What a training step and a decoder step ask of the host, counted on any machine: operators
dispatched, those that compute (each at least one kernel launch on a GPU; views launch none) and
host reads (each a wait for the device there: ``.item()``, ``bool(t)``, ``.tolist()``,
``nonzero``). A decoding's counts are of the whole search (the encoder and the results' read
included) over its decoder steps.

    python -m scripts.benchmarks.host_reads [--ckpt CKPT] [--sentences 128] [--beam 5] [--every 8]

Training: the main job's model (2x256, global general, input feeding, ``init_state`` last,
``src_eos``, reversed source, tied output; batch 64 of 13-word pairs) through the fast engine
eagerly (``graphs=off``) and in the fixed-shape step (``static``, what a GPU captures in one
graph), forward and backward; and the fixed-shape step with ``init_state`` copy, which encodes
in the masked loop (trees before 2026-12 counted the training step with ``copy`` only); and
the fixed-shape step as CUDA runs it (its fused LSTM cell and dropout, counted on CPU tensors:
``scripts/benchmarks/as_on_cuda.py``).
Decoding: greedy and beam search over ``--sentences`` random sources (or a checkpoint's
vocabulary), per decoder step; ``--every``: how many steps apart the search reads the host (a
GPU's setting; older searches read it at every step whatever this says). Run it in two trees
to compare them (``git worktree add OLD <commit>; cd OLD && python -m
scripts.benchmarks.host_reads``).
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json

import torch
from torch.utils._python_dispatch import TorchDispatchMode

READS = {"aten::_local_scalar_dense", "aten::nonzero", "aten::is_nonzero", "aten::equal"}


class Counter(TorchDispatchMode):
    """Counts the operators dispatched, those of them that compute (not views, which launch no
    kernel on a GPU) and the host reads among them (``.tolist()`` too)."""

    def __enter__(self):
        self.ops = self.kernels = self.reads = 0
        self._tolist = torch.Tensor.tolist

        def tolist(t, *args):
            self.reads += 1
            return self._tolist(t, *args)

        torch.Tensor.tolist = tolist
        return super().__enter__()

    def __exit__(self, *exc):
        torch.Tensor.tolist = self._tolist
        return super().__exit__(*exc)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops += 1
        self.kernels += not func.is_view
        self.reads += func.name().split(".")[0] in READS
        return func(*args, **(kwargs or {}))


#: the main job's model options beyond its sizes (conf/experiment/m30k_small.yaml)
MAIN_JOB = {"init_state": "last", "src_eos": True, "reverse_source": True, "tie_output": True,
            "forget_bias": 2.0}  # fmt: skip


def model(vocab: int = 7859, **kw):
    from luong_lit.nn import Seq2Seq

    torch.manual_seed(0)
    return Seq2Seq(src_vocab_size=5921, tgt_vocab_size=vocab, embed_size=256, hidden_size=256,
                   num_layers=2, attention="global", score="general", **kw)  # fmt: skip


def batch(B: int, S: int, V: int, seed: int = 0):
    from luong_lit.data.loading.batching import collate

    g = torch.Generator().manual_seed(seed)
    lens = torch.randint(max(S - 4, 1), S + 5, (B,), generator=g).tolist()
    words = [[torch.randint(4, V, (n,), generator=g).tolist() for _ in "st"] for n in lens]
    return collate([(i, s, t) for i, (s, t) in enumerate(words)])


def training(graphs: str, **options) -> dict:
    """A training step of the main job's model (``options``: others, e.g. ``init_state``)."""
    from luong_lit.data.loading.buckets import bucket_shape
    from luong_lit.engines import FastEngine

    net = model(dropout=0.2, hidden_dropout=0.2, **{**MAIN_JOB, **options}).train()
    b = batch(64, 13, 5921)
    engine = FastEngine(graphs=graphs, rows=64)
    engine.setup("cpu")
    pad = getattr(engine, "padding", lambda: None)()  # where the loader pads, not the step
    b = pad(b) if pad is not None else b
    with Counter() as c:
        engine.training_loss(net, b, 0.1, lambda batch, n: len(batch)).backward()
    steps = b.tgt_in.size(1)
    if graphs != "off":
        steps = bucket_shape(b, 64, engine.buckets)[2]
    return {"ops_per_step": c.ops, "kernel_ops_per_step": c.kernels,
            "host_reads_per_step": c.reads, "decoder_steps": steps}  # fmt: skip


def search(net, src, src_len, beam: int, every: int, fixed: bool = False) -> tuple[object, dict]:
    """Greedy (``beam`` 1) or beam search (``fixed``: the fixed-shape one), with ``every`` where
    this tree's search takes it."""
    try:
        from luong_lit.decoding.search import BeamSearch as Search
    except ImportError:  # an older tree
        try:
            from luong_lit.decoding.search import Search  # type: ignore[assignment]
        except ImportError:
            from luong_lit.decoding.beam import BeamConfig as Search  # type: ignore[no-redef]
    from luong_lit.decoding.beam import beam_search
    from luong_lit.decoding.greedy import greedy_decode

    fn = greedy_decode if beam == 1 else beam_search
    if fixed:
        from luong_lit.decoding.fixed import fixed_beam_search as fn
    kw = {"every": every} if "every" in inspect.signature(fn).parameters else {}
    with Counter() as c:
        if beam == 1:
            found = fn(net, src, src_len, **kw)[0]
        else:
            found = fn(net, src, src_len, Search(beam=beam), False, **kw)
    return found, {"ops": c.ops, "kernel_ops": c.kernels, "host_reads": c.reads}


def decoding(net, n: int, beam: int, every: int, fixed: bool = False) -> dict:
    from luong_lit.engines import FastEngine

    stepper = FastEngine().for_decoding(net.eval())
    b = batch(n, 13, net.encoder.embedding.num_embeddings, seed=1)
    found, counts = search(stepper, b.src, b.src_len, beam, every, fixed)
    steps = 1 + max(len(h) if beam == 1 else len(getattr(h[0], "ids", None) or h[0].tokens)
                    for h in found)  # fmt: skip
    per = {k: round(v / steps, 2) for k, v in counts.items()}
    return {"beam": beam, "decoder_steps": steps, **{f"{k}_per_step": v for k, v in per.items()}}


def _as_on_cuda() -> dict:
    """The fixed-shape training step with the kit's CUDA choices (``as_on_cuda``), in trees
    that have them (the fused cell)."""
    if importlib.util.find_spec("luong_lit.nn.fast.fused_cell") is None:
        return {}
    from scripts.benchmarks.as_on_cuda import as_on_cuda

    with as_on_cuda():
        return {"training_static_as_on_cuda": training("static")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ckpt", default=None, help="a trained checkpoint (default: a fresh model)")
    ap.add_argument("--sentences", type=int, default=128)
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--every", type=int, default=8)
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.ckpt:
        from luong_lit.checkpoint import load_model

        net = load_model(args.ckpt)[0]
    else:
        net = model()
    out = {
        "training": {g: training(g) for g in ("off", "static")},
        "training_static_copy": training("static", init_state="copy"),  # the masked encoder
        **_as_on_cuda(),
        "greedy": decoding(net, args.sentences, 1, args.every),
        "beam": decoding(net, args.sentences, args.beam, args.every),
    }
    if importlib.util.find_spec("luong_lit.decoding.fixed") is not None:
        out["beam_fixed"] = decoding(net, args.sentences, args.beam, args.every, fixed=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
