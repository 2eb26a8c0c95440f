"""What the snapshot store hands back: plain dataclasses, serialisable with `as_dict`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple


class Entry(NamedTuple):
    """One manifest line. `ref` is the SHA-256 hex of a file's content, the target of a
    symlink, or "" for a directory; `kind` is "f", "l" or "d"; `size` is 0 for non-files."""

    path: str
    kind: str
    ref: str
    executable: bool
    size: int


class _AsDict:
    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)  # type: ignore[call-overload]
        return {k: str(v) if isinstance(v, Path) else v for k, v in out.items()}


@dataclass(frozen=True)
class SnapshotInfo(_AsDict):
    """The outcome of `put`. `created` is False when the same id with the same content was
    already stored (put is idempotent); `new_objects`/`new_stored_bytes` count what this put
    added to the store, `logical_bytes` the size of the tree's files."""

    snapshot_id: str
    files: int
    symlinks: int
    dirs: int
    logical_bytes: int
    new_objects: int
    new_stored_bytes: int
    skipped: tuple[str, ...]  # special files (sockets, fifos, devices) left out
    created: bool
    seconds: float


@dataclass(frozen=True)
class RestoreInfo(_AsDict):
    """The outcome of `restore`. `mode` is the mode asked for after resolving "auto";
    `linked`/`reflinked`/`copied` say how the files were actually placed (a hard link that
    hits the filesystem's link limit or crosses devices falls back to a copy)."""

    snapshot_id: str
    dest: Path
    mode: str
    files: int
    symlinks: int
    dirs: int
    linked: int
    reflinked: int
    copied: int
    bytes: int
    verified: bool
    seconds: float


@dataclass(frozen=True)
class StoreStats(_AsDict):
    """Sizes over the whole store. `logical_bytes` sums every file of every snapshot,
    `unique_bytes` every distinct content once, `stored_bytes` what the store really holds
    on disk (compressed objects, the uncompressed link cache and the manifests, by file
    size); `dedup_ratio` = 1 - unique_bytes / logical_bytes (0 for an empty store)."""

    snapshots: int
    files: int
    logical_bytes: int
    unique_bytes: int
    stored_bytes: int
    dedup_ratio: float
    objects: int
    compressed_objects: int
    object_bytes: int
    cache_bytes: int
    manifest_bytes: int


@dataclass(frozen=True)
class GcInfo(_AsDict):
    """The outcome of `gc`: objects and link-cache entries no manifest references, and
    temporary files a crashed put left behind, are removed."""

    removed_objects: int
    removed_cache: int
    removed_tmp: int
    removed_bytes: int
    kept_objects: int
