"""Solvers on Lean tasks, where no Lean toolchain can run: the backend is a test-only
`Backend` subclass that answers each check with a `CheckResult` built here from messages in
the REPL's JSON shape (fixtures/lean-repl of the public data: `{"severity", "pos", "endPos", "data"}`,
read by the real `message_to_diagnostic`). Message texts are Lean's own: the trace message
of `trace "..."` (fixtures: trace_simp), the heartbeat error as `Core.throwMaxHeartbeat`
writes it (recent toolchains, quoted in leanprover/lean4#11183) and the recursion-limit
error of `Lean.Exception` (`maxRecDepthErrorMessage`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence

from formalbench.backends.base import Backend
from formalbench.backends.lean.messages import message_to_diagnostic, sorry_to_hole
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.records import CheckResult, Informal, Language, Task
from formalbench.datasets.shipped import shipped_path
from formalbench.llm.replay import ScriptedModel
from formalbench.solvers import SolverConfig, make_solver
from formalbench.solvers.goals import lean_goals
from formalbench.solvers.portfolio import PortfolioSolver
from formalbench.solvers.probe import probe_script, read_probe
from formalbench.solvers.search import DeclarationIndex
from formalbench.solvers.tools import AgentTools, task_context

L = Language.lean
HEARTBEATS = (
    "(deterministic) timeout at `whnf`, maximum number of heartbeats (150000) has been "
    "reached\n\nNote: Use `set_option maxHeartbeats <num>` to set the limit.\n\nHint: "
    "Additional diagnostic information may be available using the `set_option diagnostics "
    "true` command."
)
RECURSION = (
    "maximum recursion depth has been reached\nuse `set_option maxRecDepth <num>` to "
    "increase limit\nuse `set_option diagnostics true` to get diagnostic information"
)


class GivenResults(Backend):
    """Test-only backend: every check is answered by `answer(source, targets)`."""

    name = "lean"
    language = Language.lean

    def __init__(self, answer: Callable[[str, Sequence[str]], CheckResult]) -> None:
        super().__init__(workers=1, timeout=60)
        self.answer = answer
        self.sources: list[str] = []

    def check(
        self, source: str, *, targets: Sequence[str] = (), timeout: float | None = None
    ) -> CheckResult:
        self.sources.append(source)
        return self.answer(source, targets)

    def version(self) -> str:
        return "lean (given results)"


def repl_result(messages: list[dict], axioms: dict[str, list[str]] | None = None) -> CheckResult:
    return CheckResult(
        backend="lean",
        diagnostics=[message_to_diagnostic(m) for m in messages],
        axioms=axioms or {},
    )


def message(severity: str, line: int, column: int, data: str) -> dict:
    return {
        "severity": severity,
        "pos": {"line": line, "column": column},
        "endPos": {"line": line, "column": column + 5},
        "data": data,
    }


_BRANCH = re.compile(
    r"\| \(\(set_option maxHeartbeats \d+ in \((?P<tac>.*)\)\); done; "
    r'trace "formalbench_portfolio (?P<hole>\d+) (?P<k>\d+)"\)'
)
_NONE = re.compile(r'\| fail "formalbench_portfolio (\d+) none"')


def lean_like(outcomes: dict[str, str]) -> Callable[[str, Sequence[str]], CheckResult]:
    """Answers as Lean would, given what each tactic does: "closes", "heartbeats",
    "recursion", "kernel" (closes in the probe, rejected when checked plainly); any other
    tactic fails and `first` goes on. One probe per hole; a limit aborts that hole's probe."""

    def answer(source: str, targets: Sequence[str]) -> CheckResult:
        lines = source.splitlines()
        if "formalbench_portfolio" not in source:  # a plain candidate: the verification
            bad = [n for n, ln in enumerate(lines, 1) if outcomes.get(ln.strip()) == "kernel"]
            if bad:
                err = "(kernel) declaration has metavariables 'foo'"
                return repl_result([message("error", bad[0], 2, err)])
            return repl_result([], {t: ["propext"] for t in targets})
        messages, done = [], set()
        for n, ln in enumerate(lines, 1):
            branch, none = _BRANCH.search(ln), _NONE.search(ln)
            hole = branch["hole"] if branch else none.group(1) if none else None
            if hole is None or hole in done:
                continue
            if none:
                messages.append(message("error", n, 4, f"formalbench_portfolio {hole} none"))
                done.add(hole)
                continue
            what = outcomes.get(branch["tac"], "fails")
            column = ln.index("(set_option")
            if what in ("closes", "kernel"):
                data = f"formalbench_portfolio {hole} {branch['k']}"
                messages.append(message("info", n, ln.index("trace"), data))
                done.add(hole)
            elif what in ("heartbeats", "recursion"):
                text = HEARTBEATS if what == "heartbeats" else RECURSION
                messages.append(message("error", n, column + 40, text))
                done.add(hole)
        return repl_result(messages)

    return answer


