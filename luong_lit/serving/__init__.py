"""The translation server of ``serve``: an HTTP JSON API (:mod:`.app`) over one or several named
models (:mod:`.models`), a batcher that decodes concurrent requests together (:mod:`.batcher`),
and a page that shows what the models attend to (``page/``, served at ``/``)."""

from luong_lit.serving.app import make_app
from luong_lit.serving.models import ServedModel, health_info, load_served, parse_model_specs
from luong_lit.serving.requests import BadRequest, Limits

__all__ = [
    "BadRequest",
    "Limits",
    "ServedModel",
    "health_info",
    "load_served",
    "make_app",
    "parse_model_specs",
]
