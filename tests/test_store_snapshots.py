"""The snapshot store: round trips in every restore mode, dedup, gc, verification, crash safety."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from formalbench.core.errors import FormalbenchError, InputError
from formalbench.store.snapshots import CorruptObjectError, SnapshotStore, detach
from formalbench.store.snapshots import objects as objects_module
from formalbench.store.snapshots import store as store_module
from formalbench.store.snapshots.objects import FIXED_MTIME

MODES = ["hardlink", "reflink", "copy", "auto"]


def make_tree(root: Path) -> Path:
    """A small build-like tree with every kind of entry the store must keep."""
    (root / "src" / "deep" / "er").mkdir(parents=True)
    (root / "empty_dir").mkdir()
    (root / "src" / "A.v").write_text("Lemma a : True. Proof. exact I. Qed.\n" * 50)
    (root / "src" / "A.vo").write_bytes(bytes(range(256)) * 40)
    (root / "src" / "deep" / "er" / "copy_of_A.v").write_text(
        "Lemma a : True. Proof. exact I. Qed.\n" * 50
    )
    (root / "src" / "empty.txt").write_bytes(b"")
    (root / "random.bin").write_bytes(os.urandom(5000))  # incompressible: stored raw
    tool = root / "build.sh"
    tool.write_text("#!/bin/sh\necho built\n")
    tool.chmod(0o755)
    (root / "link_to_file").symlink_to("src/A.v")
    (root / "link_to_dir").symlink_to("src/deep")
    (root / "dangling").symlink_to("/no/such/target")
    (root / "src" / "caf\u00e9 \u03bb.txt").write_text("unicode name\n")
    return root


def describe(root: Path) -> dict[str, tuple]:
    """Everything a restore must reproduce: kind, content or target, executable bit."""
    out: dict[str, tuple] = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("l", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("d",)
            else:
                out[rel] = ("f", path.read_bytes(), bool(st.st_mode & stat.S_IXUSR))
    return out


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_tree(tmp_path / "tree")


@pytest.fixture
def store(tmp_path: Path) -> SnapshotStore:
    return SnapshotStore(tmp_path / "store")


@pytest.mark.parametrize("mode", MODES)
def test_round_trip_keeps_content_symlinks_exec_bits_and_empty_entries(
    tree: Path, store: SnapshotStore, tmp_path: Path, mode: str
) -> None:
    info = store.put(tree, "one")
    assert (info.files, info.symlinks, info.created) == (7, 3, True)
    restored = store.restore("one", tmp_path / "out", mode=mode, verify=True)
    assert describe(tmp_path / "out") == describe(tree)
    assert restored.files == 7 and restored.linked + restored.reflinked + restored.copied == 7
    a_vo = tmp_path / "out" / "src" / "A.vo"
    assert a_vo.stat().st_mtime == FIXED_MTIME  # one timestamp: make sees an up-to-date tree
    if restored.mode == "hardlink":
        assert restored.linked == 7
        assert not a_vo.stat().st_mode & 0o222  # shared with the store: read-only
    else:
        assert a_vo.stat().st_mode & stat.S_IWUSR  # private copies are writable


def test_put_is_idempotent_and_refuses_other_content_under_a_taken_id(
    tree: Path, store: SnapshotStore
) -> None:
    store.put(tree, "one")
    again = store.put(tree, "one")
    assert not again.created and again.new_objects == 0
    (tree / "src" / "A.v").write_text("changed\n")
    with pytest.raises(InputError, match="already exists"):
        store.put(tree, "one")
    assert store.ids() == ["one"]


def test_dedup_across_snapshots_counts_each_content_once(
    tree: Path, store: SnapshotStore, tmp_path: Path
) -> None:
    first = store.put(tree, "c1")
    # 7 files, 6 distinct contents (copy_of_A.v duplicates A.v)
    assert first.new_objects == 6
    (tree / "src" / "A.vo").write_bytes(b"rebuilt" * 100)
    second = store.put(tree, "c2")
    assert second.new_objects == 1
    sizes = [p.stat().st_size for p in tree.rglob("*") if p.is_file() and not p.is_symlink()]
    stats = store.stats()
    assert stats.snapshots == 2 and stats.files == 14
    assert stats.logical_bytes == first.logical_bytes + sum(sizes)
    unique = first.logical_bytes - len("Lemma a : True. Proof. exact I. Qed.\n" * 50) + 700
    assert stats.unique_bytes == unique
    assert stats.dedup_ratio == pytest.approx(1 - unique / stats.logical_bytes, abs=1e-6)
    assert stats.objects == 7
    assert 0 < stats.compressed_objects < stats.objects  # random.bin and tiny files stay raw
    on_disk = sum(p.stat().st_size for p in (tmp_path / "store").rglob("*") if p.is_file())
    assert stats.stored_bytes <= on_disk and stats.stored_bytes < stats.logical_bytes


def test_gc_removes_only_objects_no_manifest_references(
    tree: Path, store: SnapshotStore, tmp_path: Path
) -> None:
    store.put(tree, "c1")
    store.restore("c1", tmp_path / "linked", mode="hardlink")  # fills the link cache
    (tree / "src" / "A.vo").write_bytes(b"rebuilt" * 100)
    store.put(tree, "c2")
    assert store.gc().removed_objects == 0
    store.remove("c1")
    assert store.ids() == ["c2"]
    info = store.gc()
    assert info.removed_objects == 1 and info.kept_objects == 6
    assert info.removed_cache == 1  # the cache entry of the old A.vo went too
    store.restore("c2", tmp_path / "out", mode="copy", verify=True)
    assert describe(tmp_path / "out") == describe(tree)
    with pytest.raises(InputError, match="not in the store"):
        store.remove("c1")


@pytest.mark.parametrize("mode", ["copy", "hardlink"])
def test_verify_detects_a_corrupted_object(
    tree: Path, store: SnapshotStore, tmp_path: Path, mode: str
) -> None:
    store.put(tree, "one")
    for obj in (tmp_path / "store" / "objects").rglob("*"):
        if obj.is_file() and obj.stat().st_size == 5000:  # random.bin, stored raw
            obj.chmod(0o644)
            obj.write_bytes(b"x" * 5000)
    with pytest.raises(CorruptObjectError, match="corrupt"):
        store.restore("one", tmp_path / "out", mode=mode, verify=True)
    assert not (tmp_path / "out").exists()  # a failed restore leaves nothing behind


def test_a_corrupt_compressed_object_fails_even_without_verify(
    tree: Path, store: SnapshotStore, tmp_path: Path
) -> None:
    store.put(tree, "one")
    zst = max((tmp_path / "store" / "objects").rglob("*.zst"), key=lambda p: p.stat().st_size)
    zst.chmod(0o644)
    zst.write_bytes(zst.read_bytes()[:-8] + b"garbage!")
    with pytest.raises(CorruptObjectError):
        store.restore("one", tmp_path / "out", mode="copy")


def test_writing_through_a_hard_linked_file_never_reaches_the_objects(
    tree: Path, store: SnapshotStore, tmp_path: Path
) -> None:
    store.put(tree, "one")
    store.restore("one", tmp_path / "a", mode="hardlink")
    for name in ("random.bin", "src/A.vo"):  # stored raw and stored compressed
        victim = tmp_path / "a" / name
        victim.chmod(0o644)  # what root, or a careless tool, can do
        victim.write_bytes(b"tampered")
    store.restore("one", tmp_path / "b", mode="hardlink")  # notices and rebuilds the cache
    assert describe(tmp_path / "b") == describe(tree)
    store.restore("one", tmp_path / "c", mode="copy", verify=True)  # objects untouched


def test_detach_gives_a_restored_file_its_own_writable_copy(
    tree: Path, store: SnapshotStore, tmp_path: Path
) -> None:
    store.put(tree, "one")
    store.restore("one", tmp_path / "a", mode="hardlink")
    store.restore("one", tmp_path / "b", mode="hardlink")
    mine = tmp_path / "a" / "src" / "A.v"
    detach(mine)
    mine.write_text("my edit\n")
    assert (tmp_path / "b" / "src" / "A.v").read_text() == (tree / "src" / "A.v").read_text()


def test_a_crash_before_the_manifest_leaves_no_snapshot_and_gc_cleans_up(
    tree: Path, store: SnapshotStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(*args: object, **kwargs: object) -> bool:
        raise KeyboardInterrupt("killed between objects and manifest")

    monkeypatch.setattr(SnapshotStore, "_publish_manifest", crash)
    with pytest.raises(KeyboardInterrupt):
        store.put(tree, "one")
    monkeypatch.undo()
    assert not store.has("one") and store.ids() == []
    (tmp_path / "store" / "tmp" / "half-written").write_bytes(b"partial")
    assert store.stats().objects == 6  # objects written, none referenced
    info = store.gc()
    assert (info.removed_objects, info.removed_tmp, info.kept_objects) == (6, 1, 0)
    assert store.put(tree, "one").new_objects == 6


def test_large_files_are_streamed(
    tree: Path, store: SnapshotStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "STREAM_LIMIT", 1000)  # puts in chunks
    monkeypatch.setattr(objects_module, "STREAM_LIMIT", 1000)  # restores in chunks
    info = store.put(tree, "one")
    again = SnapshotStore(tmp_path / "store").put(tree, "two")
    assert info.new_objects == 6 and again.new_objects == 0
    store.restore("two", tmp_path / "out", mode="copy", verify=True)
    assert describe(tmp_path / "out") == describe(tree)


def test_concurrent_puts_of_the_same_content_are_safe(
    tree: Path, store: SnapshotStore, tmp_path: Path
) -> None:
    errors: list[BaseException] = []

    def put(i: int) -> None:
        try:
            SnapshotStore(tmp_path / "store").put(tree, f"s{i}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=put, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.stats().objects == 6 and len(store.ids()) == 4
    assert store.gc().removed_objects == 0
    store.restore("s3", tmp_path / "out", mode="copy", verify=True)
    assert describe(tmp_path / "out") == describe(tree)


def test_excluded_paths_are_left_out(tree: Path, store: SnapshotStore) -> None:
    info = store.put(tree, "one", exclude=[".git", "src/deep", "random.bin"])
    paths = {e.path for e in store.entries("one")}
    assert "src/deep" not in paths and "src/deep/er/copy_of_A.v" not in paths
    assert "random.bin" not in paths and "src/A.v" in paths and info.files == 5


def test_undecodable_file_names_round_trip(store: SnapshotStore, tmp_path: Path) -> None:
    tree = tmp_path / "t"
    tree.mkdir()
    name = os.fsdecode(b"latin1-\xe9t\xe9.v")  # not UTF-8
    (tree / name).write_text("x")
    store.put(tree, "one")
    store.restore("one", tmp_path / "out", mode="copy", verify=True)
    assert os.listdir(os.fsencode(tmp_path / "out")) == [b"latin1-\xe9t\xe9.v"]


def test_special_files_are_skipped_and_named(store: SnapshotStore, tmp_path: Path) -> None:
    tree = tmp_path / "t"
    tree.mkdir()
    (tree / "f").write_text("x")
    os.mkfifo(tree / "pipe")
    info = store.put(tree, "one")
    assert info.skipped == ("pipe",) and info.files == 1


def test_a_store_inside_the_tree_is_not_snapshotted(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    inner = SnapshotStore(tree / ".snapshots")
    inner.put(tree, "one")
    assert inner.put(tree, "one").created is False  # the store's growth is not content
    assert not any(e.path.startswith(".snapshots") for e in inner.entries("one"))


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (lambda s, t, d: s.put(d / "missing", "x"), "not a directory"),
        (lambda s, t, d: s.put(t, "../evil"), "snapshot id"),
        (lambda s, t, d: s.restore("nope", d / "o"), "not in the store"),
        (lambda s, t, d: s.restore("one", t), "not an empty directory"),
        (lambda s, t, d: s.restore("one", d / "o", mode="fast"), "restore mode"),
        (lambda s, t, d: SnapshotStore(t).put(t, "x"), "not a snapshot store"),
        (lambda s, t, d: SnapshotStore(t).gc(), "not a snapshot store"),
    ],
)
def test_bad_input_is_one_line_error(
    tree: Path, store: SnapshotStore, tmp_path: Path, action: object, message: str
) -> None:
    store.put(tree, "one")
    with pytest.raises(FormalbenchError, match=message) as caught:
        action(store, tree, tmp_path)  # type: ignore[operator]
    assert "\n" not in str(caught.value)


def test_files_that_cannot_be_hard_linked_are_copied_and_counted(
    tree: Path, store: SnapshotStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The link limit (EMLINK) on some files: those are copied, the others linked, and the
    counts say which (the fast hard-link loop hands only the failures back)."""
    import errno

    store.put(tree, "one")
    store.restore("one", tmp_path / "warm", mode="hardlink")  # link cache materialised
    real_link = os.link

    def link(src: str, dst: str, *args: object, **kwargs: object) -> None:
        if dst.endswith((".vo", ".bin")):
            raise OSError(errno.EMLINK, "Too many links", dst)
        real_link(src, dst, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "link", link)
    info = store.restore("one", tmp_path / "out", mode="hardlink", verify=True)
    assert describe(tmp_path / "out") == describe(tree)
    assert (info.linked, info.copied) == (5, 2)
    assert (tmp_path / "out" / "src" / "A.vo").stat().st_nlink == 1  # a copy of its own
    assert (tmp_path / "out" / "src" / "A.v").stat().st_nlink > 1
