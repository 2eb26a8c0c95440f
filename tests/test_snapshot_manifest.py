"""Snapshot manifests: the columnar format 2, reading format 1, refusing hostile manifests,
and the directory-by-directory hard-link restore built on them."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
import zstandard

from formalbench.core.errors import InputError
from formalbench.store.snapshots import Entry, SnapshotStore, linking, manifest
from tests.test_store_snapshots import describe, make_tree


def encode_format_1(snapshot_id: str, entries: list[Entry]) -> bytes:
    """The encoder as it was before format 2 (kept here to write old manifests)."""
    doc = {
        "format": "formalbench-snapshot/1",
        "id": snapshot_id,
        "created": "2026-01-01T00:00:00+00:00",
        "entries": [list(e) for e in sorted(entries)],
    }
    text = json.dumps(doc, separators=(",", ":"))
    return zstandard.ZstdCompressor(level=9).compress(text.encode("utf-8", "surrogateescape"))


def read_doc(blob: bytes) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(zstandard.ZstdDecompressor().decompress(blob))
    return doc


def write_doc(doc: dict[str, Any]) -> bytes:
    return zstandard.ZstdCompressor().compress(json.dumps(doc).encode())


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_tree(tmp_path / "tree")


@pytest.fixture
def store(tmp_path: Path) -> SnapshotStore:
    return SnapshotStore(tmp_path / "store")


def test_format_2_is_columnar_and_round_trips(tree: Path, store: SnapshotStore) -> None:
    store.put(tree, "one")
    blob = (store.manifests / "one.json.zst").read_bytes()
    doc = read_doc(blob)
    assert doc["format"] == "formalbench-snapshot/2" and "entries" not in doc
    assert len(doc["objects"]) == 6 and sorted(doc["objects"]) == doc["objects"]  # 7 files
    assert doc["dirs"][0] == "" and len(doc["refs"]) == len(doc["exec"]) == 7
    assert doc["exec"].count("1") == 1  # build.sh
    walked, items, _ = manifest.walk(tree)
    by_path = {e.path: e for e in store.entries("one")}
    assert {e.path for e in walked} | {i.rel for i in items} == set(by_path)
    assert by_path["build.sh"].executable and by_path["src/A.v"].size == 37 * 50
    assert by_path["link_to_dir"] == Entry("link_to_dir", "l", "src/deep", False, 0)
    entries = store.entries("one")
    assert entries == sorted(entries)
    again = manifest.decode(manifest.encode("one", entries), Path("m"))
    assert again.entries() == entries


def test_a_format_1_manifest_is_still_read_restored_counted_and_kept_by_gc(
    tree: Path, store: SnapshotStore, tmp_path: Path
) -> None:
    store.put(tree, "new")
    entries = store.entries("new")
    (store.manifests / "old.json.zst").write_bytes(encode_format_1("old", entries))
    store.remove("new")
    assert store.entries("old") == entries
    for mode in ("hardlink", "copy"):
        info = store.restore("old", tmp_path / mode, mode=mode, verify=True)
        assert describe(tmp_path / mode) == describe(tree)
        assert (info.files, info.symlinks, info.dirs) == (7, 3, 4)
    stats = store.stats()
    assert (stats.snapshots, stats.files, stats.objects) == (1, 7, 6)
    assert store.gc().removed_objects == 0
    assert store.put(tree, "old").created is False  # same content under the old id


def test_a_format_1_manifest_with_an_unsafe_path_is_refused(tmp_path: Path) -> None:
    bad = [Entry("../escape", "f", "0" * 64, False, 1)]
    with pytest.raises(InputError, match="bad manifest entry"):
        manifest.decode(encode_format_1("x", bad), tmp_path / "x.json.zst")


def add_dir(doc: dict[str, Any], folder: str) -> None:
    doc["dirs"].append(folder)
    doc["counts"].append(0)


HOSTILE = [
    ("dirs", lambda d: add_dir(d, "../out"), "unsafe directory"),
    ("abs dir", lambda d: add_dir(d, "/tmp/out"), "unsafe directory"),
    ("dotdot dir", lambda d: add_dir(d, "src/../../out"), "unsafe directory"),
    ("empty dir", lambda d: add_dir(d, ""), "unsafe directory"),
    ("root not first", lambda d: d["dirs"].reverse(), "root directory"),
    ("dotdot name", lambda d: d.update(names=d["names"].replace("A.v", "..", 1)), "unsafe file"),
    ("empty name", lambda d: d.update(names=d["names"] + "/"), "differ in length"),
    ("slash in name", lambda d: d.update(names=d["names"].replace("A.v", "x/y", 1)), "length"),
    ("object path", lambda d: d["objects"].__setitem__(0, "../" * 20 + "etc"), "SHA-256"),
    ("ref too big", lambda d: d["refs"].__setitem__(0, 99), "refers to no object"),
    ("negative ref", lambda d: d["refs"].__setitem__(0, -1), "refers to no object"),
    ("string ref", lambda d: d["refs"].__setitem__(0, "0"), "refers to no object"),
    ("float ref", lambda d: d["refs"].__setitem__(0, 1.0), "unexpected number"),
    ("exec bits", lambda d: d.update(exec="2" + d["exec"][1:]), "executable bits"),
    ("counts", lambda d: d["counts"].__setitem__(0, d["counts"][0] + 1), "differ in length"),
    ("link path", lambda d: d["links"].append(["../out", "/etc"]), "unsafe symlink"),
    ("link in link", lambda d: d["links"].append(["link_to_dir/x", "/etc"]), "under symlink"),
    ("link on a dir", lambda d: d["links"].append(["src", "/etc"]), "path of a directory"),
    ("link on a file", lambda d: d["links"].append(["build.sh", "x"]), "path of a file"),
    ("link twice", lambda d: d["links"].append(list(d["links"][0])), "listed twice"),
    ("names type", lambda d: d.update(names=["A.v"]), "not a readable"),
    ("format", lambda d: d.update(format="formalbench-snapshot/9"), "unknown format"),
]


@pytest.mark.parametrize(("change", "message"), [(c, m) for _, c, m in HOSTILE],
                         ids=[n for n, _, _ in HOSTILE])  # fmt: skip
def test_a_hostile_format_2_manifest_is_refused_before_anything_is_placed(
    tree: Path, store: SnapshotStore, tmp_path: Path, change: Any, message: str
) -> None:
    store.put(tree, "one")
    path = store.manifests / "one.json.zst"
    doc = read_doc(path.read_bytes())
    change(doc)
    path.write_bytes(write_doc(doc))
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(InputError, match=message) as caught:
        store.restore("one", tmp_path / "out", mode="hardlink")
    assert "\n" not in str(caught.value) and "one.json.zst" in str(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # not even the destination


def test_directories_whose_parent_another_worker_makes_are_restored(
    store: SnapshotStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many small tasks on several threads: a directory's task may run before its
    parent's, which must then be made on the way (and not fail when it exists)."""
    tree = tmp_path / "tree"
    for i in range(30):
        deep = tree / f"a{i % 3}" / f"b{i}" / "c" / "d"
        deep.mkdir(parents=True)
        (deep / "f.v").write_text(f"file {i % 4}\n")
        (deep.parent / "g.v").write_text(f"file {i % 5}\n")
    store.put(tree, "deep")
    monkeypatch.setattr(linking, "threads", lambda: 4)
    monkeypatch.setattr(linking, "TASKS_PER_THREAD", 30)
    seen: list[int] = []
    monkeypatch.setattr(linking, "_split", lambda starts, parts: [range(g, g + 1) for g in
                        reversed(range(len(starts) - 1))])  # fmt: skip
    real = linking._link_dirs

    def recording(*args: Any) -> int:
        seen.append(args[1][0])
        return real(*args)

    monkeypatch.setattr(linking, "_link_dirs", recording)
    info = store.restore("deep", tmp_path / "out", mode="hardlink", verify=True)
    assert describe(tmp_path / "out") == describe(tree)
    assert (info.linked, info.copied, info.dirs) == (60, 0, 93)
    assert len(seen) == 94  # one task a directory (and the root), children first


