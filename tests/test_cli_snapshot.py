"""`formalbench snapshot put|restore|stats|gc`: JSON output and one-line errors (exit 2)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from typer.testing import CliRunner

from formalbench.cli.main import app

STATS_KEYS = {"snapshots", "files", "logical_bytes", "unique_bytes", "stored_bytes", "dedup_ratio"}


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_put_restore_stats_gc_through_the_cli(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "a.txt").write_text("same\n" * 100)
    (tree / "b.txt").write_text("same\n" * 100)
    (tree / "link").symlink_to("b.txt")
    store = str(tmp_path / "store")
    code, out, _ = invoke("snapshot", "put", str(tree), "--store", store, "--id", "r1", "--json")
    assert code == 0 and json.loads(out)["files"] == 2
    (tree / "b.txt").write_text("other\n")
    assert invoke("snapshot", "put", str(tree), "--store", store, "--id", "r2")[0] == 0

    code, out, _ = invoke("snapshot", "stats", "--store", store, "--json")
    stats = json.loads(out)
    assert code == 0 and stats.keys() >= STATS_KEYS
    assert (stats["snapshots"], stats["files"]) == (2, 4)
    assert stats["logical_bytes"] == 500 * 3 + 6 and stats["unique_bytes"] == 500 + 6
    assert stats["dedup_ratio"] == round(1 - 506 / 1506, 6)

    dest = tmp_path / "out"
    code, out, _ = invoke(
        "snapshot", "restore", "r1", "--store", store, "--to", str(dest), "--verify", "--json"
    )
    assert code == 0 and json.loads(out)["verified"] is True
    assert (dest / "b.txt").read_text() == "same\n" * 100 and os.readlink(dest / "link") == "b.txt"

    assert invoke("snapshot", "rm", "r1", "--store", store)[0] == 0
    code, out, _ = invoke("snapshot", "gc", "--store", store, "--json")
    assert code == 0 and json.loads(out)["removed_objects"] == 0  # "same" is still in r2
    code, out, _ = invoke("snapshot", "ls", "--store", store)
    assert out.split() == ["r2"]


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    cases = [
        ("snapshot", "put", str(tmp_path / "missing"), "--store", store, "--id", "x"),
        ("snapshot", "stats", "--store", store),
        ("snapshot", "restore", "x", "--store", store, "--to", str(tmp_path / "o")),
    ]
    for args in cases:
        code, out, err = invoke(*args)
        assert code == 2, args
        (line,) = err.strip().splitlines()
        assert line.startswith("formalbench: error: ") and "Traceback" not in err
    tree = tmp_path / "t"
    tree.mkdir()
    (tree / "f").write_text("x")
    assert invoke("snapshot", "put", str(tree), "--store", store, "--id", "x")[0] == 0
    code, _, err = invoke("snapshot", "restore", "nope", "--store", store, "--to", str(tmp_path))
    assert code == 2 and "not in the store" in err
    code, _, err = invoke(
        "snapshot", "restore", "x", "--store", store, "--to", str(tmp_path / "o"), "--mode", "z"
    )
    assert code == 2 and "restore mode 'z'" in err