def lean_task(text: str, tid: str = "t") -> Task:
    return Task(id=tid, language=L, formal=text, header="import Mathlib\n\n")


def portfolio(backend: GivenResults, tactics: list[str]) -> PortfolioSolver:
    config = SolverConfig(tactics={"lean": tactics}, prefixes={"lean": [""]})
    solver = make_solver("portfolio", StrictVerifier(backend), None, config)
    assert isinstance(solver, PortfolioSolver)
    return solver


ONE = "theorem foo (n : ℕ) (h : 2 < n) : 4 < n * n := by\n  sorry\n"
TWO = ONE + "\ntheorem bar (x : ℕ) : x + 0 = x := by\n  sorry\n"


# ---- the probe text and its reading ---------------------------------------------------


def test_portfolio_variants_try_every_tactic_after_each_prefix_in_turn():
    config = SolverConfig(tactics={"lean": ["simp", "omega"]}, prefixes={"lean": ["", "intros; "]})
    solver = make_solver("portfolio", StrictVerifier(None, language=L), None, config)
    assert isinstance(solver, PortfolioSolver)
    assert solver.variants(L) == ["simp", "omega", "intros; simp", "intros; omega"]


def test_lean_probe_has_one_line_per_try_and_keeps_tactic_indices_when_some_are_left_out():
    tactics = ["simp", "omega", "intro x\n  exact x", "decide"]
    script = probe_script(L, 2, tactics, 3, skip={1})
    lines = script.splitlines()
    assert lines[0] == "first" and len(lines) == 5
    assert lines[1] == (
        '  | ((set_option maxHeartbeats 150000 in (simp)); done; trace "formalbench_portfolio 2 0")'
    )
    assert "omega" not in script  # left out, and the others keep their index
    assert lines[2].endswith('(intro x; exact x)); done; trace "formalbench_portfolio 2 2")')
    assert lines[3].endswith('trace "formalbench_portfolio 2 3")')
    assert lines[4] == '  | fail "formalbench_portfolio 2 none"'


def test_read_probe_names_winners_failures_and_the_try_that_hit_a_limit():
    text = "\n".join(
        [
            "theorem a : True := by",
            *("  " + ln for ln in probe_script(L, 0, ["simp", "trivial"], 3).splitlines()),
            "theorem b : 1 = 1 := by",
            *("  " + ln for ln in probe_script(L, 1, ["simp", "rfl"], 3).splitlines()),
            "theorem c : 2 = 2 := by",
            *("  " + ln for ln in probe_script(L, 2, ["simp", "rfl"], 3).splitlines()),
        ]
    )
    lines = text.splitlines()
    assert "(trivial)" in lines[3] and "(simp)" in lines[7]
    result = repl_result(
        [
            message("info", 4, 40, "formalbench_portfolio 0 1"),
            message("error", 8, 44, HEARTBEATS),
            message("error", 14, 4, "formalbench_portfolio 2 none"),
            message("error", 11, 20, RECURSION),  # a `theorem` line: no branch to blame
        ]
    )
    report = read_probe(result, text)
    assert report.wins == {0: 1, 2: None}
    assert report.blown == {1: 0}
    assert report.blown_messages == [RECURSION]


# ---- the portfolio loop ---------------------------------------------------------------


def test_a_tactic_that_runs_out_of_heartbeats_is_left_out_and_the_hole_probed_again():
    backend = GivenResults(
        lean_like({"simp": "heartbeats", "omega": "fails", "nlinarith": "closes"})
    )
    solver = portfolio(backend, ["simp", "omega", "nlinarith"])
    attempt = asyncio.run(solver.solve(lean_task(ONE), 0))
    assert attempt.verdict is not None and attempt.verdict.passed, attempt.verdict
    assert attempt.params["probes"] == 2
    first, second, final = backend.sources
    assert "(simp)" in first and "(simp)" not in second and "(nlinarith)" in second
    assert "by\n  nlinarith" in final and "first" not in final
    assert "simp left out: it hit Lean's heartbeat or recursion limit" in attempt.raw_output


def test_limits_in_several_holes_are_handled_in_one_round_each():
    outcomes = {"simp": "recursion", "decide": "heartbeats", "omega": "closes"}
    backend = GivenResults(lean_like(outcomes))
    attempt = asyncio.run(portfolio(backend, ["simp", "decide", "omega"]).solve(lean_task(TWO), 0))
    assert attempt.verdict is not None and attempt.verdict.passed, attempt.verdict
    assert attempt.params["probes"] == 3  # simp out of both holes, then decide, then omega wins
    assert attempt.code.count("  omega") == 2


