"""The paper's recipe in the configs (§4.1): its epochs and the epoch its halving starts after,
both set by dropout, as the resolvers ``luong_lit.paper_epochs`` and
``luong_lit.paper_halving_after`` of ``conf/recipes/wmt14_paper.yaml``, which the configs of
runs made with it keep. :data:`RESOLVERS`, registered with the kit's own by
:func:`~luong_lit.sweeps.resolvers.register_resolvers`.
"""

from __future__ import annotations

from typing import Any


def paper_epochs(dropout: Any) -> int:
    """The paper's epochs (§4.1): 10, or 12 for a model trained with dropout."""
    return 12 if float(dropout) > 0 else 10


def paper_halving_after(dropout: Any) -> int:
    """The paper's epochs before halving (§4.1): 5, or 8 for a model trained with dropout."""
    return 8 if float(dropout) > 0 else 5


#: the resolvers' names, as the configs write them
RESOLVERS = {
    "luong_lit.paper_epochs": paper_epochs,
    "luong_lit.paper_halving_after": paper_halving_after,
}