def test_progress_advances_per_directory_to_the_file_count(
    tree: Path, store: SnapshotStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from formalbench.store.snapshots import store as store_module

    steps: list[int] = []
    totals: list[tuple[bool, int]] = []

    class Bar:
        def __init__(self, enabled: bool, description: str, total: int) -> None:
            totals.append((enabled, total))

        def __enter__(self) -> Any:
            return steps.append

        def __exit__(self, *exc: object) -> None:
            return None

    monkeypatch.setattr(store_module, "bar", Bar)
    store.put(tree, "one")
    steps.clear()
    store.restore("one", tmp_path / "out", mode="hardlink", progress=True)
    assert totals[-1] == (True, 7)
    # one step a directory ("", empty_dir, src, src/deep, src/deep/er), in any order
    assert sorted(steps) == [0, 0, 1, 2, 4]


@pytest.mark.parametrize("code", [errno.EXDEV, errno.EPERM])
def test_a_refused_link_of_an_executable_becomes_a_counted_executable_copy(
    tree: Path, store: SnapshotStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    store.put(tree, "one")
    real_link = os.link

    def link(src: str, dst: str, *args: Any, **kwargs: Any) -> None:
        if dst.endswith(("build.sh", "A.v")):
            raise OSError(code, os.strerror(code), dst)
        real_link(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "link", link)
    info = store.restore("one", tmp_path / "out", mode="hardlink")
    assert describe(tmp_path / "out") == describe(tree)  # build.sh kept its executable bit
    assert (info.linked, info.copied) == (4, 3)  # build.sh, A.v, copy_of_A.v
    script = tmp_path / "out" / "build.sh"
    assert script.stat().st_nlink == 1 and os.access(script, os.X_OK)


def test_another_link_error_fails_the_restore_and_leaves_nothing(
    tree: Path, store: SnapshotStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.put(tree, "one")

    def link(src: str, dst: str, *args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", dst)

    monkeypatch.setattr(os, "link", link)
    with pytest.raises(OSError, match="No space"):
        store.restore("one", tmp_path / "out", mode="hardlink")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("parallel_bytes", [0, 1 << 40])
def test_a_cold_link_cache_is_rebuilt_on_threads_or_serially(
    tree: Path,
    store: SnapshotStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    parallel_bytes: int,
) -> None:
    from formalbench.store.snapshots import store as store_module

    monkeypatch.setattr(store_module, "PARALLEL_BYTES", parallel_bytes)
    store.put(tree, "one")
    info = store.restore("one", tmp_path / "cold", mode="hardlink")
    assert describe(tmp_path / "cold") == describe(tree) and info.linked == 7
    entries = sorted(p.name for p in (tmp_path / "store" / "cache").rglob("*") if p.is_file())
    assert len(entries) == 6 and sum(name.endswith(".x") for name in entries) == 1  # 6 contents
    assert list((tmp_path / "store" / "tmp").iterdir()) == []  # no temporary file left


def test_the_destination_may_be_a_symlink_to_an_empty_folder(
    tree: Path, store: SnapshotStore, tmp_path: Path
) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    store.put(tree, "one")
    info = store.restore("one", tmp_path / "alias", mode="hardlink")
    assert info.linked == 7 and describe(tmp_path / "real") == describe(tree)
