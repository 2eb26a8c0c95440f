"""Content-addressed objects: `objects/ab/<sha256>` (raw) or `objects/ab/<sha256>.zst`.

Why two forms: zstandard saves much on build outputs (.vo, .olean, sources) but a hard link
needs the plain bytes. An object is stored compressed when that saves at least 10 % (and it
is not tiny), raw otherwise; the choice depends only on the content, so two puts of the same
content race harmlessly (both write a temporary file and rename it onto the same name).
Hard-link and reflink restores go through `cache/ab/<sha256>` (or `<sha256>.x` for an
executable copy), materialised once from the object, checked against its hash, and
counted in `stored_bytes`. Only cache entries are ever linked out, never the objects
themselves, so a tool that writes through a hard-linked restored file damages at most a
cache entry, which the next restore notices (size, mode or mtime changed) and rebuilds.
Cache entries are read-only with a fixed modification time, so restored trees look up to
date to `make`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import threading
import uuid
from pathlib import Path
from typing import BinaryIO

import zstandard

from formalbench.core.errors import FormalbenchError

FIXED_MTIME = 946_684_800  # 2000-01-01T00:00:00Z, shared by every object and restored file
MIN_COMPRESS = 512  # smaller contents are kept raw: the zstd frame would eat the gain
COMPRESS_GAIN = 0.9  # compress only when the result is at most 90 % of the original
STREAM_LIMIT = 16 * 1024 * 1024  # larger files are hashed and stored in chunks
CHUNK = 1024 * 1024
LEVEL = 3

_local = threading.local()


class CorruptObjectError(FormalbenchError):
    """An object's content no longer matches its hash."""


def compressor() -> zstandard.ZstdCompressor:
    """One compressor per thread (zstandard's objects are not thread-safe)."""
    comp = getattr(_local, "comp", None)
    if comp is None:
        comp = _local.comp = zstandard.ZstdCompressor(level=LEVEL)
    return comp


def decompressor() -> zstandard.ZstdDecompressor:
    dec = getattr(_local, "dec", None)
    if dec is None:
        dec = _local.dec = zstandard.ZstdDecompressor()
    return dec


