"""eflomal (Östling & Tiedemann 2016), the statistical word aligner the kit compares with and
builds dictionaries from (``pip install eflomal``): links of tokenised sentence pairs."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from luong_lit.data.io import DataError
from luong_lit.data.text.dictionary import parse_links


def eflomal_links(
    src: Sequence[Sequence[str]], tgt: Sequence[Sequence[str]], symmetrise: str = "intersect"
) -> list[list[tuple[int, int]]]:
    """Align tokenised sentence pairs with eflomal; ``intersect`` or ``forward`` links."""
    try:
        from eflomal import Aligner
    except ImportError:
        raise DataError(
            "building a dictionary from a corpus needs eflomal: pip install eflomal"
        ) from None
    with tempfile.TemporaryDirectory() as tmp:
        fwd, rev = Path(tmp) / "fwd", Path(tmp) / "rev"
        Aligner().align(
            [" ".join(s) for s in src],
            [" ".join(t) for t in tgt],
            links_filename_fwd=str(fwd),
            links_filename_rev=str(rev),
            quiet=True,
        )
        fwd_links = [
            set(parse_links(x, str(fwd))) for x in fwd.read_text(encoding="utf-8").splitlines()
        ]
        rev_links = [
            set(parse_links(x, str(rev))) for x in rev.read_text(encoding="utf-8").splitlines()
        ]
    if symmetrise == "forward":
        return [sorted(f) for f in fwd_links]
    return [sorted(f & r) for f, r in zip(fwd_links, rev_links)]
