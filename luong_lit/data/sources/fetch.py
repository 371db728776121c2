"""Where each corpus file comes from: a local mirror, the cache, or its official source.

Every file has a *layout path* such as ``multi30k/tok/train.lc.norm.tok.en.gz``. A mirror is
a directory laid out like that (set ``LUONG_LIT_DATA`` or the ``data.mirror`` config key);
when one is set, nothing is downloaded. Otherwise the file is looked up in the cache
(``LUONG_LIT_CACHE``, default ``~/.cache/luong_lit``) and, on first use, downloaded from its
official URL with a progress bar, checked against its published checksum, extracted, and
stored there as gzipped UTF-8 text, with the SHA-256 of that text beside it
(``<file>.sha256``), so that a cached file damaged later is detected.

Checks that read a whole file (the text's checksum, the published line count) run once per
version of a file: a stamp in the cache, keyed by the file's path, size and modification time,
records that it passed.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import tarfile
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from luong_lit.data.io import DataError, read_lines, text_lines
from luong_lit.resources import cache_dir


@dataclass(frozen=True)
class Remote:
    """An official download and its published checksum (``sha256:...`` or ``md5:...``)."""

    url: str
    checksum: str


@dataclass(frozen=True)
class Source:
    """One text file of a corpus.

    ``path`` is where it lies in a mirror (or, absolute, a local file read where it lies);
    ``remote`` its official download (None: a mirror must hold it). ``content_sha256`` is the
    SHA-256 of the decompressed text, when known; it is checked for mirror and cache files
    alike. ``lines`` is the published line count, checked the same way. ``member`` names the
    file inside an archive, ``fmt`` how to turn it into plain lines (``text``, ``gz`` or
    ``sgm``), ``head`` keeps only the first lines. ``prepare`` turns a whole download into
    named texts (IWSLT's preparation), of which ``member`` is this file's. ``tokenised`` is the
    language of a text released only Moses-tokenised: :func:`resolve` then returns it restored
    to plain text, to be tokenised like the raw corpora beside it.
    """

    path: str
    remote: Remote | None = None
    member: str | None = None
    fmt: str = "text"
    content_sha256: str | None = None
    head: int | None = None
    lines: int | None = None
    tokenised: str | None = None
    prepare: Callable[[Path], Mapping[str, list[str]]] | None = None


def mirror_dir(configured: str | os.PathLike | None = None) -> Path | None:
    """The mirror from the config key, else from ``LUONG_LIT_DATA``, else None."""
    value = configured or os.environ.get("LUONG_LIT_DATA")
    return Path(value).expanduser() if value else None


def local_mirror(purpose: str) -> Path:
    """``LUONG_LIT_DATA``, for a script that reads corpus files straight from a local mirror."""
    mirror = mirror_dir(None)
    if mirror is None or not mirror.is_dir():
        raise DataError(
            f"{purpose} reads the corpora from a local mirror: set LUONG_LIT_DATA to one, laid "
            "out as docs/guide/data.md says"
        )
    return mirror


def _digest(kind: str, data_path: Path, gz: bool = False) -> str:
    h = hashlib.new(kind)
    opener = gzip.open if gz else open
    with opener(data_path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _count_lines(path: Path) -> int:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        return sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 20), b""))


def _once(path: Path, what: str, check) -> None:
    """Run ``check()`` unless this version of ``path`` (size, modification time) passed it."""
    st = path.stat()
    key = hashlib.sha256(
        f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{what}".encode()
    ).hexdigest()
    stamp = cache_dir() / "verified" / key[:32]
    if stamp.is_file():
        return
    check()
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.touch()
    except OSError:  # a read-only cache only costs the check again next time
        pass


def _check_content(src: Source, path: Path) -> None:
    """The text's published (or, for extracted files, recorded) checksum and line count."""
    sidecar = path.with_name(path.name + ".sha256")
    expected = src.content_sha256 or (sidecar.read_text().strip() if sidecar.is_file() else None)
    if expected:

        def text_sha() -> None:
            if _digest("sha256", path, gz=path.suffix == ".gz") != expected:
                raise DataError(
                    f"{path}: checksum mismatch (expected sha256 {expected} of the text); "
                    f"the file is corrupt or not the release this kit expects. "
                    f"Delete it to fetch it again"
                )

        _once(path, f"sha256:{expected}", text_sha)
    if src.lines:

        def line_count() -> None:
            found = _count_lines(path)
            if found != src.lines:
                raise DataError(
                    f"{path}: {found} lines, but the official release has {src.lines}; "
                    f"the file is truncated or not the release this kit expects"
                )

        _once(path, f"lines:{src.lines}", line_count)


#: The folder of extracted text in the cache; a new name whenever extraction changes, so that
#: no file extracted the old way is used again (v2: lines split at newlines only).
EXTRACTED = "text-v2"


def resolve(src: Source, mirror: Path | None = None) -> Path:
    """A local path to ``src``: from the mirror if set, else the cache (downloading once);
    a tokenised text as plain text (:func:`plain_copy`)."""
    path = _resolve(src, mirror)
    return plain_copy(src, path) if src.tokenised else path


def _resolve(src: Source, mirror: Path | None) -> Path:
    local = Path(src.path).is_absolute()  # a local file, read where it lies
    if mirror is not None or local:
        path = Path(src.path) if local else mirror / src.path
        if not path.is_file():
            where = "" if local else f" in the data mirror {mirror}"
            origin = f" (official source: {src.remote.url})" if src.remote is not None else ""
            raise DataError(f"{path}: file does not exist{where}{origin}")
        _check_content(src, path)
        return path
    path = cache_dir() / EXTRACTED / src.path
    if not path.is_file():
        if src.remote is None:
            raise DataError(
                f"{src.path}: no download is known for it; set LUONG_LIT_DATA (or data.mirror) "
                "to a folder that holds it"
            )
        blob = download(src.remote, cache_dir() / "downloads")
        _extract(src, blob, path)
    _check_content(src, path)
    return path


def plain_copy(src: Source, path: Path) -> Path:
    """The checked tokenised file ``path`` restored to plain text, once, in the cache (rebuilt
    when the text it came from changes)."""
    from luong_lit.data.text.tokenize import PlainText

    out = cache_dir() / "plain-v1" / src.path
    origin = out.with_name(out.name + ".from")
    digest = src.content_sha256 or _digest("sha256", path, gz=path.suffix == ".gz")
    if out.is_file() and origin.is_file() and origin.read_text().strip() == digest:
        return out
    _write_gz(out, map(PlainText(src.tokenised), read_lines(path)))
    origin.write_text(digest + "\n")
    return out


def download(remote: Remote, dest_dir: Path) -> Path:
    """Download ``remote`` once into ``dest_dir`` (atomically) and verify its checksum."""
    kind, expected = remote.checksum.split(":", 1)
    dest = dest_dir / re.sub(r"[^A-Za-z0-9._-]", "_", remote.url.split("://", 1)[-1])
    if not dest.is_file():
        from tqdm.auto import tqdm

        dest_dir.mkdir(parents=True, exist_ok=True)
        part = dest.with_name(dest.name + ".part")
        try:
            with urllib.request.urlopen(remote.url, timeout=60) as resp, open(part, "wb") as out:
                total = int(resp.headers.get("Content-Length") or 0) or None
                with tqdm(
                    total=total, unit="B", unit_scale=True, desc=remote.url.rsplit("/", 1)[-1]
                ) as bar:
                    for block in iter(lambda: resp.read(1 << 20), b""):
                        out.write(block)
                        bar.update(len(block))
        except OSError as err:
            part.unlink(missing_ok=True)
            raise DataError(
                f"cannot download {remote.url}: {err}. Set LUONG_LIT_DATA to a local "
                "mirror to work offline"
            ) from None
        part.replace(dest)
    actual = _digest(kind, dest)
    if actual != expected:
        dest.unlink()
        raise DataError(f"{remote.url}: checksum mismatch ({kind} {actual}, expected {expected})")
    return dest


_SEG = re.compile(r"<seg[^>]*>(.*)</seg>", re.IGNORECASE)


def _lines_of(src: Source, blob: Path) -> list[str]:
    if src.prepare is not None:
        prepared, name = src.prepare(blob), src.member
        if name not in prepared:
            raise DataError(
                f"{src.path}: not in the official release (only {', '.join(sorted(prepared))}); "
                "it exists in local mirrors only"
            )
        return prepared[name]
    if src.member is not None:
        with tarfile.open(blob) as tar:
            try:
                raw = tar.extractfile(src.member).read()  # type: ignore[union-attr]
            except (KeyError, AttributeError):
                raise DataError(f"{blob}: archive has no member {src.member}") from None
    else:
        raw = blob.read_bytes()
    if src.fmt == "gz" or raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    text = raw.decode("utf-8")
    if src.fmt == "sgm":
        import html

        lines = [html.unescape(m.group(1)).strip() for m in map(_SEG.search, text_lines(text)) if m]
    else:
        lines = text_lines(text)
    return lines[: src.head] if src.head else lines


def _extract(src: Source, blob: Path, path: Path) -> None:
    """``src``'s lines from the verified download ``blob`` into ``path``, with their checksum."""
    lines = _lines_of(src, blob)
    if src.lines and len(lines) != src.lines:
        raise DataError(
            f"{blob}: {src.member} has {len(lines)} lines, but the official release has "
            f"{src.lines}; delete the download to fetch it again"
        )
    _write_gz(path, lines, sidecar=path.with_name(path.name + ".sha256"))


def _write_gz(path: Path, lines: Iterable[str], sidecar: Path | None = None) -> None:
    """``lines`` gzipped into ``path`` atomically; the text's SHA-256 goes to ``sidecar``, if
    given, just before the file appears."""
    text = "".join(line + "\n" for line in lines).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with gzip.open(tmp, "wb") as fh:
        fh.write(text)
    if sidecar is not None:
        sidecar.write_text(hashlib.sha256(text).hexdigest() + "\n")
    tmp.replace(path)
