"""Error taxonomy on real assistant messages.

Lean: the recorded REPL output in fixtures/lean-repl of the public data (read from the files), plus
a few message texts that no fixture holds, written exactly as Lean 4 / Mathlib format them
(`throwError` strings in their sources; marked below). Coq: strings captured from coqc 8.16.1
(Debian) on small broken files, e.g. `printf 'Theorem t (n : nat) : n < 3.\\nProof. lia.
Qed.\\n' > f.v; coqc f.v`, copied verbatim from stderr (the `File ..., line ...` line and
the `Error:` prefix kept, as coqc prints them); `test_live_coqc_messages` re-runs a few.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from formalbench.core.records import (
    Attempt,
    AttemptError,
    Diagnostic,
    ErrorKind,
    Finding,
    Reason,
    Severity,
    Verdict,
)
from formalbench.metrics.taxonomy import (
    ErrorCategory,
    classify,
    classify_message,
    taxonomy_counts,
)
from tests.shared_data import ROOT, needs_shared

C = ErrorCategory
FIXTURES = ROOT / "fixtures" / "lean-repl"


def repl_messages() -> list[tuple[str, str, str]]:
    """(file, severity, text) of every message in the recorded REPL answers."""
    found = []
    for path in sorted(FIXTURES.rglob("*.expected.out")):
        for chunk in path.read_text().split("\n\n"):
            if not chunk.strip():
                continue
            answer = json.loads(chunk)
            for msg in answer.get("messages", []):
                found.append((path.name, msg["severity"], msg["data"]))
            if "message" in answer:  # a REPL-level error, e.g. "Lean error:\n..."
                found.append((path.name, "error", answer["message"]))
    return found


@needs_shared
def test_fixture_messages_are_classified():
    msgs = repl_messages()
    assert len(msgs) > 20
    by_text = {text: classify_message(text) for _, _, text in msgs}
    assert by_text["Unknown identifier `g`"] == C.hallucinated_identifier
    assert by_text["Unknown identifier `my_fake_premise`"] == C.hallucinated_identifier
    assert by_text["unsolved goals\nx : Int\nh : x = 1\n⊢ x = x"] == C.tactic_failure
    assert by_text["unsolved goals\ncase pos\nx : Bool\nh✝ : x = true\n⊢ Nat"] == C.tactic_failure
    exact_q = "`exact?` could not close the goal. Try `apply?` to see partial suggestions."
    assert by_text[exact_q] == C.tactic_failure
    assert by_text["Lean error:\n" + exact_q] == C.tactic_failure
    assert by_text["Lean error:\n<input>:1:1: unknown tactic"] == C.format_error
    assert by_text["declaration uses `sorry`"] == C.incomplete_output
    # every error the fixtures hold is understood, except the REPL's own protocol errors
    protocol = {"Unknown environment.", "Unknown proof state."}
    unknown = [
        t for _, sev, t in msgs if sev == "error" and t not in protocol and by_text[t] is None
    ]
    assert unknown == []
    # informational messages must not be mistaken for errors
    assert by_text["f : Nat"] is None
    assert by_text["Try this:\n  [apply] exact Nat.one_pos"] is None


# Lean message texts with no recorded fixture: as Lean 4 core / Mathlib throw them.
LEAN_SOURCE_TEXTS = [
    ("unknown identifier 'Nat.lt_irrefl_foo'", C.hallucinated_identifier),  # Lean < 4.2x
    ("unknown constant 'Real.sqrt_eq_iff_foo'", C.hallucinated_identifier),
    ("Unknown constant `convexHull_eq_sInter`", C.hallucinated_identifier),
    ("unknown namespace 'Foo'", C.hallucinated_identifier),
    (
        "invalid field 'foo', the environment does not contain 'Nat.foo'\n  n\nhas type\n  ℕ",
        C.hallucinated_identifier,
    ),
    (
        "type mismatch\n  h\nhas type\n  a < b : Prop\nbut is expected to have type\n  a ≤ b : Prop",
        C.type_error,
    ),
    (
        "application type mismatch\n  f x\nargument\n  x\nhas type\n  ℕ : Type\n"
        "but is expected to have type\n  ℝ : Type",
        C.type_error,
    ),
    ("failed to synthesize\n  HAdd ℕ ℝ ?m.123\nAdditional diagnostic information", C.type_error),
    (
        "linarith failed to find a contradiction\ncase a\nx : ℝ\nh : 0 < x\na✝ : x ≤ 0\n⊢ False",
        C.tactic_failure,
    ),
    ("omega could not prove the goal:\nNo usable constraints found.", C.tactic_failure),
    ("simp made no progress", C.tactic_failure),
    ("tactic 'rewrite' failed, did not find instance of the pattern", C.tactic_failure),
    ("aesop: failed to prove the goal after exhaustive search.", C.tactic_failure),
    ("unexpected token 'at'; expected command", C.format_error),
    ("unexpected end of input; expected ':='", C.format_error),
    (
        "(deterministic) timeout at `whnf`, maximum number of heartbeats (200000) has been reached",
        C.timeout,
    ),
    # A library the project lacks (no fixture holds one; the texts of Lean's
    # `Lean.findOLean` / `Lean.SearchPath` errors and of Lake's package lookup):
    (
        "unknown module prefix 'Mathlib'\n\nNo directory 'Mathlib' or file 'Mathlib.lean' "
        "in the search path entries:\n/root/.elan/toolchains/lean4/lib/lean",
        C.environment,
    ),
    ("unknown package 'Mathlib'", C.environment),
    (
        "object file ./.lake/build/lib/Foo/Bar.olean of module Foo.Bar does not exist",
        C.environment,
    ),
]


@pytest.mark.parametrize(("text", "category"), LEAN_SOURCE_TEXTS)
def test_lean_source_texts(text, category):
    assert classify_message(text) == category


def test_goal_state_names_do_not_decide():
    # a hypothesis named like an error text inside an `unsolved goals` message
    text = "unsolved goals\nh_coerce_type_mismatch : x = 1\n⊢ x = 2"
    assert classify_message(text) == C.tactic_failure


# Captured from coqc 8.16.1 stderr (see the module docstring for how).
COQ_CAPTURED = [
    (
        'File "./ref.v", line 2, characters 13-30:\nError: The reference nonexistent_lemma was '
        "not found in the current\nenvironment.",
        C.hallucinated_identifier,
    ),
    (
        'File "./locate2.v", line 1, characters 0-34:\nError: Cannot find a physical path '
        "bound to logical path\nNoSuchLib with prefix Coq.",
        C.environment,  # a library that is not installed: the task's environment failed
    ),
    ("Error: Cannot find module NoSuchModule.", C.hallucinated_identifier),
    (
        'File "./type.v", line 1, characters 22-26:\nError:\nThe term "true" has type "bool" '
        'while it is expected to have type "nat".',
        C.type_error,
    ),
    (
        'File "./unify2.v", line 2, characters 13-14:\nError:\nIn environment\nP, Q : Prop\n'
        'h : P\nThe term "h" has type "P" while it is expected to have type "Q".',
        C.type_error,
    ),
    (
        'Error: In environment\nn : nat\nUnable to unify "n" with "n + 0".',
        C.type_error,
    ),
    ('File "./auto.v", line 2, characters 7-20:\nError: No applicable tactic.', C.tactic_failure),
    ("Error: Tactic failure: congruence failed.", C.tactic_failure),
    ("Error: Tactic failure:  Cannot find witness.", C.tactic_failure),  # lia, nia, lra
    ("Error: Tactic failure: not a valid ring equation.", C.tactic_failure),
    ("Error:  (in proof t): Attempt to save an incomplete proof", C.tactic_failure),
    ("Error: Not an inductive product.", C.tactic_failure),
    ("Error: No such goal.", C.tactic_failure),
    (
        'File "./syntax.v", line 2, characters 19-20:\nError:\nSyntax error: [ltac_use_default] '
        "expected after [tactic] (in [tactic_command]).",
        C.format_error,
    ),
    ("Error: Syntax Error: Lexer: Undefined token", C.format_error),
    ('File "./timeout2.v", line 3, characters 7-43:\nError: Timeout!', C.timeout),
    (
        "Error:  (in proof t): Attempt to save a proof with given up goals. If this is\n"
        "really what you want to do, use Admitted in place of Qed.",
        C.incomplete_output,
    ),
    ("Error: There are pending proofs in file ./qed_unfinished.v: t.", C.incomplete_output),
]


@pytest.mark.parametrize(("text", "category"), COQ_CAPTURED)
def test_coq_captured_texts(text, category):
    assert classify_message(text) == category


@pytest.mark.coq
@pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not installed")
def test_live_coqc_messages(tmp_path):
    cases = {
        "Theorem t : 1 + 1 = 2.\nProof. apply no_such_lemma. Qed.\n": C.hallucinated_identifier,
        "Definition x : nat := true.\n": C.type_error,
        "Require Import Lia.\nTheorem t (n : nat) : n < 3.\nProof. lia. Qed.\n": C.tactic_failure,
        "Theorem t : forall n, n = = n.\nProof. auto. Qed.\n": C.format_error,
        "Theorem t (P : Prop) (h : P) : P /\\ P.\nProof. split. exact h. Qed.\n": C.tactic_failure,
        "From NoSuchLib Require Import Foo.\nTheorem t : True.\nProof. exact I. Qed.\n": (
            C.environment
        ),
    }
    for i, (source, category) in enumerate(cases.items()):
        path = tmp_path / f"f{i}.v"
        path.write_text(source)
        run = subprocess.run(
            ["coqc", path.name], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert run.returncode != 0
        assert classify_message(run.stderr) == category, run.stderr


def failed(**verdict_fields) -> Attempt:
    return Attempt(
        task_id="t",
        solver="s",
        code="theorem t : True := by simp",
        verdict=Verdict(passed=False, **verdict_fields),
    )


def err(text: str) -> Diagnostic:
    return Diagnostic(severity=Severity.error, message=text)


def test_precedence_model_and_extraction_failures():
    assert (
        classify(Attempt(task_id="t", solver="s", error="HTTP 503 from provider")).primary
        == C.model_error
    )
    fmt = Attempt(task_id="t", solver="s", error="the model output has no fenced code block")
    assert classify(fmt).primary == C.format_error
    empty = Attempt(task_id="t", solver="s", error="the answer has no proof for `foo`")
    assert classify(empty).primary == C.incomplete_output
    assert classify(Attempt(task_id="t", solver="s", raw_output="")).primary == C.incomplete_output
    unfenced = Attempt(task_id="t", solver="s", raw_output="Here:\ntheorem foo : True := trivial")
    assert classify(unfenced).primary == C.format_error
    cut = Attempt(task_id="t", solver="s", raw_output="```lean\ntheorem foo : True := by\n  exa")
    assert classify(cut).primary == C.incomplete_output


def test_solver_error_tags_decide_the_category():
    def primary(error: str) -> ErrorCategory:
        return classify(Attempt(task_id="t", solver="s", error=error)).primary

    assert primary("model: endpoint unreachable after 5 retries") == C.model_error
    # a model error whose text mentions max_tokens is still the model's
    assert primary("model: 400 max_tokens is too large for this model") == C.model_error
    budget = "budget: token budget of 1000 for the task is spent (1200 used in 2 call(s))"
    assert primary(budget) == C.incomplete_output
    assert primary("backend: the solver's verifier has no proof assistant") == C.backend_crash
    assert primary("internal: KeyError: 'x'") == C.other
    assert primary("task: task t has no hole (sorry / Admitted) to fill") == C.other
    assert primary("format: the model output has no fenced code block") == C.format_error
    assert primary("format: the answer has no proof for `foo`") == C.incomplete_output
    assert primary("format: no declaration foo in the task") == C.format_error


def test_typed_errors_decide_the_category_and_old_strings_still_read():
    def primary(error: AttemptError) -> ErrorCategory:
        return classify(Attempt(task_id="t", solver="s", error=error)).primary

    missing = AttemptError(kind=ErrorKind.environment, message="Require of NoSuchLib")
    assert primary(missing) == C.environment
    # the kind decides, not words in the message
    assert primary(AttemptError(kind=ErrorKind.model, message="format: x")) == C.model_error
    assert primary(AttemptError(kind=ErrorKind.format_, message="no code")) == C.incomplete_output
    # a stored old-style string becomes the typed record, and round-trips through JSON
    old = Attempt(task_id="t", solver="s", error="budget: run token budget spent: 9 of 8")
    assert old.error == AttemptError(
        kind=ErrorKind.budget, message="run token budget spent: 9 of 8", scope="run"
    )
    assert Attempt.model_validate_json(old.model_dump_json()) == old
    untagged = Attempt(task_id="t", solver="s", error="HTTP 503 from provider")
    assert untagged.error is not None and untagged.error.kind == ErrorKind.unknown
    assert str(untagged.error) == "HTTP 503 from provider"


def test_a_missing_library_outranks_what_it_causes():
    attempt = failed(
        reasons=[Reason.compile_error],
        diagnostics=[
            err("unknown identifier 'Real.sqrt'"),
            err("unknown module prefix 'Mathlib'\n\nNo directory 'Mathlib'"),
        ],
    )
    result = classify(attempt)
    assert result.primary == C.environment
    assert C.hallucinated_identifier in result.labels


def test_a_budget_stop_keeps_the_evidence_of_the_last_try():
    attempt = failed(
        reasons=[Reason.compile_error], diagnostics=[err("unknown identifier 'Nat.foo'")]
    )
    attempt.error = "budget: token budget of 1000 for the task is spent"
    result = classify(attempt)
    assert result.primary == C.incomplete_output
    assert result.labels == [C.hallucinated_identifier, C.incomplete_output]


def test_truncation_outranks_the_parse_error_it_causes():
    attempt = failed(reasons=[Reason.compile_error], diagnostics=[err("unexpected end of input")])
    attempt.params = {"finish_reason": "length"}
    result = classify(attempt)
    assert result.primary == C.incomplete_output
    assert result.labels == [C.incomplete_output, C.format_error]


def test_assistant_not_finishing():
    assert classify(failed(reasons=[Reason.timeout])).primary == C.timeout
    assert classify(failed(reasons=[Reason.out_of_memory])).primary == C.out_of_memory
    crash = failed(reasons=[Reason.backend_crash], diagnostics=[err("unsolved goals\n⊢ False")])
    assert classify(crash).primary == C.backend_crash


def test_verdicts_the_prover_is_not_judged_by_are_apart():
    """`environment` (the file's libraries cannot be loaded) and `undecided` (the kernel route
    cannot decide the task's shape) outrank what the partial diagnostics say."""
    missing = failed(reasons=[Reason.environment], diagnostics=[err("unsolved goals")])
    assert classify(missing).primary == C.environment
    functor = failed(reasons=[Reason.undecided, Reason.statement_changed])
    assert classify(functor).primary == C.undecided
    assert C.statement_changed in classify(functor).labels


def test_integrity_violations_outrank_compile_errors():
    result = classify(
        failed(
            reasons=[Reason.statement_changed, Reason.compile_error],
            findings=[Finding(reason=Reason.statement_changed, message="theorem `t` was restated")],
            diagnostics=[
                err("type mismatch\n  h\nhas type\n  P\nbut is expected to have type\n  Q")
            ],
        )
    )
    assert result.primary == C.statement_changed
    assert result.evidence == "theorem `t` was restated"
    assert result.labels == [C.type_error, C.statement_changed]


def test_holes_are_incomplete_output_not_cheating():
    sorry = failed(
        reasons=[Reason.forbidden_construct],
        findings=[
            Finding(reason=Reason.forbidden_construct, message="`sorry` left", subject="sorry")
        ],
    )
    assert classify(sorry).primary == C.incomplete_output
    sorry_ax = failed(
        reasons=[Reason.disallowed_axiom],
        findings=[
            Finding(reason=Reason.disallowed_axiom, message="uses axiom sorryAx", subject="sorryAx")
        ],
    )
    assert classify(sorry_ax).primary == C.incomplete_output
    native = failed(
        reasons=[Reason.forbidden_construct],
        findings=[
            Finding(
                reason=Reason.forbidden_construct, message="native_decide", subject="native_decide"
            )
        ],
    )
    assert classify(native).primary == C.forbidden_construct
    warning_only = failed(
        diagnostics=[Diagnostic(severity=Severity.warning, message="declaration uses 'sorry'")]
    )
    assert classify(warning_only).primary == C.incomplete_output
    assert classify(failed(reasons=[Reason.missing_target])).primary == C.incomplete_output
    unfilled = failed(  # an AMBER construction whose `def` is left as it was
        reasons=[Reason.forbidden_construct],
        findings=[
            Finding(
                reason=Reason.forbidden_construct,
                subject="answer",
                message="the value of `answer` is not filled in",
            )
        ],
    )
    assert classify(unfilled).primary == C.incomplete_output
    both = failed(
        reasons=[Reason.forbidden_construct],
        findings=[
            Finding(reason=Reason.forbidden_construct, message="`sorry` left", subject="sorry"),
            Finding(
                reason=Reason.forbidden_construct,
                message="uses native_decide",
                subject="native_decide",
            ),
        ],
    )
    result = classify(both)
    assert (result.primary, result.evidence) == (C.forbidden_construct, "uses native_decide")
    assert result.labels == [C.incomplete_output, C.forbidden_construct]


def test_compile_errors_rank_upstream_cause_first():
    result = classify(
        failed(
            reasons=[Reason.compile_error],
            diagnostics=[err("unsolved goals\n⊢ False"), err("Unknown identifier `foo_bar`")],
        )
    )
    assert result.primary == C.hallucinated_identifier
    assert result.evidence == "Unknown identifier `foo_bar`"
    assert result.labels == [C.hallucinated_identifier, C.tactic_failure]
    # with a sorry left as well, the error still decides
    mixed = failed(
        reasons=[Reason.compile_error],
        diagnostics=[
            err("simp made no progress"),
            Diagnostic(severity=Severity.warning, message="declaration uses `sorry`"),
        ],
    )
    assert classify(mixed).primary == C.tactic_failure


def test_unknown_messages_and_passes():
    odd = classify(failed(reasons=[Reason.compile_error], diagnostics=[err("something new")]))
    assert (odd.primary, odd.evidence) == (C.other, "something new")
    passing = Attempt(task_id="t", solver="s", verdict=Verdict(passed=True))
    with pytest.raises(ValueError, match="passed"):
        classify(passing)


def test_taxonomy_counts_skip_passes_and_keep_enum_order():
    attempts = [
        Attempt(task_id="t", solver="s", verdict=Verdict(passed=True)),
        Attempt(task_id="t", solver="s", error="boom"),
        failed(reasons=[Reason.compile_error], diagnostics=[err("simp made no progress")]),
        failed(reasons=[Reason.compile_error], diagnostics=[err("unknown constant 'X.y'")]),
        failed(reasons=[Reason.compile_error], diagnostics=[err("unknown constant 'X.z'")]),
    ]
    counts = taxonomy_counts(attempts)
    assert counts == {"hallucinated_identifier": 2, "tactic_failure": 1, "model_error": 1}
    assert list(counts) == ["hallucinated_identifier", "tactic_failure", "model_error"]


@pytest.mark.coq
@pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not installed")
def test_verdicts_of_the_real_verifier_on_coq():
    """End to end: the strict verifier with the Coq backend judges candidates, and the
    taxonomy reads its verdicts."""
    verifier_mod = pytest.importorskip("formalbench.checking.verifier")
    coq_mod = pytest.importorskip("formalbench.backends.coq")
    head = "Require Import Arith Lia.\nTheorem t (n : nat) : n + 0 = n.\nProof.\n"
    original = head + "Admitted.\n"
    cases = {
        "apply Nat.add_zero_r_foo.\nQed.\n": C.hallucinated_identifier,
        "apply eq_refl.\nQed.\n": C.type_error,
        "induction n.\nQed.\n": C.tactic_failure,
        "lia ) .\nQed.\n": C.format_error,
        "Admitted.\n": C.incomplete_output,
    }
    backend = coq_mod.CoqBackend(workers=1)
    try:
        verifier = verifier_mod.StrictVerifier(backend)
        for proof, category in cases.items():
            verdict = verifier.verify(original, head + proof, timeout=60)
            attempt = Attempt(task_id="t", solver="s", code=head + proof, verdict=verdict)
            assert classify(attempt).primary == category, (proof, verdict)
    finally:
        backend.close()


def test_every_category_has_a_report_title():
    # an undecided attempt once made `report` fail with a KeyError
    from formalbench.metrics.messages import ErrorCategory
    from formalbench.reporting.fmt import CATEGORY_TITLES

    assert set(CATEGORY_TITLES) == set(ErrorCategory)
