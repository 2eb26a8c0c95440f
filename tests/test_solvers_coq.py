"""The four solvers end to end with the real coqc, a strict verifier and scripted models."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.errors import InputError
from formalbench.core.records import (
    Attempt,
    ErrorKind,
    Informal,
    Language,
    Reason,
    Task,
    TokenUsage,
)
from formalbench.llm.base import Completion, ModelCallError
from formalbench.llm.replay import ScriptedCall, ScriptedModel
from formalbench.metrics.taxonomy import ErrorCategory, classify
from formalbench.solvers import SolverConfig, make_solver
from formalbench.solvers.agent import parse_action
from tests.shared_data import ROOT, needs_shared

pytestmark = [
    pytest.mark.coq,
    pytest.mark.skipif(shutil.which("coqc") is None, reason="needs coqc"),
]

COQ_TEST = ROOT / "data" / "minif2f-coq" / "test"


def coq_task(name: str) -> Task:
    return Task(id=name, language=Language.coq, formal=(COQ_TEST / f"{name}.v").read_text())


@pytest.fixture(scope="module")
def verifier() -> Iterator[StrictVerifier]:
    backend = CoqBackend(workers=2, timeout=60)
    yield StrictVerifier(backend)
    backend.close()


def solve(name: str, verifier: StrictVerifier, task: Task, model=None, **config) -> Attempt:  # noqa: ANN001
    solver = make_solver(name, verifier, model, SolverConfig(**config))
    return asyncio.run(solver.solve(task, 0))


def block(body: str, tag: str = "coq") -> str:
    return f"Here it is.\n```{tag}\n{body}\n```\n"


# ---- portfolio -----------------------------------------------------------------------


@needs_shared
def test_portfolio_proves_a_linear_task_and_the_proof_is_plain(verifier: StrictVerifier) -> None:
    attempt = solve("portfolio", verifier, coq_task("aime_1989_p8"))
    assert attempt.verdict is not None and attempt.verdict.passed, attempt.verdict
    assert attempt.error is None and attempt.model is None
    assert "intros; lra" in attempt.code  # the winner, without first/timeout scaffolding
    assert "first [" not in attempt.code and "timeout" not in attempt.code
    # the probe was cut in two chunks (the fixture's backend has 2 slots, MIN_CHUNK tactics
    # each): the winner is in the first, the second ran on the spare slot and was abandoned
    assert attempt.params["probes"] == 2
    assert attempt.params["speculative_probes"] == attempt.params["abandoned_probes"] == 1
    assert "a + 4 * b + 9 * c" in attempt.code  # the task's statement, unchanged


@needs_shared
def test_portfolio_failure_is_a_recorded_verdict(verifier: StrictVerifier) -> None:
    task = coq_task("algebra_absxm1pabsxpabsxp1eqxp2_0leqxleq1")
    attempt = solve("portfolio", verifier, task, tactics={"coq": ["lia", "lra", "easy"]})
    assert attempt.error is None
    assert attempt.verdict is not None and not attempt.verdict.passed
    assert attempt.verdict.reasons == [Reason.compile_error]
    assert "no tactic of the portfolio closed the goal" in attempt.verdict.diagnostics[0].message
    assert "Admitted." in attempt.code  # the hole is left as it was
    assert attempt.params["tactics"][:3] == ["lia", "lra", "easy"]


def test_portfolio_fills_several_holes_in_order(verifier: StrictVerifier) -> None:
    text = (
        "Require Import Arith.\n\nLemma one : forall n : nat, n + 0 = n.\nProof.\nAdmitted.\n\n"
        "Lemma two : forall n m : nat, n + m = m + n.\nProof.\nAdmitted.\n"
    )
    task = Task(id="two_holes", language=Language.coq, formal=text)
    attempt = solve("portfolio", verifier, task, tactics={"coq": ["reflexivity", "lia"]})
    assert attempt.verdict is not None and attempt.verdict.passed, attempt.verdict
    assert attempt.params["probes"] == 2  # Coq stops at the probe's error: one per hole
    assert attempt.raw_output.splitlines() == [
        "hole 1 (one): lia",  # reflexivity cannot, lia introduces the variables itself
        "hole 2 (two): lia",
    ]


@needs_shared
def test_portfolio_falls_back_when_the_verifier_rejects_the_winner(
    verifier: StrictVerifier,
) -> None:
    # `admit` closes any goal in the probe, but the verifier forbids it: the next tactic
    # that closes the goal is probed for and verified instead
    task = coq_task("mathd_numbertheory_342")
    attempt = solve("portfolio", verifier, task, tactics={"coq": ["admit", "reflexivity"]})
    assert attempt.verdict is not None and attempt.verdict.passed, attempt.verdict
    assert attempt.params["fallbacks"] == 1 and attempt.params["probes"] == 2
    assert "reflexivity." in attempt.code and "admit" not in attempt.code
    assert attempt.raw_output.splitlines() == [
        "hole 1 (mathd_numbertheory_342): admit",
        "hole 1 (mathd_numbertheory_342): admit left out: the verifier rejected it",
        "hole 1 (mathd_numbertheory_342): reflexivity",
    ]


@pytest.mark.host(
    "coqc 8.16 (OCaml 4) overflows its system stack on this term; Rocq 9.2 (OCaml 5) grows it"
)
def test_portfolio_leaves_out_a_tactic_that_overflows_the_stack() -> None:
    with CoqBackend(workers=2, timeout=60, toolchain="host") as backend:
        _leaves_out_the_overflow(StrictVerifier(backend))


def _leaves_out_the_overflow(verifier: StrictVerifier) -> None:
    # the first tactic overflows coqc's stack, which no `first`/`try` catches: it is left out
    # and the hole probed again, so the tactic after it still gets its turn
    text = (
        "Fixpoint deep (n : nat) : nat := match n with 0 => 0 | S m => S (deep m) end.\n"
        "Definition big := Nat.iter 1000000 S 0.\n"
        "Theorem t : deep 0 = 0.\nProof.\nAdmitted.\n"
    )
    task = Task(id="overflow", language=Language.coq, formal=text)
    overflow = "let x := eval lazy in (deep big) in idtac"
    attempt = solve(
        "portfolio",
        verifier,
        task,
        tactics={"coq": [overflow, "reflexivity"]},
        prefixes={"coq": [""]},
        tactic_timeout=60,  # wall-clock: the overflow must come first on a busy machine
    )
    assert attempt.verdict is not None and attempt.verdict.passed, attempt.verdict
    assert attempt.params["left_out"] == [
        {"hole": 1, "tactic": overflow, "why": "it overflowed the stack"}
    ]
    assert attempt.params["probes"] == 2
    assert attempt.raw_output.splitlines()[-1] == "hole 1 (t): reflexivity"


# ---- whole ---------------------------------------------------------------------------


@needs_shared
def test_whole_right_proof_passes_with_sampling_parameters(verifier: StrictVerifier) -> None:
    model = ScriptedModel(
        [block("Theorem mathd_numbertheory_342 : 54 mod 6 = 0.\nProof.\n  reflexivity.\nQed.")]
    )
    task = coq_task("mathd_numbertheory_342")
    task = task.model_copy(update={"informal": Informal(statement="Show that 54 mod 6 is 0.")})
    solver = make_solver("whole", verifier, model, SolverConfig())
    attempt = asyncio.run(solver.solve(task, 3))
    assert attempt.verdict is not None and attempt.verdict.passed, attempt.verdict
    assert attempt.sample == 3 and attempt.turns == 1 and attempt.model == "scripted"
    call = model.calls[0]
    assert call.seed == 3 and call.temperature == 1.0 and call.max_tokens == 16_000
    assert attempt.params["seed"] == 3 and attempt.params["temperature"] == 1.0
    assert "Show that 54 mod 6 is 0." in call.messages[-1].content  # the informal statement
    assert "54 mod 6 = 0" in call.messages[-1].content
    assert attempt.prompt_hash and attempt.params["prompts"]["solver_whole"] == attempt.prompt_hash
    assert attempt.raw_output.startswith("Here it is.") and attempt.tokens.total > 0


@needs_shared
def test_whole_changed_statement_is_replaced_by_the_original(verifier: StrictVerifier) -> None:
    changed = (
        "Theorem mathd_numbertheory_342 : 54 mod 6 = 0 \\/ True.\nProof.\n  right. exact I.\nQed."
    )
    attempt = solve(
        "whole", verifier, coq_task("mathd_numbertheory_342"), ScriptedModel([block(changed)])
    )
    assert "54 mod 6 = 0." in attempt.code and "\\/ True" not in attempt.code
    assert attempt.verdict is not None and not attempt.verdict.passed
    assert attempt.verdict.reasons == [Reason.compile_error]  # `right` fails on the real goal


@needs_shared
def test_whole_admitted_proof_fails_strictly(verifier: StrictVerifier) -> None:
    answer = block("Theorem mathd_numbertheory_342 : 54 mod 6 = 0.\nProof.\n  idtac.\nAdmitted.")
    attempt = solve("whole", verifier, coq_task("mathd_numbertheory_342"), ScriptedModel([answer]))
    assert attempt.verdict is not None and not attempt.verdict.passed
    assert Reason.forbidden_construct in attempt.verdict.reasons
    assert attempt.error is None


@needs_shared
def test_whole_without_code_block_is_a_formatting_failure(verifier: StrictVerifier) -> None:
    answer = "The proof is by reflexivity: Theorem x : 54 mod 6 = 0. Proof. reflexivity. Qed."
    attempt = solve("whole", verifier, coq_task("mathd_numbertheory_342"), ScriptedModel([answer]))
    assert attempt.error is not None and attempt.error.kind == ErrorKind.format_
    assert attempt.code == "" and attempt.raw_output == answer
    assert attempt.verdict is not None and not attempt.verdict.passed
    assert attempt.verdict.diagnostics[0].kind == "format"


# ---- sequential ----------------------------------------------------------------------


@needs_shared
def test_sequential_repairs_with_the_diagnostics_of_the_last_try(verifier: StrictVerifier) -> None:
    model = ScriptedModel([block("exact I."), block("reflexivity.")])
    attempt = solve("sequential", verifier, coq_task("mathd_numbertheory_342"), model)
    assert attempt.verdict is not None and attempt.verdict.passed, attempt.verdict
    assert attempt.turns == 2 and len(model.calls) == 2
    first, second = (c.messages[-1].content for c in model.calls)
    assert "(* YOUR PROOF HERE *)" in first and "Admitted" not in first
    assert 'The term "I" has type "True"' in second  # coqc's own error about the first try
    assert "exact I." in second
    assert all(c.temperature == 0.4 for c in model.calls)
    assert set(attempt.params["prompts"]) == {"solver_hole_fill", "solver_hole_repair"}
    assert "### hole 1 (mathd_numbertheory_342), turn 2" in attempt.raw_output


@needs_shared
def test_sequential_stops_after_max_turns(verifier: StrictVerifier) -> None:
    model = ScriptedModel(lambda call: block("exact I."))
    attempt = solve("sequential", verifier, coq_task("mathd_numbertheory_342"), model, max_turns=3)
    assert len(model.calls) == 4 and attempt.turns == 4  # a first try, then 3 repair turns
    assert "This is repair turn 3 of 3." in model.calls[-1].messages[-1].content
    assert attempt.error is None
    assert attempt.verdict is not None and not attempt.verdict.passed
    assert "exact I." in attempt.code  # the last try is what was verified


@needs_shared
def test_sequential_default_is_one_try_and_32_repair_turns_per_hole(
    verifier: StrictVerifier,
) -> None:
    # `admit` is refused before any check, so the 33 turns cost no coqc run
    model = ScriptedModel(lambda call: block("admit."))
    attempt = solve("sequential", verifier, coq_task("mathd_numbertheory_342"), model)
    assert len(model.calls) == 33 and attempt.turns == 33
    assert attempt.params["max_turns"] == 32
    assert "This is repair turn 32 of 32." in model.calls[-1].messages[-1].content
    assert "`admit`, which the verifier rejects" in model.calls[1].messages[-1].content


@needs_shared
def test_sequential_stops_when_the_token_budget_is_spent(verifier: StrictVerifier) -> None:
    usage = TokenUsage(prompt=400, completion=200)
    model = ScriptedModel(lambda call: Completion(text=block("exact I."), usage=usage))
    attempt = solve(
        "sequential", verifier, coq_task("mathd_numbertheory_342"), model, token_budget=1000
    )
    assert len(model.calls) == 2  # 600 spent after one call, 1200 after two: no third
    assert attempt.error is not None and attempt.error.kind == ErrorKind.budget
    assert attempt.error.scope == "task"
    assert attempt.tokens.total == 1200
    assert model.calls[1].max_tokens == 400  # the output cap shrinks to what is left
    # the last try and the verifier's word on it are kept, so its diagnostics are not lost
    assert "exact I." in attempt.code and "Admitted" not in attempt.code
    assert attempt.verdict is not None and not attempt.verdict.passed
    assert any('has type "True"' in d.message for d in attempt.verdict.diagnostics)
    taxonomy = classify(attempt)
    assert taxonomy.primary == ErrorCategory.incomplete_output  # stopped, not a model failure
    assert ErrorCategory.type_error in taxonomy.labels


def test_sequential_fills_one_hole_at_a_time(verifier: StrictVerifier) -> None:
    text = (
        "Require Import Arith.\n\nLemma one : 1 + 1 = 2.\nProof.\nAdmitted.\n\n"
        "Lemma two : 2 + 2 = 4.\nProof.\nAdmitted.\n"
    )
    task = Task(id="two", language=Language.coq, formal=text)
    model = ScriptedModel([block("reflexivity."), block("exact I."), block("reflexivity.")])
    attempt = solve("sequential", verifier, task, model)
    assert attempt.verdict is not None and attempt.verdict.passed, attempt.verdict
    prompts = [c.messages[-1].content for c in model.calls]
    assert "Lemma two : 2 + 2 = 4.\nProof.\nAdmitted." in prompts[0]  # later hole untouched
    assert "reflexivity." in prompts[1] and "Admitted" not in prompts[1]  # first hole filled
    assert 'has type "True"' in prompts[2] and "line 10, column 6: exact I." in prompts[2]


# ---- agent ---------------------------------------------------------------------------


@needs_shared
def test_agent_searches_runs_then_submits(verifier: StrictVerifier) -> None:
    replies = [
        "Let me look for the lemma.\n```search\nNat.mod_same\n```",
        "Try it.\n```run\nexact I.\n```",
        "Fixed.\n```submit\nreflexivity.\n```",
    ]
    model = ScriptedModel(replies)
    attempt = solve("agent", verifier, coq_task("mathd_numbertheory_342"), model)
    assert attempt.verdict is not None and attempt.verdict.passed, attempt.verdict
    assert attempt.params["actions"] == ["search", "run", "submit"]
    after_search = model.calls[1].messages[-1].content
    assert "mod_same" in after_search and "Result of `search`" in after_search
    after_run = model.calls[2].messages[-1].content
    assert 'The term "I" has type "True"' in after_run
    roles = [m.role for m in model.calls[2].messages]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]


@needs_shared
def test_agent_without_submission_fails_after_max_turns(verifier: StrictVerifier) -> None:
    model = ScriptedModel(lambda call: "I am thinking about it.")
    task = coq_task("mathd_numbertheory_342")
    attempt = solve("agent", verifier, task, model, max_turns=3, search_paths=[str(COQ_TEST)])
    assert len(model.calls) == 3 and attempt.params["actions"] == ["none"] * 3
    assert "did not end with exactly one" in model.calls[1].messages[-1].content
    assert attempt.code == "" and attempt.verdict is not None and not attempt.verdict.passed


def test_parse_action_takes_the_last_action_block() -> None:
    assert parse_action("```coq\nx\n```\n```run\nlia.\n```\n```submit\nauto.\n```") == (
        "submit",
        "auto.",
    )
    assert parse_action("no block") is None


# ---- failures are recorded, not raised ---------------------------------------------


@needs_shared
def test_model_errors_are_recorded_not_raised(verifier: StrictVerifier) -> None:
    def broken(call: ScriptedCall) -> str:
        raise ModelCallError("endpoint unreachable after 5 retries")

    for name in ("whole", "sequential", "agent"):
        attempt = solve(name, verifier, coq_task("mathd_numbertheory_342"), ScriptedModel(broken))
        assert str(attempt.error) == "model: endpoint unreachable after 5 retries", name
        assert attempt.error is not None and attempt.error.kind == ErrorKind.model
        assert attempt.verdict is not None and not attempt.verdict.passed


def test_make_solver_rejects_unknown_names_and_missing_models(verifier: StrictVerifier) -> None:
    with pytest.raises(InputError, match="known solvers: portfolio, whole, sequential, agent"):
        make_solver("magic", verifier, None, SolverConfig())
    with pytest.raises(InputError, match="needs a model"):
        make_solver("sequential", verifier, None, SolverConfig())


def test_a_task_without_hole_is_recorded_as_a_task_error(verifier: StrictVerifier) -> None:
    task = Task(id="done", language=Language.coq, formal="Lemma a : True.\nProof. exact I. Qed.\n")
    for name, model in (("portfolio", None), ("whole", ScriptedModel([block("exact I.")]))):
        attempt = solve(name, verifier, task, model)
        assert attempt.error is not None and attempt.error.kind == ErrorKind.task, name
        assert "has no hole" in attempt.error.message and attempt.turns == 0


@needs_shared
def test_whole_answer_that_imports_what_it_needs_passes(verifier: StrictVerifier) -> None:
    answer = block(
        "Require Import Reals Lra.\nOpen Scope R_scope.\n\nTheorem mathd_algebra_478:\n"
        "  forall (b h v : R), (0 < b /\\ 0 < h /\\ 0 < v) -> v = (1/3) * (b * h) ->\n"
        "  b = 30 -> h = 13/2 -> v = 65.\nProof.\n  intros b h v _ Hv Hb Hh. subst. lra.\nQed."
    )
    attempt = solve("whole", verifier, coq_task("mathd_algebra_478"), ScriptedModel([answer]))
    assert attempt.verdict is not None and attempt.verdict.passed, attempt.verdict
    assert "Proof.\nRequire Import Reals Lra.\nintros b h v" in attempt.code
