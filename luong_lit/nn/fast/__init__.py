"""The paper's model computed faster, with the parameters of :mod:`luong_lit.nn` (plain PyTorch).

These are functions over a :class:`~luong_lit.nn.Seq2Seq`'s modules, not other modules: the
``fast`` engine (:mod:`luong_lit.engines`) calls them, and the reference code carries no hook
for them. Parity tests pin them to the reference (``tests/test_engines.py``):

* :mod:`.model`: the encoder over a ragged batch with deferred weight gradients, and the
  input-feeding decoder unrolled over the rows still running (:mod:`.lstm`); its loop, as the
  fixed-shape one below and the reference's, is the decoder's one loop
  (:func:`luong_lit.nn.decoder.unroll`) over its one step
  (:func:`luong_lit.nn.decoder.decoder_step`) in the fast form (:func:`.model.fast_form`:
  every layer's cell as one product, ``y_{t-1}`` embedded as layer 1's product with it);
* :mod:`.static`: the same teacher-forced loss in fixed shapes, for CUDA graphs;
* :mod:`.loss`: the softmax loss chunk by chunk with its gradient in the same pass;
* :mod:`.projection`: the output layer through oneDNN or in column blocks on the CPU;
* :mod:`.dropout`: dropout masks drawn as uniform floats;
* :mod:`.stepper`: a decode-time wrapper that computes each step's constants once, with
  optional 8-bit matrix products (:mod:`.quantize`).
"""
