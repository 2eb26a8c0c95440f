"""Statement identity decided by Lean (checking/lean_identity.py): the queries, reading the
answers, alpha-equivalence, and the verifier end to end on the stand-in REPL."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from formalbench.backends.lean.backend import LeanBackend
from formalbench.backends.lean.repl_protocol import reply_diagnostics
from formalbench.checking.lean_identity import (
    QUERY_PREFIX,
    canonical,
    compare,
    subjects,
    take_answers,
    with_queries,
)
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.records import CheckResult, Diagnostic, Language, Reason, Severity
from tests.shared_data import FIXTURES, needs_shared

FAKE = Path(__file__).resolve().parent / "standins" / "fake_repl.py"
ORIGINAL = (
    "import Mathlib\n\ndef f (n : ℕ) : ℕ := n + 1\n\n"
    "theorem t (x : ℕ) (h : 0 < x) : f x ≠ 0 := by\n  sorry\n\ntheorem after : True := trivial\n"
)
SOLVED = ORIGINAL.replace("sorry", "simp [f]")


def info(text: str, line: int) -> Diagnostic:
    return Diagnostic(severity=Severity.info, message=text, line=line, column=0)


# --- pieces -------------------------------------------------------------------------------
def test_subjects_are_the_original_declarations_up_to_the_last_target() -> None:
    items = subjects(ORIGINAL)
    assert [(s.name, s.target) for s in items] == [("f", False), ("t", True)]
    assert items[0].query == QUERY_PREFIX + "#print _root_.f"
    assert items[1].query == QUERY_PREFIX + "#check @_root_.t"
    assert "pp.all true" in QUERY_PREFIX and "pp.proofs true" in QUERY_PREFIX


def test_query_lines_are_ours_whatever_the_candidate_says() -> None:
    hostile = SOLVED + "namespace Evil\nset_option pp.all false\n/- unterminated"
    queries = with_queries(hostile, subjects(ORIGINAL))
    lines = queries.text.split("\n")
    assert {lines[n - 1] for n in queries.lines} == {s.query for s in subjects(ORIGINAL)}
    assert queries.text.startswith(hostile)
    assert set(queries.lines.values()) == {"f", "t"}


def test_answers_are_taken_off_the_query_lines_only() -> None:
    queries = with_queries(SOLVED, subjects(ORIGINAL))
    line_of = {name: n for n, name in queries.lines.items()}
    own = Diagnostic(severity=Severity.warning, message="unused", line=5, column=0)
    result = CheckResult(backend="x", diagnostics=[own, info("@t : P", line_of["t"])])
    kept, answers = take_answers(result, queries)
    assert kept.diagnostics == [own]
    assert [d.message for d in answers["t"]] == ["@t : P"]


@needs_shared
def test_recorded_check_reply_is_read_as_an_answer() -> None:
    """The real REPL's `#check f` reply (dup_msg): an info message at the command's line."""
    replies = (FIXTURES / "lean-repl" / "dup_msg.expected.out").read_text(encoding="utf-8")
    reply = json.loads(replies.split("\n\n")[1])
    (diag,) = reply_diagnostics(reply)
    queries = with_queries("", [])
    queries.lines[diag.line] = "f"
    _, answers = take_answers(CheckResult(backend="lean", diagnostics=[diag]), queries)
    assert answers["f"][0].severity == Severity.info and answers["f"][0].message == "f : Nat"


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("@t : ∀ (x : ℕ) (h : 0 < x), x ≠ 0", "@t : ∀ (y : ℕ) (_h : 0 < y), y ≠ 0", True),
        ("∀ (x y : ℕ), x < y", "∀ (y x : ℕ), x < y", False),
        ("∀ (x : ℕ), (∀ (x : ℕ), x = x) ∧ x = x", "∀ (a : ℕ), (∀ (b : ℕ), b = b) ∧ a = a", True),
        ("∀ (x : ℕ), (∀ (y : ℕ), x = y)", "∀ (x : ℕ), (∀ (x : ℕ), x = x)", False),
        ("@Eq.{1} Nat c (fun (c : Nat) => c) c", "@Eq.{1} Nat d (fun (d : Nat) => d) d", False),
        (
            "fun (x : ℕ) => @HAdd.hAdd ℕ ℕ ℕ (@instHAdd ℕ instAddNat) x 1",
            "fun (n : ℕ) => @HAdd.hAdd ℕ ℕ ℕ (@instHAdd ℕ instAddNat) n 1",
            True,
        ),  # fmt: skip
        (
            "fun (x : ℕ) => @HAdd.hAdd ℕ ℕ ℕ (@instHAdd ℕ instAddNat) x 1",
            "fun (x : ℕ) => @HAdd.hAdd ℕ ℕ ℕ (@instHAdd ℕ myAdd) x 1",
            False,
        ),  # fmt: skip
        ("∀ (x : ℕ) (h : 0 < x), h.le = h.le", "∀ (n : ℕ) (p : 0 < n), p.le = p.le", True),
    ],
)
def test_canonical_forms_are_equal_exactly_up_to_bound_names(a: str, b: str, same: bool) -> None:
    assert (canonical(a) == canonical(b)) is same


def test_compare_refuses_differences_missing_and_cut_answers() -> None:
    items = subjects(ORIGINAL)
    ok = {"f": [info("def f : ℕ → ℕ := fun (n : ℕ) => n + 1", 1)],
          "t": [info("@t : ∀ (x : ℕ), 0 < x → f x ≠ 0", 2)]}  # fmt: skip
    renamed = {**ok, "t": [info("@t : ∀ (y : ℕ), 0 < y → f y ≠ 0", 2)]}
    assert compare(items, ok, renamed) == []
    changed = {**ok, "t": [info("@t : ∀ (x : ℕ), 0 < x → True", 2)]}
    (f,) = compare(items, ok, changed)
    assert f.reason == Reason.statement_changed and f.subject == "t" and "differently" in f.message
    cut = {**ok, "t": [info("@t : ∀ (x : ℕ), 0 < x → ⋯", 2)]}
    assert [x.subject for x in compare(items, ok, cut)] == ["t"]
    assert [x.subject for x in compare(items, ok, {"f": ok["f"]})] == ["t"]
    err = Diagnostic(severity=Severity.error, message="Unknown identifier", line=2)
    assert [x.subject for x in compare(items, ok, {**ok, "t": [err]})] == ["t"]
    # a target the original cannot answer for cannot be confirmed either
    (g,) = compare(items, {"f": ok["f"]}, ok)
    assert g.subject == "t" and "for the original" in g.message
    # Lean saying the same thing about a helper on both sides leaves it to the text layer
    same_err = {"f": [err], "t": ok["t"]}
    assert compare(items, same_err, same_err) == []


# --- end to end on the stand-in REPL ------------------------------------------------------
@pytest.fixture
def lean(tmp_path: Path):
    log = tmp_path / "repl.log"
    command = [sys.executable, str(FAKE), "--fixtures", str(tmp_path), "--log", str(log)]
    command += ["--axioms", "propext"]
    with LeanBackend(repl_command=command, workers=1) as backend:
        backend.log = log  # type: ignore[attr-defined]
        yield backend


def sent(backend: LeanBackend) -> list[str]:
    lines = backend.log.read_text().splitlines()  # type: ignore[attr-defined]
    return [json.loads(line)["request"]["cmd"] for line in lines]


def test_genuine_and_renamed_candidates_pass_and_the_original_runs_once(lean) -> None:
    verifier = StrictVerifier(lean)
    assert verifier.verify(ORIGINAL, SOLVED).passed
    renamed = SOLVED.replace("(h : 0 < x)", "(_h : 0 < x)")
    verdict = verifier.verify(ORIGINAL, renamed)
    assert verdict.passed, verdict.findings
    bodies = [c for c in sent(lean) if "#check @_root_.t" in c]
    assert sum("sorry" in c for c in bodies) == 1  # the original, elaborated once
    assert all(
        c.rstrip("\n").endswith("#print axioms _root_.t") for c in bodies if "sorry" not in c
    )
    assert not any(q in v.message for v in verdict.diagnostics for q in ("@t :", "def f"))


def test_a_statement_lean_elaborates_differently_is_refused(lean) -> None:
    """The text layer passes it; Lean (here the stand-in, told so) prints another type."""
    verifier = StrictVerifier(lean)
    candidate = SOLVED.replace("simp [f]", "simp [f] -- fake:type=t=False")
    assert verifier.static_findings(ORIGINAL, candidate) == []
    verdict = verifier.verify(ORIGINAL, candidate)
    assert not verdict.passed and verdict.reasons == [Reason.statement_changed]
    assert "`t`" in verdict.findings[0].message


def test_a_changed_statement_is_refused_by_both_layers(lean) -> None:
    verifier = StrictVerifier(lean, compile_always=True)
    weakened = SOLVED.replace("(h : 0 < x) : f x ≠ 0", "(h : 0 < x) : True").replace(
        "simp [f]", "trivial"
    )
    verdict = verifier.verify(ORIGINAL, weakened)
    assert verdict.reasons == [Reason.statement_changed]
    messages = " ".join(f.message for f in verdict.findings)
    assert "Lean elaborates the statement of `t` differently" in messages
    assert "statement of `t` changed" in messages  # the text layer's own finding


def test_async_verification_uses_the_same_check(lean) -> None:
    verifier = StrictVerifier(lean)
    candidate = SOLVED.replace("simp [f]", "simp [f] -- fake:type=t=False")
    good, bad = asyncio.run(
        _both(verifier, SOLVED, candidate),
    )
    assert good.passed and not bad.passed and bad.reasons == [Reason.statement_changed]


async def _both(verifier: StrictVerifier, a: str, b: str):
    return await verifier.averify(ORIGINAL, a), await verifier.averify(ORIGINAL, b)


def test_a_candidate_that_does_not_compile_is_not_compared(lean) -> None:
    verifier = StrictVerifier(lean)
    broken = SOLVED.replace("simp [f]", "simp [f] -- fake:error-here fake:type=t=False")
    verdict = verifier.verify(ORIGINAL, broken)
    assert verdict.reasons == [Reason.compile_error]


def test_a_signature_changed_only_as_text_is_left_to_lean(lean) -> None:
    """Redundant parentheses fail the token comparison; Lean (here the stand-in, told the
    elaborated type is the original's) decides that the statement is the same."""
    verifier = StrictVerifier(lean)
    same = "∀_(x_:_ℕ)_(h_:_0_<_x),_f_x_≠_0"
    candidate = SOLVED.replace(": f x ≠ 0", ": (f x ≠ 0)")
    assert [f.reason for f in verifier.static_findings(ORIGINAL, candidate)] == [
        Reason.statement_changed
    ]
    told = candidate.replace("simp [f]", f"simp [f] -- fake:type=t={same}")
    verdict = verifier.verify(ORIGINAL, told)
    assert verdict.passed, verdict.findings
    # without Lean's word (the stand-in prints the text it sees) the finding stays
    refused = verifier.verify(ORIGINAL, candidate)
    assert refused.reasons == [Reason.statement_changed] and len(refused.findings) == 2
    # and without a backend that answers queries, the text layer alone decides
    assert not StrictVerifier(None, language=Language.lean).verify(ORIGINAL, told).passed


def test_names_with_primes_and_guillemets_are_queried() -> None:
    original = (
        "theorem t' (x : ℕ) : x = x := by\n  sorry\ntheorem «odd name» : True := by\n  sorry\n"
    )
    queries = [s.query for s in subjects(original)]
    assert queries[0].endswith("#check @_root_.t'")
    assert queries[1] == "-- (no query for this name)"  # a blank in it: no query is sent
    (f,) = compare(subjects(original)[1:], {}, {})
    assert f.subject == "«odd name»" and f.reason == Reason.statement_changed


def test_identity_in_file_mode_through_lean_json(monkeypatch, tmp_path: Path) -> None:
    """Per-file mode (`lean --json`, here the stand-in in that role) answers the same queries."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "lean"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" --fixtures "{tmp_path}" "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "elan"))
    monkeypatch.chdir(tmp_path)
    with LeanBackend(workers=1, timeout=20) as backend:
        assert backend.mode == "file"
        verifier = StrictVerifier(backend)
        good = verifier.verify(ORIGINAL, SOLVED.replace("(h :", "(_h :"))
        told = SOLVED.replace("simp [f]", "simp [f] -- fake:type=t=False")
        bad = verifier.verify(ORIGINAL, told)
    assert good.passed, good.findings
    assert bad.reasons == [Reason.statement_changed]


@pytest.mark.parametrize(
    "command",
    ["open Real", "variable (y : ℕ)", "set_option autoImplicit true",
     "instance : Add ℕ := ⟨fun a _ => a⟩", "attribute [local instance] Classical.propDecidable"],
)  # fmt: skip
def test_context_commands_before_the_target_are_left_to_lean(lean, command: str) -> None:
    verifier = StrictVerifier(lean)
    candidate = SOLVED.replace("theorem t", command + "\n\ntheorem t")
    assert not StrictVerifier(None, language=Language.lean).verify(ORIGINAL, candidate).passed
    verdict = verifier.verify(ORIGINAL, candidate)
    assert verdict.passed, verdict.findings
    changed = candidate.replace("simp [f]", "simp [f] -- fake:type=t=∀_(y_:_ℕ),_False")
    verdict = verifier.verify(ORIGINAL, changed)
    assert verdict.reasons == [Reason.statement_changed] and len(verdict.findings) == 2


@pytest.mark.parametrize(
    "command",
    ['notation "ℕ" => ℤ', "set_option pp.all false", "macro \"foo\" : term => `(1)",
     "attribute [app_unexpander Nat.succ] Nat.add"],
)  # fmt: skip
def test_commands_that_can_change_our_queries_stay_refused(lean, command: str) -> None:
    candidate = SOLVED.replace("theorem t", command + "\n\ntheorem t")
    verdict = StrictVerifier(lean).verify(ORIGINAL, candidate)
    assert not verdict.passed and Reason.statement_changed in verdict.reasons
