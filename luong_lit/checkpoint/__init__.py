"""Checkpoints: files written atomically and read safely (:mod:`.files`), the description they
keep beside the weights (:mod:`.meta`), the trained models they hold (:mod:`.models`), the
average of several (:mod:`.average`), and whether one may be resumed with a config
(:mod:`.resumable`)."""

from luong_lit.checkpoint.average import average_checkpoints, average_state_dicts
from luong_lit.checkpoint.files import atomic_save, read_checkpoint, read_meta
from luong_lit.checkpoint.meta import CheckpointMeta
from luong_lit.checkpoint.models import NOT_NET_ARGS, build_net, load_model, load_models
from luong_lit.checkpoint.resumable import check_resumable
from luong_lit.errors import CheckpointError

__all__ = [
    "NOT_NET_ARGS",
    "CheckpointError",
    "CheckpointMeta",
    "atomic_save",
    "average_checkpoints",
    "average_state_dicts",
    "build_net",
    "check_resumable",
    "load_model",
    "load_models",
    "read_checkpoint",
    "read_meta",
]