class ObjectFiles:
    """Paths and atomic writes of objects and link-cache entries under a store root."""

    def __init__(self, root: Path) -> None:
        self.objects = root / "objects"
        self.cache = root / "cache"
        self.tmp = root / "tmp"

    # -- paths ---------------------------------------------------------------------------
    def raw_path(self, digest: str) -> Path:
        return self.objects / digest[:2] / digest[2:]

    def zst_path(self, digest: str) -> Path:
        return self.objects / digest[:2] / (digest[2:] + ".zst")

    def cache_path(self, digest: str, executable: bool) -> Path:
        return self.cache / cache_name(digest, executable)

    def locate(self, digest: str) -> Path | None:
        """The stored object of `digest` (raw or compressed), or None."""
        for path in (self.raw_path(digest), self.zst_path(digest)):
            if os.path.lexists(path):
                return path
        return None

    def temp(self) -> Path:
        return self.tmp / uuid.uuid4().hex

    # -- writing -------------------------------------------------------------------------
    def _publish(self, tmp: Path, final: Path, mode: int) -> None:
        os.chmod(tmp, mode)
        os.utime(tmp, (FIXED_MTIME, FIXED_MTIME))
        final.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, final)

    def add_bytes(self, digest: str, data: bytes) -> int | None:
        """Store `data` under `digest` unless present; the bytes written, None if present."""
        if self.locate(digest) is not None:
            return None
        payload, final = data, self.raw_path(digest)
        if len(data) >= MIN_COMPRESS:
            packed = compressor().compress(data)
            if len(packed) <= COMPRESS_GAIN * len(data):
                payload, final = packed, self.zst_path(digest)
        tmp = self.temp()
        with open(tmp, "wb") as out:
            out.write(payload)
        self._publish(tmp, final, 0o444)
        return len(payload)

    def add_large(self, source: Path) -> tuple[str, int, int | None]:
        """Hash and store a big file in chunks: (digest, size, bytes written or None)."""
        sha = hashlib.sha256()
        raw_tmp = self.temp()
        size = 0
        with open(source, "rb") as src, open(raw_tmp, "wb") as out:
            while chunk := src.read(CHUNK):
                sha.update(chunk)
                out.write(chunk)
                size += len(chunk)
        digest = sha.hexdigest()
        if self.locate(digest) is not None:
            raw_tmp.unlink()
            return digest, size, None
        zst_tmp = self.temp()
        with open(raw_tmp, "rb") as src, open(zst_tmp, "wb") as out:
            compressor().copy_stream(src, out, size=size)
        packed = zst_tmp.stat().st_size
        if packed <= COMPRESS_GAIN * size:
            raw_tmp.unlink()
            self._publish(zst_tmp, self.zst_path(digest), 0o444)
            return digest, size, packed
        zst_tmp.unlink()
        self._publish(raw_tmp, self.raw_path(digest), 0o444)
        return digest, size, size

    # -- reading -------------------------------------------------------------------------
    def write_content(self, digest: str, out_path: Path | str) -> int:
        """Write the plain content of `digest` to a new file `out_path`, checking the hash;
        returns its size. Raises CorruptObjectError on a mismatch or a broken frame.
        Plain string paths and one open of the object: a cold restore runs this once per
        content (5,000 for the bench tree), where pathlib cost as much as the file work."""
        obj = f"{self.objects}/{digest[:2]}/{digest[2:]}"
        try:
            src = open(obj, "rb")  # noqa: SIM115 - closed below, whichever form it is
        except FileNotFoundError:
            obj += ".zst"
            try:
                src = open(obj, "rb")  # noqa: SIM115
            except FileNotFoundError:
                raise CorruptObjectError(
                    f"object {digest} is missing from the snapshot store"
                ) from None
        compressed = obj.endswith(".zst")
        with src:
            if os.fstat(src.fileno()).st_size <= STREAM_LIMIT // 4:  # one read, one call
                data = src.read()
                if compressed:
                    try:
                        data = decompressor().decompress(data)
                    except zstandard.ZstdError as exc:
                        raise CorruptObjectError(f"object {obj} is corrupt ({exc})") from None
                if hashlib.sha256(data).hexdigest() != digest:
                    raise CorruptObjectError(f"object {obj} is corrupt (its content hash changed)")
                with open(out_path, "wb") as out:
                    write_keeping_holes(out, data)
                return len(data)
            sha = hashlib.sha256()
            size = 0
            try:
                with open(out_path, "wb") as out:
                    reader = decompressor().stream_reader(src) if compressed else src
                    while chunk := reader.read(CHUNK):
                        sha.update(chunk)
                        write_keeping_holes(out, chunk)
                        size += len(chunk)
            except zstandard.ZstdError as exc:
                raise CorruptObjectError(f"object {obj} is corrupt ({exc})") from None
        if sha.hexdigest() != digest:
            raise CorruptObjectError(f"object {obj} is corrupt (its content hash changed)")
        return size

    def materialise(self, digest: str, executable: bool, size: int, check: bool = False) -> str:
        """A plain read-only copy of `digest` in the link cache, to hard-link or clone from.

        Canonical objects never leave the store; only cache entries are linked out. An
        entry someone wrote through a restored tree shows a changed size, mode or mtime
        (all fixed here) and is rebuilt from its object, as is one whose hash differs when
        `check` is set; the rebuild itself checks the object's hash."""
        cached = f"{self.cache}/{cache_name(digest, executable)}"
        try:
            if _intact(os.stat(cached), size, executable) and (
                not check or hash_file(cached) == digest
            ):
                return cached
        except FileNotFoundError:
            pass
        tmp = f"{self.tmp}/{uuid.uuid4().hex}"
        try:
            self.write_content(digest, tmp)
            os.chmod(tmp, 0o555 if executable else 0o444)
            os.utime(tmp, (FIXED_MTIME, FIXED_MTIME))
            try:
                os.replace(tmp, cached)
            except FileNotFoundError:  # the first entry under its two-hex-digit folder
                os.makedirs(os.path.dirname(cached), exist_ok=True)
                os.replace(tmp, cached)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        return cached

    def missing(self, wanted: list[tuple[str, bool, int]], names: list[str]) -> list[int]:
        """Indexes of the (digest, executable, size) whose cache entry (at `names[i]`, see
        `cache_name`) is absent or looks damaged: what `materialise` would rebuild without
        `check`. One stat each relative to an open `cache/`, since a warm restore of 5,000
        contents spent ~0.1 s building paths in `materialise`."""
        try:
            fd = os.open(self.cache, os.O_RDONLY | os.O_DIRECTORY)
        except FileNotFoundError:
            return list(range(len(wanted)))
        out, lookup = [], os.stat
        try:
            for i, ((_digest, executable, size), name) in enumerate(
                zip(wanted, names, strict=True)
            ):
                try:
                    if _intact(lookup(name, dir_fd=fd), size, executable):
                        continue
                except FileNotFoundError:
                    pass
                out.append(i)
        finally:
            os.close(fd)
        return out


HOLE_BLOCK = 64 * 1024
_ZEROS = bytes(HOLE_BLOCK)


def write_keeping_holes(out: BinaryIO, data: bytes) -> None:
    """Write `data` at the file's position, seeking over whole 64 KiB blocks of zeros so
    that a sparse file restored from its content keeps holes (the store keeps contents,
    not block maps: a zero block is where a hole can be). Leaves the position after it."""
    if len(data) < HOLE_BLOCK or data.count(0) < HOLE_BLOCK:
        out.write(data)
        return
    view = memoryview(data)
    for at in range(0, len(data), HOLE_BLOCK):
        block = view[at : at + HOLE_BLOCK]
        if len(block) == HOLE_BLOCK and block == _ZEROS:
            out.seek(HOLE_BLOCK, os.SEEK_CUR)
        else:
            out.write(block)
    out.truncate()  # a hole at the end needs the size set


def _intact(st: os.stat_result, size: int, executable: bool) -> bool:
    """A cache entry as materialised: its size, the fixed mtime, read-only mode."""
    return (
        st.st_size == size
        and st.st_mtime_ns == FIXED_MTIME * 1_000_000_000
        and stat.S_IMODE(st.st_mode) == (0o555 if executable else 0o444)
    )


def cache_name(digest: str, executable: bool) -> str:
    """A link-cache entry's path relative to `cache/` (a hard-link restore links from a
    directory descriptor of `cache/`, so the kernel resolves two components a file)."""
    return f"{digest[:2]}/{digest[2:]}.x" if executable else f"{digest[:2]}/{digest[2:]}"


def hash_file(path: Path | str) -> str:
    """SHA-256 hex of a file's content."""
    with open(path, "rb") as src:
        return hashlib.file_digest(src, "sha256").hexdigest()
