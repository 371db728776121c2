"""Checkpoints: files written atomically and read safely (:mod:`.files`), the trained models
they hold (:mod:`.models`), and the average of several (:mod:`.average`)."""

from luong_lit.checkpoint.average import average_checkpoints, average_state_dicts
from luong_lit.checkpoint.files import atomic_save, read_checkpoint
from luong_lit.checkpoint.models import NOT_NET_ARGS, build_net, load_model, load_models
from luong_lit.errors import CheckpointError

__all__ = [
    "NOT_NET_ARGS",
    "CheckpointError",
    "atomic_save",
    "average_checkpoints",
    "average_state_dicts",
    "build_net",
    "load_model",
    "load_models",
    "read_checkpoint",
]