def test_when_every_tactic_hits_a_limit_the_hole_is_reported_unsolved():
    backend = GivenResults(lean_like({"simp": "heartbeats", "omega": "heartbeats"}))
    attempt = asyncio.run(portfolio(backend, ["simp", "omega"]).solve(lean_task(ONE), 0))
    assert attempt.verdict is not None and not attempt.verdict.passed
    assert attempt.params["probes"] == 3
    assert "no tactic of the portfolio closed the goal of `foo`" in (
        attempt.verdict.diagnostics[0].message
    )
    assert attempt.error is None and "sorry" in attempt.code


def test_a_winner_the_verifier_rejects_gives_way_to_the_next_tactic_that_closes_the_goal():
    backend = GivenResults(lean_like({"decide": "kernel", "norm_num": "closes"}))
    attempt = asyncio.run(portfolio(backend, ["decide", "norm_num"]).solve(lean_task(ONE), 0))
    assert attempt.verdict is not None and attempt.verdict.passed, attempt.verdict
    assert attempt.params["fallbacks"] == 1 and attempt.params["probes"] == 2
    assert "by\n  norm_num" in attempt.code
    assert "decide left out: the verifier rejected it" in attempt.raw_output


def test_a_rejection_is_pinned_to_its_hole_by_line():
    outcomes = {"decide": "kernel", "simp": "closes"}
    # foo: decide wins the probe but is rejected; bar: decide wins and is fine (no error
    # line falls in bar's proof) -- only foo's winner is left out
    backend = GivenResults(lean_like(outcomes))
    text = ONE + "\ntheorem bar (x : ℕ) : x = x := by\n  sorry\n"
    original = backend.answer

    def answer(source: str, targets: Sequence[str]) -> CheckResult:
        if "formalbench_portfolio" not in source:
            lines = source.splitlines()
            bar = next(i for i, ln in enumerate(lines) if ln.startswith("theorem bar"))
            bad = [n for n, ln in enumerate(lines[:bar], 1) if ln.strip() == "decide"]
            if bad:
                err = "(kernel) declaration has metavariables 'foo'"
                return repl_result([message("error", bad[0], 2, err)])
            return repl_result([], {t: ["propext"] for t in targets})
        return original(source, targets)

    backend.answer = answer
    attempt = asyncio.run(portfolio(backend, ["decide", "simp"]).solve(lean_task(text), 0))
    assert attempt.verdict is not None and attempt.verdict.passed, attempt.verdict
    assert "hole 1 (foo): decide left out" in attempt.raw_output
    foo, bar = attempt.code.split("theorem bar")
    assert "  simp" in foo and "  decide" in bar


# ---- prompts never give the answer away (item: expected answer) -----------------------


def putnam_1963_b1() -> Task:
    path = shipped_path("example-lean")
    assert path is not None
    for line in path.read_text(encoding="utf-8").splitlines():
        task = Task.model_validate_json(line)
        if task.id == "putnam_1963_b1":
            return task
    raise AssertionError("putnam_1963_b1 is not in example-lean")


def test_the_expected_answer_of_an_evaluation_task_is_withheld_unless_asked_for():
    task = putnam_1963_b1()
    assert task.kind == "evaluation" and task.informal.solution == "Show that $a=2$."
    backend = GivenResults(lambda source, targets: repl_result([]))
    for name, reply in (("whole", "```lean\nrfl\n```"), ("agent", "```submit\nrfl\n```")):
        for show in (False, True):
            model = ScriptedModel([reply])
            config = SolverConfig(show_answer=show, search_paths=["/nonexistent"])
            solver = make_solver(name, StrictVerifier(backend), model, config)
            attempt = asyncio.run(solver.solve(task, 0))
            prompt = "\n".join(m.content for m in model.calls[0].messages)
            assert "abbrev putnam_1963_b1_solution" in prompt  # the task is there
            assert "For what integer $a$" in prompt  # and its informal statement
            assert ("$a=2$" in prompt) is show, (name, show)
            assert attempt.params.get("show_answer", False) is show


def test_the_solution_of_a_proof_task_is_still_shown():
    informal = Informal(statement="Show 4 < n*n.", solution="Since n >= 3, n*n >= 9.")
    task = lean_task(ONE).model_copy(update={"informal": informal})
    backend = GivenResults(lambda source, targets: repl_result([]))
    model = ScriptedModel(["```lean\nnlinarith\n```"])
    asyncio.run(make_solver("whole", StrictVerifier(backend), model).solve(task, 0))
    assert "Since n >= 3, n*n >= 9." in model.calls[0].messages[-1].content


