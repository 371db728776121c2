"""Training with Lightning: the LightningModule, callbacks, loggers and the run builder.

The model (:mod:`luong_lit.nn`), decoding and metrics never import Lightning; the data
module (:mod:`luong_lit.data.loading.datamodule`) and this package do.
"""
