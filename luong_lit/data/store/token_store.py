"""A prepared training corpus on disk: token ids memory-mapped, opened read-only by every process.

A store is a directory (``<cache>/stores/<fingerprint>/``) holding, for each side ``src`` and
``tgt``:

* ``{side}.ids``: the token ids of every sentence, one after the other, in the smallest
  unsigned integer type that holds the vocabulary (``uint16`` up to 65,536 symbols);
* ``{side}.offsets``: ``int64``, where each sentence starts (one more entry than sentences);
* ``{side}.vocab``: the vocabulary, one symbol per line (ids 0–3 are the special symbols);
* ``{side}.spm``: the sentencepiece model, when the corpus is split into pieces;

and ``meta.json``, written last, with the fingerprint of everything that decided the content,
the sizes of the files and the corpus counts. Opening a store maps the files and checks them;
nothing is read into memory but the offsets' differences (the lengths the batch sampler needs).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from luong_lit.data.vocab import Vocab
from luong_lit.errors import DataError

FORMAT = 1
SIDES = ("src", "tgt")


def id_dtype(vocab_size: int) -> np.dtype:
    """The smallest unsigned integer type that holds ids ``0 .. vocab_size - 1``."""
    return np.dtype(np.uint16 if vocab_size <= 1 << 16 else np.uint32)


def damaged(path: Path, what: str) -> DataError:
    return DataError(
        f"{path}: the prepared corpus store is damaged ({what}); delete this directory and run "
        "`python -m luong_lit prepare data=...` (or the training command again) to rebuild it"
    )


class TokenStore:
    """Read-only view of a store: ``store[i]`` is ``(i, src_ids, tgt_ids)`` as lists of ints.

    A process that receives a store (DDP ranks, data-loader workers) maps the files again
    instead of copying them: only the directory travels through pickling.
    """

    def __init__(self, path: str | Path, check: bool = True) -> None:
        self.path = Path(path)
        self.meta = self._read_meta()
        self.vocabs = {side: self._read_vocab(side) for side in SIDES}
        self.ids: dict[str, np.ndarray] = {}
        self.offsets: dict[str, np.ndarray] = {}
        for side in SIDES:
            self.ids[side], self.offsets[side] = self._map(side)
        self.lengths = {side: np.diff(self.offsets[side]).astype(np.int32) for side in SIDES}
        if check:
            self._check()

    # ------------------------------------------------------------------ opening
    def _read_meta(self) -> dict[str, Any]:
        path = self.path / "meta.json"
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise damaged(self.path, "meta.json is missing") from None
        except (OSError, ValueError) as err:
            raise damaged(self.path, f"meta.json is unreadable: {err}") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise damaged(self.path, f"meta.json is not a store of format {FORMAT}")
        return meta

    def _read_vocab(self, side: str) -> Vocab:
        try:
            symbols = (self.path / f"{side}.vocab").read_text(encoding="utf-8").split("\n")[:-1]
            return Vocab(symbols)
        except (OSError, UnicodeDecodeError, ValueError) as err:
            raise damaged(self.path, f"{side}.vocab: {err}") from None

    def _map(self, side: str) -> tuple[np.ndarray, np.ndarray]:
        sizes = self.meta.get("bytes", {})
        arrays = []
        for name, dtype in ((f"{side}.ids", self.meta.get("dtype")), (f"{side}.offsets", "int64")):
            path = self.path / name
            if not path.is_file() or path.stat().st_size != sizes.get(name):
                found = path.stat().st_size if path.is_file() else "no file"
                raise damaged(self.path, f"{name} has {found} bytes, expected {sizes.get(name)}")
            if path.stat().st_size == 0:
                arrays.append(np.zeros(0, dtype=dtype))
            else:
                arrays.append(np.memmap(path, dtype=dtype, mode="r"))
        return arrays[0], arrays[1]

    def _check(self) -> None:
        """Cheap consistency checks that catch truncation and most corruption."""
        n = self.meta.get("pairs")
        for side in SIDES:
            off, ids = self.offsets[side], self.ids[side]
            if len(off) != n + 1 or off[0] != 0 or off[-1] != len(ids):
                raise damaged(self.path, f"{side}.offsets do not match {n} sentences")
            if n and int(self.lengths[side].min()) < 0:
                raise damaged(self.path, f"{side}.offsets are not increasing")
            if len(ids) and int(ids.max()) >= len(self.vocabs[side]):
                raise damaged(self.path, f"{side}.ids hold ids beyond the vocabulary")

    # ------------------------------------------------------------------ reading
    def __len__(self) -> int:
        return int(self.meta["pairs"])

    def sentence(self, side: str, i: int) -> list[int]:
        off = self.offsets[side]
        return self.ids[side][off[i] : off[i + 1]].tolist()

    def __getitem__(self, i: int) -> tuple[int, list[int], list[int]]:
        return int(i), self.sentence("src", i), self.sentence("tgt", i)

    def sentencepiece(self, side: str) -> bytes | None:
        path = self.path / f"{side}.spm"
        return path.read_bytes() if path.is_file() else None

    def __getstate__(self) -> dict[str, Any]:
        return {"path": str(self.path)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"], check=False)  # type: ignore[misc]
