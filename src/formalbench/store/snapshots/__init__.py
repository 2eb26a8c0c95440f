"""Content-addressed snapshot store of build trees (APE-Bench's Eleanstic), any tree, Lean or not.

`SnapshotStore(root).put(tree, id)` keeps a tree once per content; `restore(id, dest)` brings
it back by hard link, reflink or copy, in parallel; `stats()` reports deduplication; `gc()`
removes what no snapshot references. See `store.py` for the on-disk layout and guarantees.
"""

from formalbench.store.snapshots.objects import CorruptObjectError
from formalbench.store.snapshots.records import (
    Entry,
    GcInfo,
    RestoreInfo,
    SnapshotInfo,
    StoreStats,
)
from formalbench.store.snapshots.store import RestoreMode, SnapshotStore, detach

__all__ = [
    "CorruptObjectError",
    "Entry",
    "GcInfo",
    "RestoreInfo",
    "RestoreMode",
    "SnapshotInfo",
    "SnapshotStore",
    "StoreStats",
    "detach",
]
