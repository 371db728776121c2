"""Fast implementations of the paper's model, chosen by ``Seq2Seq(impl="fast")``.

They compute what the plain code of :mod:`luong_lit.nn` computes, with the same parameters,
and are pinned to it by parity tests (``tests/test_parity.py``):

* :mod:`.model`: the encoder over a ragged batch with deferred weight gradients, and the
  input-feeding decoder unrolled over the rows still running (:mod:`.lstm`);
* :mod:`.loss`: the softmax loss chunk by chunk with its gradient in the same pass;
* :mod:`.projection`: the output layer through oneDNN or in column blocks on the CPU;
* :mod:`.dropout`: dropout masks drawn as uniform floats;
* :mod:`.decoding`: a decode-time wrapper that computes each step's constants once, with
  optional 8-bit matrix products (:mod:`.quantize`).
"""
