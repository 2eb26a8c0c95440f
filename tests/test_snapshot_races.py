"""Snapshots under pressure (issue 23 item 4): two puts of one id at once, a manifest whose
symlink takes a directory's path (through the CLI: one line, exit 2), sparse files."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest
import zstandard
from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.core.errors import InputError
from formalbench.store.snapshots import SnapshotStore, manifest
from tests.test_snapshot_manifest import read_doc


def _race(store: SnapshotStore, trees: list[Path], monkeypatch: pytest.MonkeyPatch) -> list:
    """Both puts pass their "is the id free?" check before either publishes."""
    barrier = threading.Barrier(2, timeout=20)
    encode = manifest.encode

    def encode_together(*args, **kwargs):  # type: ignore[no-untyped-def]
        barrier.wait()
        return encode(*args, **kwargs)

    monkeypatch.setattr(manifest, "encode", encode_together)
    out: list = [None, None]

    def put(k: int) -> None:
        try:
            out[k] = store.put(trees[k], "same-id").created
        except InputError as exc:
            out[k] = exc

    threads = [threading.Thread(target=put, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


@pytest.mark.parametrize("hard_links", [True, False], ids=["link", "no-links"])
def test_two_puts_of_one_id_at_once_exactly_one_wins(tmp_path, monkeypatch, hard_links) -> None:
    if not hard_links:  # a filesystem without hard links: the exclusive-create fallback
        real_link = os.link

        def no_link(src, dst, *args, **kwargs):  # type: ignore[no-untyped-def]
            if str(dst).endswith(".json.zst"):
                raise OSError(errno.EPERM, "Operation not permitted")
            return real_link(src, dst, *args, **kwargs)

        monkeypatch.setattr(os, "link", no_link)
    trees = []
    for k in (0, 1):
        tree = tmp_path / f"tree{k}"
        tree.mkdir()
        (tree / "f.txt").write_text(f"content {k}\n")
        trees.append(tree)
    store = SnapshotStore(tmp_path / "store")
    got = _race(store, trees, monkeypatch)
    assert sorted(map(type, got), key=str) == sorted([bool, InputError], key=str)
    loser = next(g for g in got if isinstance(g, InputError))
    assert "another put at the same time" in str(loser)
    winner = trees[got.index(True)]
    store.restore("same-id", tmp_path / "out")
    assert (tmp_path / "out" / "f.txt").read_text() == (winner / "f.txt").read_text()
    # the same content twice at once: one creates it, the other is told it already existed
    store.remove("same-id")
    assert sorted(_race(store, [trees[0], trees[0]], monkeypatch)) == [False, True]
    assert not list((store.root / "tmp").glob("*"))  # no manifest left behind


def test_a_symlink_on_a_directory_path_is_one_line_through_the_cli(tmp_path) -> None:
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "a.v").write_text("x\n")
    os.symlink("sub/a.v", tree / "ln")
    store = SnapshotStore(tmp_path / "store")
    store.put(tree, "s")
    path = store.manifests / "s.json.zst"
    doc = read_doc(path.read_bytes())
    doc["links"] = [["sub", "/etc"]]
    path.write_bytes(zstandard.ZstdCompressor().compress(__import__("json").dumps(doc).encode()))
    res = CliRunner().invoke(
        app,
        [
            "snapshot",
            "restore",
            "s",
            "--store",
            str(tmp_path / "store"),
            "--to",
            str(tmp_path / "o"),
        ],
    )
    assert res.exit_code == 2 and "has the path of a directory" in res.output
    assert "Traceback" not in res.output and not (tmp_path / "o").exists()


@pytest.mark.parametrize("mode", ["hardlink", "copy"])
def test_a_sparse_file_is_restored_with_its_holes(tmp_path, mode) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    size = 32 * 1024 * 1024
    with open(tree / "sparse.img", "wb") as out:
        out.write(b"head")
        out.seek(size // 2)
        out.write(b"middle")
        out.truncate(size)
    if os.stat(tree / "sparse.img").st_blocks * 512 >= size:
        pytest.skip("this filesystem does not keep holes")
    store = SnapshotStore(tmp_path / "store")
    store.put(tree, "sp")
    dest = tmp_path / "out"
    store.restore("sp", dest, mode=mode, verify=True)
    restored = dest / "sparse.img"
    assert restored.read_bytes() == (tree / "sparse.img").read_bytes()
    assert os.stat(restored).st_blocks * 512 < size // 8  # holes kept, not 32 MiB written
