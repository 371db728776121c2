"""Start a peer toolkit's entry point with a fixed thread count.

    python boot.py THREADS MODULE [ARGS...]

e.g. ``python boot.py 2 onmt.bin.train -config c.yaml`` or
``python boot.py 2 joeynmt train c.yaml --skip-test``; run with the
peer's own venv interpreter.  It calls ``torch.set_num_threads(THREADS)`` (neither
OpenNMT-py nor Joey NMT sets a thread count itself) and then runs MODULE as
``python -m MODULE ARGS...`` would.

Joey NMT 2.3.0 fix (applied only when MODULE is ``joeynmt``):
``RecurrentEncoder.forward`` always reads the backward direction of the final
state (``hidden_layerwise[-1:, 1]``) and so raises IndexError for a
unidirectional encoder (``bidirectional: false``), which m30k_small needs.
For a unidirectional encoder the forward method is replaced by the same
computation without that step: embedding dropout, packed LSTM, padded
outputs, and the top layer's final hidden state as the decoder's init input.
Bidirectional encoders keep Joey's own method.

OpenNMT-py 3.5.1 imports every transform module when it starts, so ``spacy`` (terminology)
and ``fasttext`` (clean) must import although no transform used here needs them. Where they
are not installed (a GPU machine that gets its packages as a few carried wheels), each is
replaced by a module that fails only when a transform reaches into it.

OpenNMT-py 3.5.1 fix (applied only when MODULE is ``onmt.bin.translate``): its checkpoints
hold an ``argparse.Namespace``, which torch >= 2.6 refuses to unpickle by default
(``weights_only=True``); ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` lets the benchmark load the
checkpoints it trained itself.
"""

import os
import runpy
import sys
import warnings


def _patch_joey_unidirectional_encoder() -> None:
    from joeynmt.encoders import RecurrentEncoder
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    original = RecurrentEncoder.forward

    def forward(self, src_embed, src_length, mask, **kwargs):
        if self.rnn.bidirectional:
            return original(self, src_embed, src_length, mask, **kwargs)
        self._check_shapes_input_forward(src_embed=src_embed, src_length=src_length, mask=mask)
        total_length = src_embed.size(1)
        src_embed = self.emb_dropout(src_embed)
        packed = pack_padded_sequence(src_embed, src_length.cpu(), batch_first=True)
        output, hidden = self.rnn(packed)
        if isinstance(hidden, tuple):  # LSTM: (h, c)
            hidden = hidden[0]
        output, _ = pad_packed_sequence(output, batch_first=True, total_length=total_length)
        # hidden: layers x batch x hidden -> final state of the top layer
        return output, hidden[-1]

    RecurrentEncoder.forward = forward


def _stub_unused_modules(names=("spacy", "fasttext")) -> None:
    import importlib.util
    import types

    class Missing(types.ModuleType):
        def __getattr__(self, attr):
            if attr.startswith("__"):
                raise AttributeError(attr)
            raise ImportError(f"{self.__name__} is not installed (needed for {attr})")

    for name in names:
        if importlib.util.find_spec(name) is None:
            sys.modules[name] = Missing(name)


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    threads, module, args = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    warnings.simplefilter("ignore")  # torch deprecation noise from the old toolkits
    import torch

    torch.set_num_threads(threads)
    if module == "joeynmt":
        _patch_joey_unidirectional_encoder()
    if module.startswith("onmt"):
        _stub_unused_modules()
    if module == "onmt.bin.translate":
        # OpenNMT-py 3.5.1 checkpoints pickle an argparse.Namespace, which torch >= 2.6
        # refuses under its weights_only default. The benchmark only loads checkpoints it
        # has just trained itself, so the full unpickler is allowed for them.
        os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    sys.argv = [module] + args
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
