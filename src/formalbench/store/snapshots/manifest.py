"""Walking a tree and the manifest file: one zstd-compressed JSON document per snapshot.

Why JSON: the standard library reads it, it stays greppable after `zstd -d`, and
zstandard makes it compact. Format 2 (written now) is columnar so that a restore decodes a
100,000-file manifest in milliseconds without building an object per file:

    objects  distinct SHA-256 digests (sorted)     sizes  the byte size of each object
    dirs     every directory, "" (the root) first, sorted, so parents come before children
    counts   how many files each directory holds   names  file names, grouped by directory,
    refs     each file's index into objects                 joined by "/" in one string
    exec     "0"/"1" per file (executable bit)      links  [path, target] of each symlink

Format 1 (`entries`: lists `[path, kind, ref, executable, size]` sorted by path) is still
read. Paths are POSIX, relative, and never contain `..`; undecodable names round-trip
through Python's surrogate escapes.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import accumulate
from pathlib import Path
from typing import Any

import zstandard

from formalbench.core.errors import InputError
from formalbench.store.snapshots.records import Entry

FORMAT = "formalbench-snapshot/2"
FORMAT_1 = "formalbench-snapshot/1"


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


@dataclass(frozen=True, eq=False)
class Manifest:
    """A snapshot's manifest in columns (see the module docstring); files are numbered in
    the order of `names`, the files of `dirs[g]` being `names[starts[g]:starts[g + 1]]`."""

    objects: list[str]
    sizes: list[int]
    dirs: list[str]
    counts: list[int]
    names: list[str]
    refs: list[int]
    executable: str
    links: list[tuple[str, str]]

    @property
    def starts(self) -> list[int]:
        return [0, *accumulate(self.counts)]

    @property
    def files(self) -> int:
        return len(self.names)

    def logical_bytes(self) -> int:
        return sum(map(self.sizes.__getitem__, self.refs))

    def referenced(self) -> set[str]:
        """The digests the files use (what gc must keep)."""
        return {self.objects[r] for r in set(self.refs)}

    def entries(self) -> list[Entry]:
        """The manifest as `Entry` rows sorted by path (what format 1 stored)."""
        out = [Entry(d, "d", "", False, 0) for d in self.dirs[1:]]
        out.extend(Entry(p, "l", t, False, 0) for p, t in self.links)
        objects, sizes, refs, execs, names = (
            self.objects, self.sizes, self.refs, self.executable, self.names,
        )  # fmt: skip
        starts = self.starts
        for g, folder in enumerate(self.dirs):
            prefix = f"{folder}/" if g else ""
            for i in range(starts[g], starts[g + 1]):
                ref = refs[i]
                out.append(Entry(prefix + names[i], "f", objects[ref], execs[i] == "1", sizes[ref]))
        out.sort()
        return out


def columns(entries: Sequence[Sequence[Any]]) -> Manifest:
    """The columnar form of `entries` (`Entry` rows, or format 1's lists); a file's or
    link's missing parent directories are added (a walk records them all anyway). Written
    with C-level helpers (`zip`, `dict`, `map`) where it can: it runs on every put and on
    every read of a format 1 manifest (0.5 s for 100,000 files with a plain loop)."""
    dirs: set[str] = {""}
    files: dict[str, list[tuple[str, str, bool]]] = {}
    links: list[tuple[str, str]] = []
    sizes: dict[str, int] = {}
    for path, kind, ref, executable, size in entries:
        if kind == "f":
            folder, _, name = path.rpartition("/")
            group = files.get(folder)
            if group is None:
                group = files[folder] = []
            group.append((name, ref, executable))
            sizes[ref] = size
        elif kind == "d":
            dirs.add(path)
        else:
            links.append((path, ref))
    wanted = [*files, *(p.rpartition("/")[0] for p, _ in links)]
    wanted += [d.rpartition("/")[0] for d in dirs]
    for folder in wanted:
        while folder not in dirs:
            dirs.add(folder)
            folder = folder.rpartition("/")[0]
    objects = sorted(sizes)
    index = {digest: i for i, digest in enumerate(objects)}
    ordered = sorted(dirs)
    names: list[str] = []
    refs: list[int] = []
    execs: list[bool] = []
    counts: list[int] = []
    for folder in ordered:
        group = files.get(folder, [])
        group.sort()  # already in order when the entries were sorted by path
        counts.append(len(group))
        if group:
            in_names, in_refs, in_execs = zip(*group, strict=True)
            names.extend(in_names)
            refs.extend(map(index.__getitem__, in_refs))
            execs.extend(in_execs)
    return Manifest(
        objects=objects,
        sizes=[sizes[d] for d in objects],
        dirs=ordered,
        counts=counts,
        names=names,
        refs=refs,
        executable="".join(map("01".__getitem__, map(bool, execs))),
        links=sorted(links),
    )


def encode(snapshot_id: str, entries: list[Entry]) -> bytes:
    m = columns(entries)
    doc = {
        "format": FORMAT,
        "id": snapshot_id,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "objects": m.objects,
        "sizes": m.sizes,
        "dirs": m.dirs,
        "counts": m.counts,
        "names": "/".join(m.names),
        "refs": m.refs,
        "exec": m.executable,
        "links": [list(link) for link in m.links],
    }
    text = json.dumps(doc, separators=(",", ":"))
    return zstandard.ZstdCompressor(level=9).compress(text.encode("utf-8", "surrogateescape"))


def decode(blob: bytes, source: Path) -> Manifest:
    """The manifest (format 2, or format 1 converted); a malformed one, or one with a path
    that could leave the restore's destination, is an InputError naming the file."""
    try:
        doc = json.loads(zstandard.ZstdDecompressor().decompress(blob), parse_float=_no_float)
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        if doc.get("format") == FORMAT_1:
            return _from_format_1(doc, source)
        if doc.get("format") != FORMAT:
            raise ValueError(f"unknown format {doc.get('format')!r}")
        m = Manifest(
            objects=doc["objects"],
            sizes=doc["sizes"],
            dirs=doc["dirs"],
            counts=doc["counts"],
            names=doc["names"].split("/") if doc["names"] else [],
            refs=doc["refs"],
            executable=doc["exec"],
            links=[(p, t) for p, t in doc["links"]],
        )
        problem = _problem(m, doc["names"])
    except (
        ValueError,
        TypeError,
        KeyError,
        AttributeError,
        IndexError,
        zstandard.ZstdError,
    ) as exc:
        raise InputError(f"{source}: not a readable snapshot manifest ({exc})") from None
    if problem:
        raise InputError(f"{source}: bad manifest: {problem}")
    return m


def _from_format_1(doc: dict[str, Any], source: Path) -> Manifest:
    """Format 1 (`entries`: `[path, kind, ref, executable, size]` rows) in columns, every
    path checked as `_safe` would, on the joined column (each path wrapped in `/`)."""
    rows = doc["entries"]
    if not isinstance(rows, list) or (rows and set(map(len, rows)) != {5}):
        raise ValueError("entries are not [path, kind, ref, executable, size] rows")
    paths = [row[0] for row in rows]
    joined = "/\0/".join(paths)  # a TypeError (a path that is no string) is malformed
    kinds = {row[1] for row in rows}
    if not kinds <= {"f", "l", "d"} or joined.count("\0") != max(len(paths) - 1, 0):
        raise InputError(f"{source}: bad manifest entry (unknown kind or NUL in a path)")
    if paths and not _safe(joined):  # "/" + joined + "/" holds each path as "/path/"
        bad = next(p for p in paths if not _safe(p))
        raise InputError(f"{source}: bad manifest entry {bad!r}")
    m = columns(rows)
    problem = _problem(m, "/".join(m.names))
    if problem:
        raise InputError(f"{source}: bad manifest: {problem}")
    return m


def _hex_digests(objects: list[str]) -> bool:
    """Every object 64 hex digits (they become cache paths: no "/" may hide in one);
    checked on the joined column, bytes.fromhex being C (a regex took ~3 ms)."""
    joined = "".join(objects)
    if not objects or len(joined) != 64 * len(objects):
        return not objects
    try:
        return len(bytes.fromhex(joined)) == 32 * len(objects) and set(map(len, objects)) == {64}
    except ValueError:
        return False


def _no_float(text: str) -> float:
    raise ValueError(f"unexpected number {text}")


def _problem(m: Manifest, joined: str) -> str:
    """Why `m` must not be restored ("" if it may): every check a hostile manifest could
    dodge, done on whole columns rather than per file, since a restore checks them all.
    `joined` is "/".join(m.names): one substring test finds an empty, "." or ".." name
    (a name cannot hold "/", since "/" separates them)."""
    n, files = len(m.objects), len(m.names)
    if not all(isinstance(x, list) for x in (m.objects, m.sizes, m.dirs, m.counts, m.names)):
        return "a column is not a list"
    if not isinstance(m.refs, list) or not isinstance(m.executable, str):
        return "a column has the wrong type"
    if not _hex_digests(m.objects):
        return "an object is not a SHA-256 hex digest"
    if len(set(m.objects)) != n:
        return "an object is listed twice"
    if len(m.sizes) != n or any(type(s) is not int or s < 0 for s in m.sizes):
        return "bad object sizes"
    if len(m.counts) != len(m.dirs) or any(type(c) is not int or c < 0 for c in m.counts):
        return "bad directory counts"
    if sum(m.counts) != files or len(m.refs) != files or len(m.executable) != files:
        return "the file columns differ in length"
    used = set(m.refs)  # no floats (refused while parsing), so 1.0 cannot hide behind 1
    if used and (set(map(type, used)) != {int} or min(used) < 0 or max(used) >= n):
        return "a file refers to no object"
    if m.executable.strip("01"):
        return "bad executable bits"
    if not m.dirs or m.dirs[0] != "":
        return "the root directory is not first"
    for folder in m.dirs[1:]:
        if not isinstance(folder, str) or "\0" in folder or not _safe(folder):
            return f"unsafe directory {folder!r}"
    if files and ("\0" in joined or not _safe(joined)):
        return "unsafe file name (empty, '.' or '..')"
    link_paths = set()
    for path, target in m.links:
        if not isinstance(path, str) or not isinstance(target, str) or not _safe(path):
            return f"unsafe symlink {path!r}"
        if path in link_paths:
            return f"symlink {path!r} is listed twice"
        link_paths.add(path)
    if link_paths:  # a symlink is made last: its path must be free by then
        taken = link_paths.intersection(m.dirs)
        if taken:
            return f"symlink {min(taken)!r} has the path of a directory"
        taken = link_paths.intersection(_file_paths(m))
        if taken:
            return f"symlink {min(taken)!r} has the path of a file"
    for path in link_paths:  # created last: one inside another would be followed
        parent = path.rpartition("/")[0]
        while parent:
            if parent in link_paths:
                return f"symlink {path!r} lies under symlink {parent!r}"
            parent = parent.rpartition("/")[0]
    return ""


def _file_paths(m: Manifest) -> Iterator[str]:
    """Every file's path, from the directory and name columns (only asked when there are
    symlinks, so a plain restore does not pay for it)."""
    names = iter(m.names)
    for folder, count in zip(m.dirs, m.counts, strict=False):
        prefix = f"{folder}/" if folder else ""
        for _ in range(count):
            yield prefix + next(names)


def _safe(rel: str) -> bool:
    """Relative, with no empty, `.` or `..` component. Written as three substring tests on
    `/rel/` (an empty component shows as `//`) because a restore checks every path of the
    manifest: splitting each path cost ~3 µs a file, a tenth of a hard-link restore."""
    wrapped = f"/{rel}/"
    return "//" not in wrapped and "/./" not in wrapped and "/../" not in wrapped


def file_entries(entries: list[Entry]) -> Iterator[Entry]:
    return (e for e in entries if e.kind == "f")