# ---- the agent's tools on Lean ----------------------------------------------------------


def lean_tools(
    answer: Callable[[str, Sequence[str]], CheckResult],
) -> tuple[AgentTools, GivenResults]:
    backend = GivenResults(answer)
    solver = make_solver("agent", StrictVerifier(backend), ScriptedModel(["x"]), SolverConfig())
    return AgentTools(solver, lean_task(ONE), DeclarationIndex([], L)), backend


def test_lean_run_with_a_sorry_shows_the_goals_the_repl_reports_for_it():
    # the REPL's `sorries` entry, in the shape of fixtures/lean-repl/tactic_sorry
    sorry = {
        "proofState": 0,
        "pos": {"line": 4, "column": 2},
        "goal": "n : ℕ\nh : 2 < n\n⊢ 4 < n * n",
        "endPos": {"line": 4, "column": 7},
    }
    warning = message("warning", 3, 8, "declaration uses `sorry`")
    tools, backend = lean_tools(
        lambda source, targets: CheckResult(
            backend="lean",
            diagnostics=[message_to_diagnostic(warning)],
            holes=[sorry_to_hole(sorry)],
        )
    )
    answer = asyncio.run(tools.run("intro\n  sorry"))
    assert "Rejected (forbidden_construct)" in answer
    assert "Goals left open:\ngoal 1 of 1:\nn : ℕ\nh : 2 < n\n⊢ 4 < n * n" in answer
    assert len(backend.sources) == 1  # the verifier refused it unseen; the tool looked


def test_lean_check_places_the_snippet_after_the_context_and_returns_info_messages():
    def answer(source: str, targets: Sequence[str]) -> CheckResult:
        line = source.splitlines().index("#check Nat.lt_irrefl") + 1
        data = "Nat.lt_irrefl (n : ℕ) : ¬n < n"
        return repl_result([message("info", line, 0, data)])

    tools, backend = lean_tools(answer)
    assert asyncio.run(tools.check("#check Nat.lt_irrefl")) == (
        "info (line 1):\nNat.lt_irrefl (n : ℕ) : ¬n < n"
    )
    assert backend.sources[0] == "import Mathlib\n\n#check Nat.lt_irrefl\n"  # no target
    assert asyncio.run(tools.check('#eval IO.Process.run {cmd := "ls"}')) == (
        "nothing was run: the check tool does not run `#eval`"
    )
    assert len(backend.sources) == 1


def test_lean_context_drops_the_doc_comment_of_the_first_target():
    text = "import Mathlib\n\ndef k := 3\n\n/-- The claim. -/\ntheorem t : k = 3 := by\n  sorry\n"
    assert task_context(text, L) == "import Mathlib\n\ndef k := 3\n\n"


def test_lean_run_reads_the_goals_from_the_unsolved_goals_message():
    # the message as the REPL writes it (fixtures/lean-repl: unfinished_tactic_block)
    unsolved = "unsolved goals\nn : ℕ\nh : 2 < n\n⊢ 4 < n * n"
    tools, backend = lean_tools(
        lambda source, targets: repl_result([message("error", 3, 51, unsolved)])
    )
    answer = asyncio.run(tools.run("intro"))
    assert "Rejected (compile_error)" in answer
    assert "line 3, column 51: theorem foo" in answer and unsolved in answer
    assert len(backend.sources) == 1  # the goals were in the message: no second look
    goals = lean_goals([message_to_diagnostic(message("error", 3, 51, unsolved))])
    assert goals == ["n : ℕ\nh : 2 < n\n⊢ 4 < n * n"]


def test_lean_run_compiles_a_refused_candidate_only_when_its_findings_are_holes():
    tools, backend = lean_tools(lambda source, targets: repl_result([]))
    answer = asyncio.run(tools.run("have h2 : 2 ≤ 2 := by native_decide\n  sorry"))
    assert "native_decide" in answer and "Goals left open" not in answer
    assert backend.sources == []  # the verifier refused it unseen, and so does the tool


def test_a_limit_error_on_no_branch_line_ends_the_search_with_lean_own_message():
    backend = GivenResults(
        lambda source, targets: repl_result([message("error", 3, 0, HEARTBEATS)])
    )
    attempt = asyncio.run(portfolio(backend, ["simp", "omega"]).solve(lean_task(ONE), 0))
    assert attempt.verdict is not None and not attempt.verdict.passed
    assert attempt.params["probes"] == 1  # nothing to leave out: no second probe
    assert attempt.verdict.diagnostics[0].message == HEARTBEATS
