"""The agent's tools on the real coqc: goals after a failed `run`, free `check` snippets
(messages, `Check` types, goals of an open `Goal`), and search through the task's own
declarations."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.records import Language, Task
from formalbench.llm.replay import ScriptedModel
from formalbench.solvers import SolverConfig, make_solver
from formalbench.solvers.agent import AgentSolver
from formalbench.solvers.search import DeclarationIndex, scan
from formalbench.solvers.tools import AgentTools, task_context, task_declarations

pytestmark = [
    pytest.mark.coq,
    pytest.mark.skipif(shutil.which("coqc") is None, reason="needs coqc"),
]

TEXT = """Require Import Arith Lia.

Definition double (n : nat) := n + n.

Lemma double_helper_le : forall n : nat, n <= double n.
Proof. intros n. unfold double. lia. Qed.

Theorem target (n m : nat) (H : n < m) : n + 1 <= m /\\ double n >= n.
Proof.
Admitted.

Lemma after_target : True.
Proof. exact I. Qed.
"""
TASK = Task(id="target", language=Language.coq, formal=TEXT)


@pytest.fixture(scope="module")
def tools() -> Iterator[AgentTools]:
    backend = CoqBackend(workers=2, timeout=60)
    model = ScriptedModel(["unused"])
    solver = make_solver("agent", StrictVerifier(backend), model, SolverConfig())
    yield AgentTools(solver, TASK, DeclarationIndex([], Language.coq))
    backend.close()


def run(coro):  # noqa: ANN001, ANN201
    return asyncio.run(coro)


def test_run_of_an_unfinished_proof_shows_the_goals_left(tools: AgentTools) -> None:
    answer = run(tools.run("split."))
    assert "Attempt to save an incomplete proof" in answer  # all coqc itself says
    assert "Goals before the failing step (line 11)" in answer  # the line of `Qed.`
    assert "goal 1 of 2:\nn : nat\nm : nat\nH : n < m\n=====" in answer
    assert "============================\nn + 1 <= m" in answer
    assert "============================\ndouble n >= n" in answer


def test_run_with_a_failing_step_shows_the_goal_that_step_was_given(tools: AgentTools) -> None:
    answer = run(tools.run("split.\n- exact I.\n- unfold double. lia."))
    assert 'The term "I" has type "True"' in answer
    # the bullet focuses the first goal: only it is shown, as it was before `exact I`
    assert "goal 1 of 1:\nn : nat\nm : nat\nH : n < m\n" in answer
    assert answer.rstrip().endswith("n + 1 <= m")


def test_run_of_a_forbidden_step_shows_the_goals_at_it(tools: AgentTools) -> None:
    answer = run(tools.run("split; [lia | admit]."))
    assert "admit" in answer and "Goals before the failing step" in answer
    assert "============================" in answer


def test_check_answers_with_the_types_of_check_terms(tools: AgentTools) -> None:
    snippet = (
        "Check Nat.add_comm. (* a comment. *)\nCheck double_helper_le.\nCheck (double (* x. *) 2)."
    )
    answer = run(tools.check(snippet))
    assert "No messages: the snippet compiles." in answer
    assert "Nat.add_comm\n     : forall n m : nat, n + m = m + n" in answer
    assert "double_helper_le\n     : forall n : nat, n <= double n" in answer  # the task's own
    assert "(double (* x. *) 2)\n     : nat" in answer


def test_check_of_an_open_goal_shows_its_goals(tools: AgentTools) -> None:
    answer = run(tools.check("Goal forall k : nat, double k = 2 * k.\nintros k. unfold double."))
    assert "There are pending proofs" in answer  # all coqc says
    assert "Goals at that point:\ngoal 1 of 1:\nk : nat\n============================\n" in answer
    assert "k + k = 2 * k" in answer


def test_check_reports_errors_at_snippet_lines_and_says_what_it_cannot_show(
    tools: AgentTools,
) -> None:
    answer = run(tools.check("Check Nat.add_comm.\nCheck no_such_lemma."))
    assert "error (line 2, column 6):" in answer
    assert "no_such_lemma was not found" in answer
    quiet = run(tools.check("Search (_ + 0 = _)."))
    assert "not available from this Coq backend" in quiet


def test_check_refuses_commands_that_load_code_or_touch_files(tools: AgentTools) -> None:
    answer = run(tools.check('Load "/etc/passwd".'))
    assert answer == "nothing was run: the check tool does not run `Load`"


def test_search_finds_the_task_own_declarations_but_not_the_target(tools: AgentTools) -> None:
    answer = run(tools.search("double"))
    assert "Lemma double_helper_le : forall n : nat, n <= double n" in answer
    assert "[the task file, line 5]" in answer
    assert "Definition double" in answer
    names = [d.name for d in task_declarations(TEXT, Language.coq)]
    assert names == ["double", "double_helper_le"]  # not the target, nothing after it
    assert task_context(TEXT, Language.coq).rstrip().endswith("lia. Qed.")


def test_agent_loop_offers_check_and_answers_it() -> None:
    replies = [
        "```check\nCheck Nat.lt_le_incl.\n```",
        "```submit\nsplit; [lia | unfold double; lia].\n```",
    ]
    model = ScriptedModel(replies)
    backend = CoqBackend(workers=1, timeout=60)
    try:
        solver = make_solver("agent", StrictVerifier(backend), model, SolverConfig())
        assert isinstance(solver, AgentSolver)
        attempt = run(solver.solve(TASK, 0))
    finally:
        backend.close()
    assert attempt.verdict is not None and attempt.verdict.passed, attempt.verdict
    assert attempt.params["actions"] == ["check", "submit"]
    system = model.calls[0].messages[0].content
    assert "```check" in system and "`Check Nat.add_comm.`" in system
    observed = model.calls[1].messages[-1].content
    assert "Result of `check`" in observed and "Nat.lt_le_incl\n     : forall" in observed


def test_search_qualifies_a_module_with_a_signature_constraint() -> None:
    # `with Module E := X` constrains the signature: `P` still opens a scope (stdlib's
    # FSetPositive.v shape); `Module R := P.` opens none
    text = (
        "Module X.\nDefinition t := nat.\nEnd X.\n"
        "Module P <: T with Module E := X.\nLemma a : True. Proof. exact I. Qed.\nEnd P.\n"
        "Module R := P.\nLemma b : True. Proof. exact I. Qed.\n"
    )
    assert [d.name for d in scan(text, Language.coq)] == ["X.t", "P.a", "b"]
