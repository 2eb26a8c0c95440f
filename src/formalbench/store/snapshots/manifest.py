"""Walking a tree and the manifest file: one zstd-compressed JSON document per snapshot.

Why JSON: the standard library reads it, it stays greppable after `zstd -d`, and
zstandard makes it compact (paths and repeated hashes compress well). Entries are lists
`[path, kind, ref, executable, size]` sorted by path, so parents come before children.
Paths are POSIX, relative, and never contain `..`; undecodable names round-trip through
Python's surrogate escapes.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Collection, Iterator
from datetime import UTC, datetime
from pathlib import Path

import zstandard

from formalbench.core.errors import InputError
from formalbench.store.snapshots.records import Entry

FORMAT = "formalbench-snapshot/1"


class TreeItem:
    """A regular file met by the walk, to be hashed and stored."""

    __slots__ = ("rel", "path", "size", "executable")

    def __init__(self, rel: str, path: str, size: int, executable: bool) -> None:
        self.rel, self.path, self.size, self.executable = rel, path, size, executable


def walk(
    tree: Path, skip: Path | None = None, exclude: Collection[str] = ()
) -> tuple[list[Entry], list[TreeItem], list[str]]:
    """Directories and symlinks as entries, regular files as items to hash, special files
    (sockets, fifos, devices) as skipped paths. Symlinks are recorded, never followed.
    `skip` (the store itself, when it lies inside the tree) and the relative paths in
    `exclude` (e.g. ".git") are left out."""
    entries: list[Entry] = []
    files: list[TreeItem] = []
    skipped: list[str] = []
    skip_real = os.path.realpath(skip) if skip is not None else None
    stack: list[tuple[str, str]] = [(str(tree), "")]
    while stack:
        folder, rel = stack.pop()
        try:
            with os.scandir(folder) as it:
                children = list(it)
        except OSError as exc:
            raise InputError(f"{folder}: cannot read directory ({exc.strerror})") from None
        for child in children:
            child_rel = f"{rel}{child.name}"
            if child_rel in exclude:
                continue
            try:
                st = child.stat(follow_symlinks=False)
            except OSError as exc:
                raise InputError(f"{child.path}: cannot stat ({exc.strerror})") from None
            if stat.S_ISLNK(st.st_mode):
                entries.append(Entry(child_rel, "l", os.readlink(child.path), False, 0))
            elif stat.S_ISDIR(st.st_mode):
                if skip_real is not None and os.path.realpath(child.path) == skip_real:
                    continue
                entries.append(Entry(child_rel, "d", "", False, 0))
                stack.append((child.path, child_rel + "/"))
            elif stat.S_ISREG(st.st_mode):
                files.append(
                    TreeItem(child_rel, child.path, st.st_size, bool(st.st_mode & stat.S_IXUSR))
                )
            else:
                skipped.append(child_rel)
    return entries, files, sorted(skipped)


def encode(snapshot_id: str, entries: list[Entry]) -> bytes:
    doc = {
        "format": FORMAT,
        "id": snapshot_id,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "entries": [list(e) for e in sorted(entries)],
    }
    text = json.dumps(doc, separators=(",", ":"))
    return zstandard.ZstdCompressor(level=9).compress(text.encode("utf-8", "surrogateescape"))


def decode(blob: bytes, source: Path) -> list[Entry]:
    """Entries of a manifest; a malformed one is an InputError naming the file."""
    try:
        doc = json.loads(zstandard.ZstdDecompressor().decompress(blob))
        if doc.get("format") != FORMAT:
            raise ValueError(f"unknown format {doc.get('format')!r}")
        entries = [Entry(p, k, r, bool(x), int(s)) for p, k, r, x, s in doc["entries"]]
    except (ValueError, TypeError, KeyError, zstandard.ZstdError) as exc:
        raise InputError(f"{source}: not a readable snapshot manifest ({exc})") from None
    for e in entries:
        if e.kind not in ("f", "l", "d") or not _safe(e.path):
            raise InputError(f"{source}: bad manifest entry {e.path!r}")
    return entries


def _safe(rel: str) -> bool:
    """Relative, with no empty, `.` or `..` component. Written as three substring tests on
    `/rel/` (an empty component shows as `//`) because a restore checks every path of the
    manifest: splitting each path cost ~3 µs a file, a tenth of a hard-link restore."""
    wrapped = f"/{rel}/"
    return "//" not in wrapped and "/./" not in wrapped and "/../" not in wrapped


def file_entries(entries: list[Entry]) -> Iterator[Entry]:
    return (e for e in entries if e.kind == "f")
