"""REPL mode and the process pool, driven through the stand-in REPL (tests/standins/fake_repl.py),
which replays the real recorded sessions and can be told to hang, crash or grow."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from formalbench.backends.base import CheckRequest
from formalbench.backends.lean.backend import LeanBackend
from formalbench.backends.lean.header import split_header
from formalbench.backends.lean.pool import ReplPool
from formalbench.backends.lean.repl_check import check_in_pool
from formalbench.core.errors import BackendError
from formalbench.core.records import CheckStatus, Severity
from tests.shared_data import FIXTURES, needs_shared

FAKE = Path(__file__).resolve().parent / "standins" / "fake_repl.py"
RECORDINGS = FIXTURES / "lean-repl"  # real REPL sessions the stand-in replays
HEADER = "import Mathlib\nimport Aesop\n\nset_option maxHeartbeats 400000\n\nopen Real\n"
RECORDED_BODY = "theorem foo (x : Int) : x = x := by\n  have h : x = 1 := by sorry"  # have_by_sorry


def fake(log: Path, *flags: str) -> list[str]:
    return [sys.executable, str(FAKE), "--fixtures", str(RECORDINGS), "--log", str(log), *flags]


def requests_of(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def headers_sent(log: Path) -> list[dict]:
    return [r for r in requests_of(log) if "env" not in r["request"]]


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "repl.log"


@needs_shared
def test_recorded_reply_is_moved_to_source_lines_with_holes_and_axioms(log: Path) -> None:
    source = HEADER + "\n-- the candidate\n" + RECORDED_BODY
    with LeanBackend(repl_command=fake(log), workers=1) as lean:
        result = lean.check(source, targets=["foo"])
    lines = source.split("\n")
    theorem_line = lines.index(RECORDED_BODY.split("\n")[0]) + 1
    assert result.status == CheckStatus.ok and not result.compiled
    (error,) = result.diagnostics  # the axiom answer is not a diagnostic of the candidate
    assert error.message.startswith("unsolved goals")
    assert (error.line, error.column, error.end_line) == (theorem_line, 33, theorem_line + 1)
    (hole,) = result.holes
    assert hole.line == theorem_line + 1 and lines[hole.line - 1][hole.column :] == "sorry"
    assert hole.goal == "x : Int\n⊢ x = 1" and hole.proof_state == 0
    assert result.axioms == {"foo": ["propext", "Classical.choice", "Quot.sound"]}
    assert all(r["lines"] == 1 for r in requests_of(log))  # never a raw line break on the wire


def test_header_is_elaborated_once_across_checks(log: Path) -> None:
    with LeanBackend(repl_command=fake(log), workers=1) as lean:
        for i in range(5):
            comment = f"-- variant {i}\n" if i % 2 else ""
            result = lean.check(comment + HEADER + f"theorem t{i} : True := trivial")
            assert result.compiled
        other = lean.check("import Lean\ntheorem u : True := trivial")
        again = lean.check(HEADER + "theorem v : True := trivial")
    assert other.compiled and again.compiled
    sent = [r["request"]["cmd"] for r in headers_sent(log)]
    assert sent == [split_header(HEADER).header_key, "import Lean"]
    assert len({r["pid"] for r in requests_of(log)}) == 1


def test_axioms_are_read_from_the_answers_and_missing_targets_noted(log: Path) -> None:
    with LeanBackend(repl_command=fake(log, "--axioms", "none"), workers=1) as lean:
        clean = lean.check(HEADER + "theorem a : True := trivial", targets=["a"])
        sorried = lean.check(
            HEADER + "theorem b : True := sorry -- fake:axioms=sorryAx", targets=["b"]
        )
        missing = lean.check(HEADER + "theorem c : True := trivial", targets=["c", "gone"])
    assert clean.axioms == {"a": []} and clean.diagnostics == []
    assert sorried.axioms == {"b": ["sorryAx"]}
    assert missing.axioms == {"c": []} and "gone" in missing.detail
    source_lines = (HEADER + "theorem c : True := trivial").count("\n") + 1
    assert all(d.line is None or d.line <= source_lines for d in missing.diagnostics)


def test_marked_error_lands_on_its_source_position(log: Path) -> None:
    source = (
        HEADER + "/- a block\ncomment -/\n\ntheorem t : True := by\n  trivial -- fake:error-here\n"
    )
    with LeanBackend(repl_command=fake(log), workers=1) as lean:
        result = lean.check(source)
    (error,) = result.errors
    line = source.split("\n")[error.line - 1]
    assert line[error.column :].startswith("fake:error-here")


def test_timeout_is_cut_on_time_and_the_pool_keeps_serving(log: Path) -> None:
    with LeanBackend(repl_command=fake(log), workers=1, timeout=30) as lean:
        assert lean.check(HEADER + "theorem w : True := trivial").compiled  # warm
        started = time.perf_counter()
        hung = lean.check(HEADER + "theorem h : True := trivial -- fake:hang", timeout=2.0)
        waited = time.perf_counter() - started
        after = lean.check(HEADER + "theorem x : True := trivial")
    assert hung.status == CheckStatus.timeout and not hung.compiled
    assert 2.0 <= waited < 2.2, waited  # cut within 10 % of the limit
    assert after.compiled
    assert len({r["pid"] for r in requests_of(log)}) == 2  # killed and restarted


def test_crash_is_a_result_and_the_next_check_recovers(log: Path) -> None:
    with LeanBackend(repl_command=fake(log), workers=1) as lean:
        crashed = lean.check(HEADER + "theorem s : True := trivial -- fake:crash")
        after = lean.check(HEADER + "theorem y : True := trivial")
    assert crashed.status == CheckStatus.crash and "Stack overflow" in crashed.detail
    assert after.compiled and len(headers_sent(log)) == 2


def test_memory_ceiling_cuts_a_growing_check(log: Path) -> None:
    with LeanBackend(repl_command=fake(log), workers=1, memory_mb=150) as lean:
        grown = lean.check(HEADER + "theorem g : True := trivial -- fake:grow=250 fake:sleep=2")
        after = lean.check(HEADER + "theorem z : True := trivial")
    assert grown.status == CheckStatus.out_of_memory and grown.elapsed < 1.5
    assert after.compiled and len({r["pid"] for r in requests_of(log)}) == 2


def test_process_past_the_ceiling_is_restarted_after_its_reply(log: Path) -> None:
    # no sampling during the check (long poll): only the check on return can see the growth
    pool = ReplPool(fake(log), workers=1, memory_mb=150, poll_interval=60)
    try:
        grown = check_in_pool(
            pool,
            split_header(HEADER + "def q := 1 -- fake:grow=250"),
            [],
            timeout=10,
            header_timeout=10,
        )
        assert grown.status == CheckStatus.ok
        assert pool.stats()["stopped_memory"] == 1 and pool.stats()["alive"] == 0
        after = check_in_pool(
            pool, split_header(HEADER + "def r := 2"), [], timeout=10, header_timeout=10
        )
        assert after.compiled
    finally:
        pool.close()
    assert len({r["pid"] for r in requests_of(log)}) == 2


def test_process_is_restarted_after_max_uses(log: Path) -> None:
    with LeanBackend(repl_command=fake(log), workers=1, max_uses=3) as lean:
        results = [lean.check(HEADER + f"def n{i} := {i}") for i in range(7)]
        stats = lean.pool_stats()
    assert all(r.compiled for r in results)
    pids = [r["pid"] for r in requests_of(log) if "env" in r["request"]]
    assert [pids.index(p) for p in pids] == [0, 0, 0, 3, 3, 3, 6]
    assert len(headers_sent(log)) == 3 and stats["stopped_max_uses"] == 2


def test_two_workers_check_at_the_same_time(log: Path) -> None:
    requests = [
        CheckRequest(source=HEADER + f"def m{i} := {i} -- fake:sleep=0.6", targets=[f"m{i}"])
        for i in range(4)
    ]
    with LeanBackend(repl_command=fake(log), workers=2) as lean:
        results = list(lean.check_many(requests))
    assert [list(r.axioms) for r in results] == [["m0"], ["m1"], ["m2"], ["m3"]]
    bodies = [r for r in requests_of(log) if "env" in r["request"]]
    assert len({r["pid"] for r in bodies}) == 2
    assert len(headers_sent(log)) == 2
    first, second = bodies[0], next(r for r in bodies if r["pid"] != bodies[0]["pid"])
    assert abs(first["t"] - second["t"]) < 0.6  # received while the other was still sleeping


def test_stale_environment_is_rebuilt_once(log: Path) -> None:
    pool = ReplPool(fake(log), workers=1)
    split = split_header(HEADER + "def e := 1")
    try:
        assert check_in_pool(pool, split, [], timeout=10, header_timeout=10).compiled
        with pool.lease(split.header_key) as proc:
            proc.headers[split.header_key].env = 99  # as if the REPL had forgotten it
        result = check_in_pool(pool, split, ["e"], timeout=10, header_timeout=10)
    finally:
        pool.close()
    assert result.compiled and result.axioms == {"e": ["propext", "Classical.choice", "Quot.sound"]}


def test_noise_on_stdout_does_not_break_the_protocol(log: Path) -> None:
    with LeanBackend(repl_command=fake(log), workers=1) as lean:
        result = lean.check(HEADER + "def k := 1 -- fake:noise", targets=["k"])
    assert result.compiled and "k" in result.axioms


def whoami(result) -> dict:
    """The stand-in's own report (`fake:whoami`): its working directory and environment."""
    (note,) = [d for d in result.diagnostics if d.message.startswith('{"cwd"')]
    return json.loads(note.message)


