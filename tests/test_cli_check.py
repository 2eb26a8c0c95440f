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
from tests.shared_data import ROOT, needs_shared

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


def test_weakened_coq_example_fails_before_compiling() -> None:
    result = run(
        str(CHECK / "candidate_weakened.v"), "--against", str(CHECK / "original.v"), "--json"
    )
    assert result.exit_code == 1
    assert json.loads(result.stdout)["reasons"] == ["statement_changed"]


@pytest.mark.skipif(shutil.which("coqc") is None, reason="needs coqc")
def test_coq_example_passes_for_real() -> None:
    result = run(str(CHECK / "candidate.v"), "--against", str(CHECK / "original.v"), "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
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
                 env={"PATH": str(tmp_path)})  # fmt: skip
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


PUTNAM = ROOT / "data" / "putnambench-lean4"


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
