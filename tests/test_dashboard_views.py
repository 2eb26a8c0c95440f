"""Review dashboard: the run used by all dashboard tests, and the page-building rules.

`make_run` writes a small formalize run through FormalizeStore with real Coq text; the
diagnostics stored with failed rounds are what coqc 8.16 says of those texts (the end-to-end
test re-checks edited texts with the real coqc).
"""

from __future__ import annotations

from pathlib import Path

from formalbench.core.formalization import (
    Alignment,
    Candidate,
    CompileRound,
    Decomposition,
    Problem,
    ProblemSummary,
    RankedCandidate,
    ReviewDecision,
    ReviewStatus,
)
from formalbench.core.records import Diagnostic, Language, Severity
from formalbench.dashboard.views import (
    ProblemView,
    backend_name,
    check_timeout,
    edit_diff,
    editor_start,
    order_candidates,
    run_language,
)
from formalbench.store.formalize import FormalizeStore

ARITH = "Require Import Arith.\n\n"
ZARITH = "Require Import ZArith.\nOpen Scope Z_scope.\n\n"
ADD_ZERO_OK = ARITH + "Theorem add_zero_r : forall n : nat, n + O = n.\nProof.\nAdmitted.\n"
ADD_ZERO_NO_DOT = ARITH + "Theorem add_zero_r : forall n : nat, n + 0 = n\nProof.\nAdmitted.\n"
MUL_ONE = ARITH + "Theorem add_zero_r : forall n : nat, n * 1 = n.\nProof.\nAdmitted.\n"
DIVIDES_OK = ZARITH + "Theorem seven_divides : (7 | 21)%Z.\nProof.\nAdmitted.\n"
DIVIDES_BAD = ZARITH + "Theorem seven_divides : Zdivide 7 21 x.\nProof.\nAdmitted.\n"
FIND_X = "Theorem find_x : forall x : nat, x + 3 = 5 <-> x = 2.\nProof.\nAdmitted.\n"


def _error(line: int, column: int, message: str) -> Diagnostic:
    return Diagnostic(severity=Severity.error, message=message, line=line, column=column)


NO_PROOF = _error(4, 0, "The reference Proof was not found in the current environment.")
NO_ZDIVIDE = _error(4, 24, "The reference Zdivide was not found in the current environment.")


def _candidate(pid: str, model: str, rounds: list[tuple[str, list[Diagnostic]]], **kw) -> Candidate:
    return Candidate(
        id=f"{pid}/{model}/0",
        problem_id=pid,
        model=model,
        sample=0,
        language=Language.coq,
        rounds=[
            CompileRound(round=i, code=code, compiled=not diags, diagnostics=diags)
            for i, (code, diags) in enumerate(rounds, start=1)
        ],
        **kw,
    )


def make_run(root: Path, extra: int = 0) -> Path:
    """A formalize run directory with three reviewed-worthy problems (+ `extra` small ones)."""
    root.mkdir(parents=True, exist_ok=True)
    with FormalizeStore(root / "formalize.sqlite") as store:
        # the shape `formalbench formalize` stores: settings under "config"
        settings = {"backend": "coq", "backend_options": {}, "timeout": 60, "models": ["m"]}
        store.set_config({"identity": {"backend": "coq"}, "config": settings})
        problems = [
            Problem(
                id="nt-divides",
                informal="Show that 7 divides 21 in the integers.",
                category="number theory",
                source="hand-written",
            ),
            Problem(
                id="alg-add-zero",
                informal="Prove that adding zero to any natural number n gives n back.",
                category="algebra",
                source="hand-written",
                metadata={"difficulty": "easy"},
            ),
            Problem(
                id="alg-find",
                informal="Find the natural number x such that x + 3 = 5.",
                solution="x = 2",
                category="algebra",
            ),
        ]
        problems += [
            Problem(id=f"extra-{i:04d}", informal=f"Extra problem number {i}.", category="misc")
            for i in range(extra)
        ]
        store.add_problems(problems)
        aligned = Alignment(aligned=True, explanation="Same statement.", model="judge")
        store.put_candidate(
            _candidate(
                "nt-divides",
                "model-a",
                [(DIVIDES_BAD, [NO_ZDIVIDE]), (DIVIDES_OK, [])],
                alignment=Alignment(
                    aligned=True,
                    explanation="Divisibility of 21 by 7 over Z, as asked.",
                    model="judge",
                    decomposition=Decomposition(
                        data_type="integers", conditions=[], proof_goal="7 divides 21"
                    ),
                ),
            )
        )
        store.put_candidate(_candidate("nt-divides", "model-b", [(DIVIDES_BAD, [NO_ZDIVIDE])]))
        store.put_summary(
            ProblemSummary(
                problem_id="nt-divides",
                text="C1 names a lemma that does not exist.",
                model="summarizer",
                keys={"C1": ["nt-divides/model-b/0"], "C2": ["nt-divides/model-a/0"]},
                ranking=[
                    RankedCandidate(candidate_id="nt-divides/model-b/0", rank=1, verdict="idea ok"),
                    RankedCandidate(candidate_id="nt-divides/model-a/0", rank=2, verdict="fine"),
                ],
            )
        )
        store.put_candidate(_candidate("alg-add-zero", "model-a", [(ADD_ZERO_NO_DOT, [NO_PROOF])]))
        store.put_candidate(
            _candidate("alg-add-zero", "model-b", [(ADD_ZERO_OK, [])], alignment=aligned)
        )
        store.put_candidate(
            _candidate(
                "alg-add-zero",
                "model-c",
                [(MUL_ONE, [])],
                alignment=Alignment(aligned=False, explanation="Multiplies by one instead."),
            )
        )
        store.put_summary(
            ProblemSummary(
                problem_id="alg-add-zero",
                text="model-b is faithful; model-c changed the operation.",
                ranking=[
                    RankedCandidate(candidate_id="alg-add-zero/model-c/0", rank=2),
                    RankedCandidate(candidate_id="alg-add-zero/model-b/0", rank=1),
                    RankedCandidate(candidate_id="alg-add-zero/model-a/0", rank=3),
                ],
            )
        )
        store.put_candidate(_candidate("alg-find", "model-a", [(FIND_X, [])], alignment=aligned))
        unread = Alignment(aligned=False, error="no JSON object in the reply")
        store.put_candidate(_candidate("alg-find", "model-b", [(FIND_X, [])], alignment=unread))
        store.put_candidate(_candidate("alg-find", "model-c", [], error="endpoint down"))
        for i in range(extra):
            pid = f"extra-{i:04d}"
            store.put_candidate(_candidate(pid, "model-a", [(ADD_ZERO_OK, [])]))
    return root