def test_each_process_works_in_its_own_throwaway_folder(log: Path, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where the backend is made: nothing may be written here
    secrets = {"OPENAI_API_KEY": "sk-test", "GITHUB_PAT": "ghp-test", "MY_PASSWD": "hunter2"}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LEAN_PATH", "/opt/lean/lib")
    with LeanBackend(repl_command=fake(log), workers=1) as lean:
        first = whoami(lean.check(HEADER + "def w := 1 -- fake:whoami fake:write=out.txt"))
        assert (Path(first["cwd"]) / "out.txt").is_file()  # the write landed in its folder
        lean.check(HEADER + "def c := 1 -- fake:crash")
        second = whoami(lean.check(HEADER + "def v := 2 -- fake:whoami"))
        assert not Path(first["cwd"]).exists()  # removed with the crashed process
        assert Path(second["cwd"]).is_dir()
    assert not Path(second["cwd"]).exists()  # removed at close
    assert first["cwd"] != second["cwd"] and first["pid"] != second["pid"]
    assert Path(first["cwd"]).resolve() != tmp_path.resolve() and list(tmp_path.iterdir()) == [log]
    assert not set(secrets) & set(first["env"]) and first["env"]["LEAN_PATH"] == "/opt/lean/lib"


def test_unstartable_repl_is_a_clear_error(tmp_path: Path) -> None:
    lean = LeanBackend(repl_command=[str(tmp_path / "no-such-repl")], workers=1)
    with lean, pytest.raises(BackendError, match="cannot start the Lean REPL"):
        lean.check("def a := 1")


@needs_shared
def test_file_mode_through_a_lean_on_path(monkeypatch, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "lean"  # points `lean` at the stand-in in its `lean --json` role
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" --fixtures "{RECORDINGS}" "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "elan"))
    monkeypatch.chdir(tmp_path)
    with LeanBackend(workers=1, timeout=20) as lean:
        assert lean.mode == "file"
        good = lean.check("theorem t : True := trivial", targets=["t"])
        bad = lean.check("theorem u : True := by\n  trivial -- fake:error-here")
        crashed = lean.check("def c := 1 -- fake:crash")
        hung = lean.check("def h := 1 -- fake:hang", timeout=1.0)
        sorried = lean.check("def f : Nat := by sorry", targets=["f"])  # recorded: tactic_sorry
    with LeanBackend(workers=1, memory_mb=150) as lean:
        grown = lean.check("def g := 1 -- fake:grow=250 fake:sleep=2")
    assert good.compiled and good.axioms == {"t": ["propext", "Classical.choice", "Quot.sound"]}
    assert [(d.severity, d.line, d.column) for d in bad.diagnostics] == [(Severity.error, 2, 13)]
    assert crashed.status == CheckStatus.crash and "Stack overflow" in crashed.detail
    assert hung.status == CheckStatus.timeout and hung.elapsed < 1.5
    (hole,) = sorried.holes
    assert (hole.line, hole.column) == (1, 4) and sorried.warnings[0].kind == "hasSorry"
    assert grown.status == CheckStatus.out_of_memory and grown.elapsed < 1.5
