"""The snapshot store (Eleanstic): whole build trees kept once per content, restored fast.

Layout under the root: `objects/` (content-addressed, see `objects.py`), `cache/` (plain
copies of compressed objects to hard-link or clone from), `snapshots/<id>.json.zst` (one
manifest per snapshot), `tmp/` (files being written), `lock`, `FORMAT`.

Crash safety: every file is written to `tmp/` and renamed into place; a put writes its
objects, flushes the filesystem, and only then renames its manifest into `snapshots/`, so a
snapshot either exists whole or not at all; objects a crashed put left without a manifest
are unreferenced and `gc` removes them. Puts and restores hold a shared lock on `lock`, gc
an exclusive one, so gc never deletes an object a running put has just counted on.

Hard-link restores share inodes with the store's link cache (never with the objects): the
linked files are read-only (mode 0444/0555) and must not be modified in place, since every
other tree restored by hard link shares them; `detach(path)` gives a restored file its own
writable copy first (root ignores the read-only bit, and e.g. coqc rewrites a `.vo` in
place). A cache entry damaged that way is rebuilt by the next restore. Reflink and copy
restores are private, writable copies.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import fcntl
import hashlib
import os
import re
import shutil
import stat
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Literal, TypeVar

from formalbench.core.errors import InputError
from formalbench.store.snapshots import linking, manifest, placing
from formalbench.store.snapshots.manifest import Manifest
from formalbench.store.snapshots.objects import (
    FIXED_MTIME,
    STREAM_LIMIT,
    CorruptObjectError,
    ObjectFiles,
    cache_name,
    hash_file,
)
from formalbench.store.snapshots.progress import Bar, bar
from formalbench.store.snapshots.records import (
    Entry,
    GcInfo,
    RestoreInfo,
    SnapshotInfo,
    StoreStats,
)

RestoreMode = Literal["auto", "hardlink", "reflink", "copy"]
MODES = ("auto", "hardlink", "reflink", "copy")
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,199}")
FORMAT_LINE = "formalbench snapshot store 1\n"
SUFFIX = ".json.zst"
BATCH = 256  # files per thread-pool task: small enough to balance, big enough to amortise
# Link-cache entries are rebuilt on threads only when their contents average this much:
# 5,000 contents of 2 KiB took 0.69 s on one thread and 1.66 s on four (tmpfs; ext4 2.3 s
# and 3.0 s), while contents of 64 KiB and more rebuild ~1.6x faster on two threads.
PARALLEL_BYTES = 32 * 1024
T = TypeVar("T")
R = TypeVar("R")


def workers() -> int:
    return min(16, 2 * (os.cpu_count() or 1))


class SnapshotStore:
    """Content-addressed snapshots of directory trees under `root` (created on first put)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.files = ObjectFiles(self.root)
        self.manifests = self.root / "snapshots"
        self._reflink: bool | None = None

    # -- bookkeeping ---------------------------------------------------------------------
    def _check_id(self, snapshot_id: str) -> None:
        if not ID_PATTERN.fullmatch(snapshot_id):
            raise InputError(
                f"snapshot id {snapshot_id!r}: use letters, digits and . _ @ + - "
                "(at most 200, starting with a letter or digit)"
            )

    def _manifest_path(self, snapshot_id: str) -> Path:
        self._check_id(snapshot_id)
        return self.manifests / f"{snapshot_id}{SUFFIX}"

    def _init_layout(self) -> None:
        marker = self.root / "FORMAT"
        if self.root.exists() and not self.root.is_dir():
            raise InputError(f"{self.root}: snapshot store path is not a directory")
        layout = (self.files.objects, self.files.cache, self.files.tmp, self.manifests)
        if not marker.exists():
            # Only our own entries may be there: another process may be creating this store
            # at the same moment (its folders, lock or marker being written), which is fine.
            ours = {p.name for p in layout} | {"lock", "FORMAT"}
            self.root.mkdir(parents=True, exist_ok=True)
            strangers = [p for p in self.root.iterdir()
                         if p.name not in ours and not p.name.startswith(".FORMAT.")]  # fmt: skip
            if strangers:
                raise InputError(f"{self.root}: not a snapshot store (non-empty, no FORMAT file)")
            part = self.root / f".FORMAT.{os.getpid()}.{threading.get_ident()}"
            part.write_text(FORMAT_LINE)
            os.replace(part, marker)  # atomic: a reader sees no marker or a whole one
        for folder in layout:
            folder.mkdir(parents=True, exist_ok=True)

    @contextmanager
    def _locked(self, exclusive: bool) -> Iterator[None]:
        fd = os.open(self.root / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            yield
        finally:
            os.close(fd)

    def _load(self, snapshot_id: str) -> Manifest:
        path = self._manifest_path(snapshot_id)
        try:
            blob = path.read_bytes()
        except FileNotFoundError:
            raise InputError(f"snapshot {snapshot_id!r} is not in the store {self.root}") from None
        return manifest.decode(blob, path)

    def entries(self, snapshot_id: str) -> list[Entry]:
        """The manifest of a snapshot (path, kind, hash or target, executable, size), sorted
        by path."""
        return self._load(snapshot_id).entries()

    def has(self, snapshot_id: str) -> bool:
        return ID_PATTERN.fullmatch(snapshot_id) is not None and (
            self._manifest_path(snapshot_id).is_file()
        )

    def ids(self) -> list[str]:
        if not self.manifests.is_dir():
            return []
        return sorted(p.name[: -len(SUFFIX)] for p in self.manifests.glob(f"*{SUFFIX}"))

    # -- put -----------------------------------------------------------------------------
    def put(
        self,
        tree: Path,
        snapshot_id: str,
        *,
        progress: Bar | None = None,
        exclude: Collection[str] = (),
    ) -> SnapshotInfo:
        """Store the tree under `snapshot_id`, leaving out the relative paths in `exclude`
        (e.g. ".git"). Putting the same content again under the same id is a no-op
        (`created` False); different content under a taken id is an error."""
        start = time.perf_counter()
        tree = Path(tree)
        target = self._manifest_path(snapshot_id)
        if not tree.is_dir():
            raise InputError(f"{tree}: not a directory (nothing to snapshot)")
        self._init_layout()
        with self._locked(exclusive=False):
            entries, items, skipped = manifest.walk(
                tree, skip=self.root, exclude={p.strip("/") for p in exclude}
            )

            def store_batch(batch: Sequence[manifest.TreeItem]) -> list[tuple[Entry, int | None]]:
                return [self._store_file(item) for item in batch]

            with bar(progress, f"put {snapshot_id}", len(items)) as advance:
                stored = _parallel(store_batch, items, advance)
            # two threads may both write a content new to the store: count it once
            added = {entry.ref: written for entry, written in stored if written is not None}
            new_objects, new_bytes = len(added), sum(added.values())
            entries.extend(entry for entry, _ in stored)
            entries.sort()
            created = self._publish_manifest(target, snapshot_id, entries, new_objects > 0)
        return SnapshotInfo(
            snapshot_id=snapshot_id,
            files=len(items),
            symlinks=sum(1 for e in entries if e.kind == "l"),
            dirs=sum(1 for e in entries if e.kind == "d"),
            logical_bytes=sum(e.size for e in entries),
            new_objects=new_objects,
            new_stored_bytes=new_bytes,
            skipped=tuple(skipped),
            created=created,
            seconds=time.perf_counter() - start,
        )

    def _store_file(self, item: manifest.TreeItem) -> tuple[Entry, int | None]:
        try:
            if item.size > STREAM_LIMIT:
                digest, size, written = self.files.add_large(Path(item.path))
            else:
                with open(item.path, "rb") as src:
                    data = src.read()
                digest, size = hashlib.sha256(data).hexdigest(), len(data)
                written = self.files.add_bytes(digest, data)
        except OSError as exc:
            if exc.filename is not None and str(exc.filename).startswith(str(self.root)):
                raise
            raise InputError(f"{item.path}: cannot read ({exc.strerror})") from None
        return Entry(item.rel, "f", digest, item.executable, size), written

    def _publish_manifest(
        self, target: Path, snapshot_id: str, entries: list[Entry], flush: bool
    ) -> bool:
        if target.exists():
            if self._load(snapshot_id).entries() == sorted(entries):
                return False
            raise InputError(
                f"snapshot {snapshot_id!r} already exists in {self.root} with other content "
                "(remove it first)"
            )
        if flush:
            _syncfs(self.root)
        tmp = self.files.temp()
        with open(tmp, "wb") as out:
            out.write(manifest.encode(snapshot_id, entries))
            out.flush()
            os.fsync(out.fileno())
        # Published by a hard link, which fails if the name exists (a rename would replace
        # it): of two puts of one id at once exactly one wins, the other learns it here.
        try:
            try:
                os.link(tmp, target)
            except OSError as exc:  # a filesystem without hard links: O_EXCL claims the name
                if isinstance(exc, FileExistsError) or exc.errno not in _NO_LINKS:
                    raise
                _claim(tmp, target)
        except FileExistsError:
            _wait_until_written(target)  # the winner may be between its claim and its replace
            if self._load(snapshot_id).entries() == sorted(entries):
                return False
            raise InputError(
                f"snapshot {snapshot_id!r} was created in {self.root} by another put at the "
                "same time, with other content (remove it first)"
            ) from None
        finally:
            os.unlink(tmp)
        _fsync_dir(self.manifests)
        return True

    # -- restore -------------------------------------------------------------------------
    def restore(
        self,
        snapshot_id: str,
        dest: Path,
        *,
        mode: RestoreMode = "auto",
        verify: bool = False,
        progress: Bar | None = None,
    ) -> RestoreInfo:
        """Recreate the snapshot at `dest` (absent or an empty directory).

        "auto" picks reflink where the filesystem clones, else hard links on the store's
        filesystem, else copies. Hard-linked files are read-only and shared with the store
        (see `detach`). With `verify`, every restored content is hashed and compared with
        the manifest: a damaged link-cache entry is rebuilt from its object, a damaged
        object raises CorruptObjectError naming it (copies of compressed objects are
        always checked, since decompression hashes them anyway)."""
        start = time.perf_counter()
        if mode not in MODES:
            raise InputError(f"restore mode {mode!r}: use one of {', '.join(MODES)}")
        loaded = self._load(snapshot_id)
        dest = Path(dest)
        if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
            raise InputError(f"{dest}: exists and is not an empty directory")
        created_dest = not dest.exists()
        dest.mkdir(parents=True, exist_ok=True)
        try:
            with self._locked(exclusive=False):
                return self._restore(snapshot_id, loaded, dest, mode, verify, progress, start)
        except BaseException:
            if created_dest:
                shutil.rmtree(dest, ignore_errors=True)
            else:
                for child in list(dest.iterdir()):
                    _remove(child)
            raise

    def _resolve(self, mode: RestoreMode, dest: Path) -> str:
        if mode != "auto":
            return mode
        if os.stat(dest).st_dev != os.stat(self.root).st_dev:
            return "copy"
        return "reflink" if self._reflink_ok() else "hardlink"

    def _reflink_ok(self) -> bool:
        if self._reflink is None:
            self.files.tmp.mkdir(parents=True, exist_ok=True)
            self._reflink = placing.reflink_supported(self.files.tmp)
        return self._reflink

    def _restore(
        self,
        snapshot_id: str,
        m: Manifest,
        dest: Path,
        mode: RestoreMode,
        verify: bool,
        progress: Bar | None,
        start: float,
    ) -> RestoreInfo:
        resolved = self._resolve(mode, dest)
        with bar(progress, f"restore {snapshot_id}", m.files) as advance:
            if resolved == "hardlink":
                copied = self._link_all(m, dest, verify, advance)
                linked, reflinked = m.files - copied, 0
            else:
                placed = self._place_all(m, dest, resolved, verify, advance)
                linked = placed.count(placing.LINKED)
                reflinked = placed.count(placing.REFLINKED)
                copied = placed.count(placing.COPIED)
        for path, target in m.links:  # last: nothing is ever placed through a symlink
            os.symlink(target, f"{dest}/{path}")
        return RestoreInfo(
            snapshot_id=snapshot_id,
            dest=dest,
            mode=resolved,
            files=m.files,
            symlinks=len(m.links),
            dirs=len(m.dirs) - 1,
            linked=linked,
            reflinked=reflinked,
            copied=copied,
            bytes=m.logical_bytes(),
            verified=verify,
            seconds=time.perf_counter() - start,
        )

    def _link_all(
        self, m: Manifest, dest: Path, verify: bool, advance: Callable[[int], None]
    ) -> int:
        """Hard-link restore: make sure each (content, executable) pair the files use has
        an intact link-cache entry (one stat each; absent or damaged ones are rebuilt, all
        are hashed with `verify`), then link the tree from them (`linking.link_tree`).
        Returns how many files were copied instead of linked."""
        n = len(m.objects)
        keys: list[int] = m.refs
        if "1" in m.executable:  # executable files link from `<digest>.x`: key ref + n
            keys = list(m.refs)
            at = m.executable.find("1")
            while at >= 0:
                keys[at] += n
                at = m.executable.find("1", at + 1)
        used = sorted(set(keys))
        wanted = [(m.objects[k % n], k >= n, m.sizes[k % n]) for k in used]
        names = [cache_name(digest, executable) for digest, executable, _ in wanted]
        sources: list[str] = [""] * (2 * n)
        for key, name in zip(used, names, strict=True):
            sources[key] = name

        def materialise(batch: Sequence[tuple[str, bool, int]]) -> list[None]:
            for digest, executable, size in batch:
                self.files.materialise(digest, executable, size, check=verify)
            return []

        # with --verify every entry is hashed; else only absent or damaged ones are rebuilt
        todo = wanted if verify else [wanted[i] for i in self.files.missing(wanted, names)]
        if sum(size for _, _, size in todo) >= PARALLEL_BYTES * len(todo):
            _parallel(materialise, todo, lambda done: None)
        else:  # small contents: a dozen short syscalls each, GIL hand-offs would dominate
            materialise(todo)
        return linking.link_tree(m, keys, sources, str(dest), str(self.files.cache), advance)

    def _place_all(
        self,
        m: Manifest,
        dest: Path,
        resolved: str,
        verify: bool,
        advance: Callable[[int], None],
    ) -> list[str]:
        """Reflink and copy restores: each file its own private copy (or clone)."""
        clones = resolved == "reflink" and self._reflink_ok()
        base = str(dest) + os.sep
        for folder in m.dirs[1:]:
            os.makedirs(base + folder, exist_ok=True)
        files = [e for e in m.entries() if e.kind == "f"]
        sources: dict[tuple[str, bool], str] = {}

        def source(e: Entry) -> str:
            key = (e.ref, e.executable)
            found = sources.get(key)
            if found is None:
                found = self.files.materialise(e.ref, e.executable, e.size, check=verify)
                sources[key] = found
            return found

        def place(e: Entry) -> str:
            dst = base + e.path
            if clones:  # reflink asked for and supported; else reflink means copy
                src = source(e)
                how = placing.REFLINKED
                if not placing.clone(src, dst):
                    placing.kernel_copy(src, dst)
                    how = placing.COPIED
            else:
                how = placing.COPIED
                raw = self.files.raw_path(e.ref)
                if os.path.lexists(raw):
                    placing.kernel_copy(raw, dst)
                    if verify and hash_file(Path(dst)) != e.ref:
                        raise CorruptObjectError(
                            f"object {raw} is corrupt (its content hash changed)"
                        )
                else:
                    self.files.write_content(e.ref, Path(dst))  # always checks the hash
            os.chmod(dst, 0o755 if e.executable else 0o644)
            os.utime(dst, (FIXED_MTIME, FIXED_MTIME))
            return how

        def place_batch(batch: Sequence[Entry]) -> list[str]:
            return [place(e) for e in batch]

        return _parallel(place_batch, files, advance)

    # -- stats, gc, remove ---------------------------------------------------------------
    def _all_manifests(self) -> Iterator[Manifest]:
        for snapshot_id in self.ids():
            try:
                yield self._load(snapshot_id)
            except InputError:
                if self.has(snapshot_id):  # removed meanwhile: skip; malformed: report
                    raise

    def stats(self) -> StoreStats:
        files = logical = 0
        sizes: dict[str, int] = {}
        count = 0
        for m in self._all_manifests():
            count += 1
            files += m.files
            logical += m.logical_bytes()
            for r in set(m.refs):
                sizes[m.objects[r]] = m.sizes[r]
        unique = sum(sizes.values())
        objects = compressed = object_bytes = 0
        for path in _files_under(self.files.objects):
            objects += 1
            compressed += path.endswith(".zst")
            object_bytes += os.lstat(path).st_size
        cache_bytes = sum(os.lstat(p).st_size for p in _files_under(self.files.cache))
        manifest_bytes = sum(os.lstat(p).st_size for p in _files_under(self.manifests))
        return StoreStats(
            snapshots=count,
            files=files,
            logical_bytes=logical,
            unique_bytes=unique,
            stored_bytes=object_bytes + cache_bytes + manifest_bytes,
            dedup_ratio=round(1 - unique / logical, 6) if logical else 0.0,
            objects=objects,
            compressed_objects=compressed,
            object_bytes=object_bytes,
            cache_bytes=cache_bytes,
            manifest_bytes=manifest_bytes,
        )

    def gc(self, *, drop_cache: bool = False) -> GcInfo:
        """Remove objects and cache entries no manifest references and leftover temporary
        files (under the exclusive lock, so no put or restore is running). `drop_cache`
        empties the link cache too (it is rebuilt on demand)."""
        if not (self.root / "FORMAT").is_file():
            raise InputError(f"{self.root}: not a snapshot store")
        removed_objects = removed_cache = removed_tmp = removed_bytes = kept = 0
        with self._locked(exclusive=True):
            live: set[str] = set()
            for m in self._all_manifests():
                live.update(m.referenced())
            for path in _files_under(self.files.objects):
                if _digest_of(path) in live:
                    kept += 1
                    continue
                removed_bytes += os.lstat(path).st_size
                os.unlink(path)
                removed_objects += 1
            for path in _files_under(self.files.cache):
                if not drop_cache and _digest_of(path) in live:
                    continue
                removed_bytes += os.lstat(path).st_size
                os.unlink(path)
                removed_cache += 1
            for path in _files_under(self.files.tmp):
                removed_bytes += os.lstat(path).st_size
                os.unlink(path)
                removed_tmp += 1
        return GcInfo(removed_objects, removed_cache, removed_tmp, removed_bytes, kept)

    def remove(self, snapshot_id: str) -> None:
        """Forget a snapshot (its objects go at the next `gc`)."""
        path = self._manifest_path(snapshot_id)
        try:
            path.unlink()
        except FileNotFoundError:
            raise InputError(f"snapshot {snapshot_id!r} is not in the store {self.root}") from None


def detach(path: Path) -> None:
    """Give a hard-linked restored file its own writable copy (same content), so it can be
    edited without touching the store. A file with a single link is only made writable."""
    path = Path(path)
    st = path.lstat()
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: not a regular file")
    if st.st_nlink > 1:
        tmp = path.with_name(f".{path.name}.detach")
        shutil.copyfile(path, tmp)
        os.replace(tmp, path)
    os.chmod(path, (st.st_mode & 0o777) | stat.S_IWUSR)


def _parallel(
    func: Callable[[Sequence[T]], list[R]], items: Sequence[T], advance: Callable[[int], None]
) -> list[R]:
    """`func` over batches of `items` on a thread pool (hashing, compression and file
    system calls release the GIL); results in input order."""
    batches = [items[i : i + BATCH] for i in range(0, len(items), BATCH)]
    out: list[R] = []
    if len(batches) <= 1:
        for batch in batches:
            out.extend(func(batch))
            advance(len(batch))
        return out
    with ThreadPoolExecutor(max_workers=workers()) as pool:
        for batch, result in zip(batches, pool.map(func, batches), strict=True):
            out.extend(result)
            advance(len(batch))
    return out


def _files_under(folder: Path) -> Iterator[str]:
    if not folder.is_dir():
        return
    for dirpath, _dirs, names in os.walk(folder):
        for name in names:
            yield os.path.join(dirpath, name)


def _digest_of(path: str) -> str:
    head = os.path.basename(os.path.dirname(path))
    name = os.path.basename(path).split(".", 1)[0]
    return head + name


_NO_LINKS = (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK)


def _claim(tmp: Path, target: Path) -> None:
    """Publish `tmp` as `target` only if nobody has: create the name exclusively (raises
    FileExistsError otherwise), then replace it atomically with the full manifest. A
    reader may see an empty manifest for that instant and reports it unreadable."""
    os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    os.replace(tmp, target)
    tmp.touch()  # the caller unlinks it


def _wait_until_written(target: Path, seconds: float = 10.0) -> None:
    """Wait while `target` is the empty name `_claim` creates before its atomic replace (an
    instant, unless the winner died there: then the load after this reports it unreadable)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if target.stat().st_size > 0:
                return
        except FileNotFoundError:
            return
        time.sleep(0.02)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


_libc: ctypes.CDLL | None = None


def _syncfs(folder: Path) -> None:
    """Flush the store's filesystem (objects reach the disk before the manifest names
    them); `os.sync` where syncfs(2) is unavailable."""
    global _libc
    try:
        if _libc is None:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fd = os.open(folder, os.O_RDONLY)
        try:
            if _libc.syncfs(fd) == 0:
                return
        finally:
            os.close(fd)
    except (OSError, AttributeError):
        pass
    os.sync()


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
    finally:
        os.close(fd)
