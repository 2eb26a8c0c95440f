"""`formalbench check`: exit codes 0/1/2, the --json shape, one clear line per bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app
from tests.shared_data import DATA, needs_shared

EXAMPLES = Path(__file__).resolve().parents[1] / "src" / "formalbench" / "datasets" / "examples"
CHECK = EXAMPLES / "check"
runner = CliRunner()


def run(*args: str, env: dict[str, str] | None = None):
    return runner.invoke(app, ["check", *args], env=env)


def test_static_only_pass_and_json_shape() -> None:
    args = [str(CHECK / "candidate.lean"), "--against", str(CHECK / "original.lean")]
    result = run(*args, "--static-only", "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["passed"] is True and payload["reasons"] == []
    assert payload["targets"] == ["even_add_even"] and payload["static_only"] is True
    assert {"findings", "diagnostics", "axioms", "candidate", "original"} <= set(payload)
    text = run(*args, "--static-only")
    assert text.exit_code == 0 and "PASSED" in text.stdout and "even_add_even" in text.stdout


def test_failure_exit_code_and_findings(tmp_path: Path) -> None:
    bad = tmp_path / "bad.lean"
    original = (CHECK / "original.lean").read_text()
    bad.write_text(original.replace("Even (a + b)", "Even (a + b + 0)").replace("sorry", "omega"))
    result = run(str(bad), "--against", str(CHECK / "original.lean"), "--static-only", "--json")
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    assert payload["passed"] is False and payload["reasons"] == ["statement_changed"]
    assert "even_add_even" in payload["findings"][0]["message"]
    table = run(str(bad), "--against", str(CHECK / "original.lean"), "--static-only")
    assert table.exit_code == 1 and "FAILED" in table.stdout and "[+ 0]" in table.stdout


@pytest.mark.skipif(shutil.which("coqc") is None, reason="needs coqc")
def test_weakened_coq_example_is_refused_by_the_kernel(suite_and_host: str) -> None:
    result = run(
        str(CHECK / "candidate_weakened.v"), "--against", str(CHECK / "original.v"), "--json"
    )
    assert result.exit_code == 1
    assert json.loads(result.stdout)["reasons"] == ["statement_changed"]


@pytest.mark.skipif(shutil.which("coqc") is None, reason="needs coqc")
def test_coq_example_passes_for_real(suite_and_host: str) -> None:
    result = run(str(CHECK / "candidate.v"), "--against", str(CHECK / "original.v"), "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["toolchain"]["name"] == suite_and_host
    assert payload["backend"] == "coq" and payload["axioms"] == {"double_le_square_plus_one": []}


def _bad_inputs(tmp: Path) -> dict[str, tuple[list[str], str]]:
    orig = str(CHECK / "original.v")
    (tmp / "bin.v").write_bytes(b"Theorem a\x00 : True.")
    (tmp / "latin1.v").write_bytes("Theorem caf\xe9 : True.".encode("latin-1"))
    (tmp / "empty.v").write_text("  \n")
    (tmp / "plain.txt").write_text("Theorem a : True.")
    (tmp / "done.v").write_text("Theorem a : True.\nProof. exact I. Qed.\n")
    cand = str(CHECK / "candidate.v")
    return {
        "missing": ([str(tmp / "nope.v"), "--against", orig], "no such file"),
        "directory": ([str(tmp), "--against", orig], "is a directory"),
        "binary": ([str(tmp / "bin.v"), "--against", orig], "is a binary file"),
        "utf8": ([str(tmp / "latin1.v"), "--against", orig], "not valid UTF-8"),
        "empty": ([str(tmp / "empty.v"), "--against", orig], "is empty"),
        "original missing": ([cand, "--against", str(tmp / "gone.v")], "original"),
        "backend": ([cand, "--against", orig, "--backend", "isabelle"], "known backends: coq, lean, kimina"),
        "kind": ([cand, "--against", orig, "--kind", "magic"], "--kind 'magic'"),
        "timeout": ([cand, "--against", orig, "--timeout", "-1"], "--timeout"),
        "suffix": ([str(tmp / "plain.txt"), "--against", str(tmp / "plain.txt")], "--backend"),
        "no hole": ([cand, "--against", str(tmp / "done.v")], "no named declaration with a hole"),
        "project": ([cand, "--against", orig, "--lean-project", str(tmp)], "--lean-project is for"),
    }  # fmt: skip


def test_bad_inputs_exit_2_with_one_line(tmp_path: Path) -> None:
    for label, (args, needle) in _bad_inputs(tmp_path).items():
        result = run(*args)
        assert result.exit_code == 2, (label, result.output)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("formalbench: error:"), (label, lines)
        assert needle in lines[0], (label, lines[0])
        assert "Traceback" not in result.output


def test_missing_toolchain_is_exit_2(tmp_path: Path) -> None:
    result = run(str(CHECK / "candidate.v"), "--against", str(CHECK / "original.v"),
                 "--toolchain", "host", env={"PATH": str(tmp_path)})  # fmt: skip
    assert result.exit_code == 2 and "coqc" in result.stderr and "apt-get install" in result.stderr


def test_real_process_entry_point() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "formalbench", "check", str(CHECK / "nothing.v"), "--against",
         str(CHECK / "original.v")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert (
        done.stderr.strip()
        == f"formalbench: error: candidate '{CHECK / 'nothing.v'}': no such file"
    )


PUTNAM = DATA / "putnambench-lean4"


@needs_shared
def test_construction_rules_apply_without_kind(tmp_path: Path) -> None:
    """putnam_2016_b1 leaves `putnam_2016_b1_solution` open: an evaluation task by default."""
    original = PUTNAM / "lean4" / "src" / "putnam_2016_b1.lean"
    text = original.read_text(encoding="utf-8")
    at = text.index("sorry")
    chosen = "Classical.choose (⟨Real.exp 1 - 1, rfl⟩ : ∃ x : ℝ, x = Real.exp 1 - 1)"
    candidate = tmp_path / "chosen.lean"
    candidate.write_text(text[:at] + chosen + text[at + 5 :].replace("sorry", "by simp", 1))
    args = [str(candidate), "--against", str(original), "--static-only"]
    result = run(*args, "--json")
    assert result.exit_code == 1, result.output
    payload = json.loads(result.stdout)
    assert payload["kind"] == "evaluation" and payload["reasons"] == ["non_constructive"]
    assert "(evaluation task)" in run(*args).stdout
    as_proof = run(*args, "--json", "--kind", "proof")
    assert as_proof.exit_code == 0, as_proof.output
    assert json.loads(as_proof.stdout)["kind"] == "proof"
    plain = run(str(CHECK / "candidate.lean"), "--against", str(CHECK / "original.lean"),
                "--static-only", "--json")  # fmt: skip
    assert json.loads(plain.stdout)["kind"] == "proof"


def write_pairs(folder: Path, lines: list[str]) -> Path:
    for name in ("candidate.v", "candidate_weakened.v", "original.v", "candidate.lean"):
        shutil.copy(CHECK / name, folder / name)
    pairs = folder / "pairs.jsonl"
    pairs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return pairs


PAIR_LINES = [
    '{"id": "good", "candidate": "candidate.v", "original": "original.v"}',
    '{"id": "weak", "candidate": "candidate_weakened.v", "original": "original.v"}',
    "not json",
    "",
    '{"id": "missing", "candidate": "nothere.v", "original": "original.v"}',
    '{"id": 7, "candidate_text": "Lemma x : True. Proof. exact I. Qed.",'
    ' "original_text": "Lemma x : True. Proof. Admitted."}',
    '{"id": "typo", "candidate": "candidate.v", "orignal": "original.v"}',
    '{"id": "nohole", "candidate": "candidate.v", "original": "candidate.v"}',
]


def test_pairs_static_only_one_result_per_line_in_order(tmp_path: Path) -> None:
    pairs = write_pairs(tmp_path, PAIR_LINES)
    result = run("--pairs", str(pairs), "--static-only", "--json", "--backend", "coq")
    assert result.exit_code == 1, result.output  # some pairs failed: exit 1, not an abort
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["id"] for r in rows] == ["good", "weak", "line 3", "missing", "7", "typo", "nohole"]
    assert [r["line"] for r in rows] == [1, 2, 3, 5, 6, 7, 8]
    by_id = {r["id"]: r for r in rows}
    assert by_id["good"]["passed"] is True and by_id["good"]["static_only"] is True
    # text checks judge no Coq statement (the identity file does, with coqc: see below)
    assert by_id["weak"]["passed"] is True and by_id["weak"]["static_only"] is True
    assert by_id["7"]["passed"] is True and by_id["7"]["targets"] == ["x"]
    assert "not a JSON object" in by_id["line 3"]["error"]
    assert by_id["missing"]["error"] == f"candidate '{tmp_path / 'nothere.v'}': no such file"
    assert "orignal" in by_id["typo"]["error"]
    assert "no named declaration with a hole" in by_id["nohole"]["error"]
    assert all(r["passed"] is False for r in rows if "error" in r)


def test_pairs_text_output_and_usage_errors(tmp_path: Path) -> None:
    pairs = write_pairs(tmp_path, PAIR_LINES[:2] + ['{"candidate_text": "x", "original": "o.v"}'])
    text = run("--pairs", str(pairs), "--static-only")
    assert text.exit_code == 1
    assert text.stdout.splitlines()[:2] == ["PASSED good", "PASSED weak"]
    assert (
        text.stdout.splitlines()[2] == f"ERROR  line 3: original '{tmp_path / 'o.v'}': no such file"
    )
    only_good = write_pairs(tmp_path, PAIR_LINES[:1])
    assert run("--pairs", str(only_good), "--static-only").exit_code == 0
    both = run(str(CHECK / "candidate.v"), "--pairs", str(pairs))
    assert both.exit_code == 2 and "--pairs replaces CANDIDATE" in both.output
    absent = run("--pairs", str(tmp_path / "none.jsonl"), "--static-only")
    assert absent.exit_code == 2 and "no such file" in absent.output
    assert run("--against", str(CHECK / "original.v")).exit_code == 2


@pytest.mark.skipif(shutil.which("coqc") is None, reason="needs coqc")
def test_pairs_with_real_coqc_and_a_verdict_cache(tmp_path: Path) -> None:
    lines = [PAIR_LINES[0], PAIR_LINES[1], PAIR_LINES[0].replace('"good"', '"again"')]
    lines.append(
        '{"id": "wrong", "candidate_text": "Lemma x : 1 = 2. Proof. reflexivity. Qed.",'
        ' "original_text": "Lemma x : 1 = 2. Proof. Admitted."}'
    )
    pairs = write_pairs(tmp_path, lines)
    cache = tmp_path / "verdicts.sqlite"
    args = ["--pairs", str(pairs), "--json", "--backend", "coq", "--workers", "2"]
    first = run(*args, "--cache", str(cache))
    assert first.exit_code == 1, first.output
    rows = [json.loads(line) for line in first.stdout.splitlines()]
    assert [(r["id"], r["passed"]) for r in rows] == [
        ("good", True),
        ("weak", False),
        ("again", True),
        ("wrong", False),
    ]
    assert rows[0]["backend"] == "coq" and rows[0]["static_only"] is False
    assert rows[3]["reasons"] == ["compile_error"]
    import sqlite3

    with sqlite3.connect(cache) as conn:
        kept = conn.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]
    assert kept == 3  # one per distinct pair: "again" is the same pair as "good"
    second = run(*args, "--cache", str(cache))
    assert [json.loads(line)["passed"] for line in second.stdout.splitlines()] == [
        True,
        False,
        True,
        False,
    ]


def test_human_form_is_plain_text_with_colour_only_on_a_terminal(monkeypatch, capsys) -> None:
    """The human form prints aligned finding rows; ANSI colour appears only on a terminal
    and never under NO_COLOR (rich is not loaded for it: see bench/bench_startup.py)."""
    from formalbench.cli import check as check_cli
    from formalbench.core.records import Finding, Reason, TaskKind, Verdict

    verdict = Verdict(
        passed=False,
        reasons=[Reason.statement_changed, Reason.forbidden_construct],
        findings=[
            Finding(reason=Reason.statement_changed, message="t changed", line=7, column=0),
            Finding(reason=Reason.forbidden_construct, message="uses `sorry`\nsecond line"),
        ],
    )
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setattr(check_cli.sys.stdout, "isatty", lambda: False)
    check_cli._render(verdict, "c.v", ["t"], TaskKind.proof)
    plain = capsys.readouterr().out
    assert "\x1b[" not in plain
    lines = plain.splitlines()
    assert lines[0].startswith("FAILED c.v (static checks only")
    assert lines[0].endswith("statement_changed, forbidden_construct")
    first = next(line for line in lines if line.endswith("t changed"))
    second = next(line for line in lines if line.endswith("uses `sorry`"))
    # the finding column starts at the same offset on every row, continuation lines too
    assert first.index("t changed") == second.index("uses") == lines[-1].index("second")
    assert "7:0" in first and lines[-1].strip() == "second line"
    monkeypatch.setattr(check_cli.sys.stdout, "isatty", lambda: True)
    check_cli._render(verdict, "c.v", ["t"], TaskKind.proof)
    assert "\x1b[1;31mFAILED\x1b[0m" in capsys.readouterr().out
    monkeypatch.setenv("NO_COLOR", "1")
    check_cli._render(verdict, "c.v", ["t"], TaskKind.proof)
    assert "\x1b[" not in capsys.readouterr().out
