"""The options of :class:`~luong_lit.nn.Seq2Seq`, in four groups whose fields are the keys of its
config (``model.net`` in ``conf/model/luong.yaml``; ``attention`` and ``score`` come from the
config groups of those names).

Each group is a frozen dataclass that checks its own values when it is made. ``Seq2Seq`` takes
every field as a keyword argument, makes one object of each group, and hands the objects to the
encoder and the decoder. :class:`NetOptions` holds a whole ``model.net`` config: the four groups
and the keys they were read from (a checkpoint's ``net``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from luong_lit.nn.init import INITS
from luong_lit.validate import integer, one_of, positive, rate


@dataclass(frozen=True)
class Sizes:
    """The dimensions: embeddings ``e``, LSTM cells ``d`` (also ``h_t``, ``h_bar_s``,
    ``h_tilde_t``) and stacked layers ``L`` (paper: 1000, 1000, 4)."""

    embed_size: int = 256
    hidden_size: int = 256
    num_layers: int = 2

    def __post_init__(self) -> None:
        for name in ("embed_size", "hidden_size", "num_layers"):
            integer(name, getattr(self, name), 1)


@dataclass(frozen=True)
class Architecture:
    """The paper's switches, and the alternatives of other toolkits.

    Attributes:
        attention: ``none``, ``global``, ``local_m``, ``local_p``, or ``{"name": ..., **options}``
            (§3.1–3.2).
        score: ``dot``, ``general``, ``concat``, ``location``, or ``{"name": ..., **options}``
            (Eq. 8–9).
        feed_input: input feeding (§3.3).
        reverse_source: read the source backwards (§4.1).
        src_eos: append ``</s>`` to every source sentence, so the encoder reads it and attention
            can rest on it (Joey NMT). False is the paper: attention covers the ``S`` source
            words only (docs/paper_notes.md §0). With ``reverse_source`` the ``</s>`` is still
            read last.
        init_state: the decoder's initial state: ``copy`` (the authors' code, where the paper is
            silent: layer ``l`` starts from the encoder's final ``(h, c)`` of layer ``l``;
            docs/paper_notes.md §0), ``last`` (Joey NMT: the top layer's final
            ``h`` as ``h`` and ``c`` of every layer) or ``zero``.
        tie_output: use the target embedding matrix as ``W_s`` too (Press & Wolf, 2017). Needs
            ``embed_size == hidden_size``. False is the paper: separate matrices.
        bias: biases in LSTMs and linear layers (the authors' code has none,
            docs/paper_notes.md §0).

    Whether they make a model together is checked where the model is built
    (:class:`~luong_lit.nn.Seq2Seq`), once its attention exists.
    """

    attention: Any = "global"
    score: Any = "general"
    feed_input: bool = True
    reverse_source: bool = False
    src_eos: bool = False
    init_state: str = "copy"
    tie_output: bool = False
    bias: bool = True


@dataclass(frozen=True)
class Regularisation:
    """Drop probabilities (docs/paper_notes.md §7).

    Attributes:
        dropout: on every LSTM layer's input (paper: 0.2).
        hidden_dropout: on ``[c_t; h_t]`` before ``W_c`` (Eq. 5), as Joey NMT's
            ``hidden_dropout``. 0 is the paper.
        output_dropout: on ``h_tilde_t`` before ``W_s`` (Eq. 6) in training, as Zaremba et al.
            (2014) and OpenNMT-py. 0 is the paper.
    """

    dropout: float = 0.0
    hidden_dropout: float = 0.0
    output_dropout: float = 0.0

    def __post_init__(self) -> None:
        for name in ("dropout", "hidden_dropout", "output_dropout"):
            rate(name, getattr(self, name))


@dataclass(frozen=True)
class Initialisation:
    """How the parameters start (paper §4.1).

    Attributes:
        init: ``uniform`` (the paper: U(-init_scale, init_scale)) or ``xavier`` (Glorot
            matrices, zero biases: Joey NMT).
        init_scale: the uniform range (paper: 0.1).
        forget_bias: initial LSTM forget-gate bias (needs ``bias``). 0 leaves the uniform draw;
            tensorflow/nmt and Joey NMT start at 1.0, which speeds up early learning.
    """

    init: str = "uniform"
    init_scale: float = 0.1
    forget_bias: float = 0.0

    def __post_init__(self) -> None:
        positive("init_scale", self.init_scale)
        one_of("init", self.init, INITS)


#: The groups, in the order of ``Seq2Seq``'s signature (and of their checks).
NET_OPTIONS = (Sizes, Architecture, Regularisation, Initialisation)


@dataclass(frozen=True)
class NetOptions:
    """A whole ``model.net`` config: its four option groups, and the keys they were read from.

    A checkpoint keeps its model's config (``net`` of
    :class:`~luong_lit.checkpoint.meta.CheckpointMeta`, read by
    :func:`~luong_lit.checkpoint.groups.net_options`): its readers take each option from the
    groups, where a key the config lacks has the group's default, and the network is built from
    ``config`` (:func:`~luong_lit.checkpoint.models.build_net`, which checks every key).

    Attributes:
        sizes, architecture, regularisation, initialisation: the groups (:data:`NET_OPTIONS`).
        config: the config's keys as given, in their order (``_target_`` and any key no group
            has too).
    """

    sizes: Sizes = field(default_factory=Sizes)
    architecture: Architecture = field(default_factory=Architecture)
    regularisation: Regularisation = field(default_factory=Regularisation)
    initialisation: Initialisation = field(default_factory=Initialisation)
    config: dict[str, Any] = field(default_factory=dict)