def _view(tmp_path: Path, pid: str, decision: ReviewDecision | None = None) -> ProblemView:
    with FormalizeStore(make_run(tmp_path / "run") / "formalize.sqlite") as store:
        summary = store.summary(pid)
        candidates = order_candidates(store.candidates(pid), summary)
        return ProblemView(store.problem(pid), candidates, summary, decision)


def test_compiling_candidates_come_first_then_by_rank(tmp_path: Path):
    view = _view(tmp_path, "alg-add-zero")
    assert [v.candidate.model for v in view.candidates] == ["model-b", "model-c", "model-a"]
    assert [v.rank for v in view.candidates] == [1, 2, 3]
    assert [v.key for v in view.candidates] == [None, None, None]
    # the summary ranks model-b first, but it does not compile: the compiling one leads
    view = _view(tmp_path, "nt-divides")
    assert [v.candidate.model for v in view.candidates] == ["model-a", "model-b"]
    assert view.candidates[1].errors[0].message.startswith("The reference Zdivide")
    assert [v.key for v in view.candidates] == ["C2", "C1"]


def test_unranked_candidates_keep_their_order_after_ranked_ones():
    def cand(name: str, compiled: bool) -> Candidate:
        return _candidate("p", name, [("x.", [] if compiled else [NO_PROOF])])

    cands = [cand("u1", True), cand("r2", True), cand("u2", True), cand("r1", False)]
    summary = ProblemSummary(
        problem_id="p",
        ranking=[
            RankedCandidate(candidate_id="p/r1/0", rank=1),
            RankedCandidate(candidate_id="p/r2/0", rank=2),
        ],
    )
    ordered = [v.candidate.model for v in order_candidates(cands, summary)]
    assert ordered == ["r2", "u1", "u2", "r1"]
    assert [v.candidate.model for v in order_candidates(cands, None)] == ["u1", "r2", "u2", "r1"]


def test_editor_starts_from_asked_then_decided_then_best(tmp_path: Path):
    view = _view(tmp_path, "alg-add-zero")
    chosen, text = editor_start(view, None)
    assert chosen.candidate.model == "model-b" and text == ADD_ZERO_OK
    chosen, text = editor_start(view, "alg-add-zero/model-c/0")
    assert chosen.candidate.model == "model-c" and text == MUL_ONE
    decided = ReviewDecision(
        problem_id="alg-add-zero",
        status=ReviewStatus.accepted,
        candidate_id="alg-add-zero/model-a/0",
        code="edited text",
        version=1,
    )
    view = _view(tmp_path, "alg-add-zero", decided)
    chosen, text = editor_start(view, None)
    assert chosen.candidate.model == "model-a" and text == "edited text"
    chosen, text = editor_start(view, "no/such/candidate")
    assert text == "edited text"


def test_edit_diff_is_a_unified_diff_or_empty():
    assert edit_diff(ADD_ZERO_OK, ADD_ZERO_OK, "c") == ""
    diff = edit_diff(ADD_ZERO_OK, ADD_ZERO_OK.replace("n + O", "n + 0"), "p/m/0")
    lines = diff.splitlines()
    assert lines[0] == "--- p/m/0 (generated)" and lines[1] == "+++ p/m/0 (reviewed)"
    assert "-Theorem add_zero_r : forall n : nat, n + O = n." in lines
    assert "+Theorem add_zero_r : forall n : nat, n + 0 = n." in lines
    # a last line without a newline still ends the diff with one
    assert edit_diff("a", "b", "x").endswith("+b\n")


def test_backend_and_language_from_config_or_candidates():
    cand = _candidate("p", "m", [("x.", [])])
    assert run_language({"language": "lean"}, [cand]) == Language.lean
    assert run_language({}, [cand]) == Language.coq
    assert run_language(None, []) is None
    assert backend_name({"backend": "Kimina"}, Language.lean) == "kimina"
    assert backend_name({"backend": {"name": "lean", "project_dir": "/p"}}, None) == "lean"
    assert backend_name({}, Language.coq) == "coq"
    assert backend_name({}, None) is None
    stored = {
        "identity": {},
        "config": {"backend": "lean", "backend_options": {"project_dir": "/p"}},
    }
    assert run_language(stored, [cand]) == Language.lean  # the backend's language
    assert backend_name(stored, Language.coq) == "lean"
    assert check_timeout(stored) is None and check_timeout({"config": {"timeout": 9}}) == 9.0
