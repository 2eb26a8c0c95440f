"""BEq in Lean 4, tier 1 (no model), through the Lean backend (REPL or per-file).

The design is the Coq one (`beq_coq`): for each direction (P ⊢ Q, then Q ⊢ P) one check of
one generated file that holds
1. each statement as `def fb_statement_<role> : Prop := …` inside a `section` holding its
   own `open`/`set_option`/`universe` commands, which Lean closes at `end`: one side's
   namespaces, scoped notations and options never reach the other (imports cannot sit in a
   section: they are the one thing both sides share). An error inside a section tells a
   statement that does not elaborate from a direction that fails (not compiled);
2. `theorem fb_beq_with (fb_other : fb_statement_reference) : fb_statement_candidate`,
   both definitions unfolded (`unfold` of a definition without arguments is `delta`: the
   statements exactly as elaborated), then `intros` and the portfolio probe
   (`solvers.probe`: `first | … | …`, every branch under its own heartbeat limit, the
   winner named by an info message). The other statement is a *hypothesis*, never a
   `sorry` lemma, so the theorem's axioms stay the three standard ones (checked with
   `#print axioms`; anything else, `sorryAx` above all, and the direction does not count);
3. `theorem fb_beq_alone : Q` with the same closers and no `fb_other`: a direction counts
   only if the goal is not provable without the other statement.

The portfolio follows BEq+ (Poiroux et al., 2025) without `exact?`, which the strict
verifier forbids: `apply fb_other` then closers, the same after `symm`, `convert fb_other
?_ … using k` (k = 0..3) then closers, `simp_all` and `tauto` with `fb_other` in context.
A branch that blows Lean's heartbeat limit aborts the whole `first` (Lean's `first` does not
catch it); the probe then runs again without that branch, as the portfolio solver does.

Statements are hostile text: only `import`/`open`/`set_option`/`universe` commands and one
`theorem`/`lemma`/`example` pass, its proof is dropped, and the forbidden-word and
code-at-elaboration filters run on what is kept. Nothing else of the input reaches Lean.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace

from formalbench.backends.base import Backend
from formalbench.checking.decls import CLOSE_BRACKETS, OPEN_BRACKETS, split_decls
from formalbench.checking.forbidden import forbidden_findings
from formalbench.checking.lean_hostile import hostile_findings
from formalbench.comparison.beq_coq import BeqResult, Direction
from formalbench.core.config import VerifierPolicy
from formalbench.core.errors import InputError
from formalbench.core.lexer import Token
from formalbench.core.records import CheckResult, CheckStatus, Language, Severity
from formalbench.solvers.probe import probe_script, read_probe

HEADER_KINDS = {"import", "open", "scoped", "set_option", "universe"}
RESERVED = "fb_statement_"  # the prefix of the statements' definitions in a comparison
STANDARD_AXIOMS = frozenset({"propext", "Classical.choice", "Quot.sound"})
LIMIT = 10  # seconds (as heartbeats) per portfolio branch
RETRIES = 3  # probes again after a branch blew its heartbeat limit

_CLOSE = (
    "first | assumption | (symm; assumption) | rfl | (constructor <;> assumption) "
    "| omega | linarith | simp_all | tauto"
)


def with_other(explicit: int) -> list[str]:
    """The tactics that use the other statement (`fb_other`, with `explicit` explicit
    arguments), tried after `intros`."""
    holes = " ?_" * explicit
    tactics = [
        "apply fb_other <;> assumption",
        f"apply fb_other <;> ({_CLOSE})",
        f"symm; apply fb_other <;> ({_CLOSE})",
        f"exact (fb_other{' _' * explicit}).symm",
    ]
    tactics += [f"convert fb_other{holes} using {k} <;> ({_CLOSE})" for k in range(4)]
    tactics += ["simp_all", "tauto"]
    return tactics


# the closers alone: the non-triviality control
ALONE = [
    "assumption",
    "(symm; assumption)",
    "rfl",
    "(constructor <;> assumption)",
    "omega",
    "linarith",
    "simp_all",
    "tauto",
]


@dataclass
class LeanStatement:
    """A gated statement: its header commands and its proposition, `∀ binders, concl`."""

    header: list[str]
    binders: str
    conclusion: str
    explicit: int  # explicit binders (arguments `fb_other` takes)

    @property
    def prop(self) -> str:
        return f"∀ {self.binders},\n  {self.conclusion}" if self.binders else self.conclusion


def parse_lean_statement(text: str, what: str) -> LeanStatement:
    """Keep the header commands and the one theorem's statement of a Lean text."""
    decls = split_decls(text, Language.lean)
    theorems = [d for d in decls if d.kind in ("theorem", "example")]
    if len(theorems) != 1:
        raise InputError(f"{what}: expected exactly one theorem, found {len(theorems)}")
    thm = theorems[0]
    others = [d for d in decls if d is not thm and d.kind not in HEADER_KINDS]
    if others:
        raise InputError(
            f"{what}: only import/open/set_option commands may come with the theorem, "
            f"found `{others[0].kind}` at line {others[0].line}"
        )
    if thm.head != 0:
        raise InputError(f"{what}: modifiers or `… in` prefixes before the theorem are refused")
    kept = [d for d in decls if d.kind in HEADER_KINDS]
    sig = thm.signature
    statement = replace(thm, tokens=sig, body_start=len(sig))  # the proof is dropped
    policy = VerifierPolicy().forbidden_for(Language.lean)
    found = forbidden_findings([*kept, statement], policy, language=Language.lean)
    found += hostile_findings([*kept, statement], policy)
    if found:
        raise InputError(f"{what}: {found[0].message}")
    start = thm.head + (2 if thm.kind == "theorem" else 1)
    colon = _statement_colon(sig, start)
    if colon is None:
        raise InputError(f"{what}: cannot find the `:` before the statement")
    if colon + 1 >= len(sig):
        raise InputError(f"{what}: the theorem has no statement")
    binders = text[sig[start].offset : sig[colon - 1].end] if colon > start else ""
    conclusion = text[sig[colon + 1].offset : sig[-1].end]
    header: list[str] = []
    for d in kept:  # `open scoped X` is read as `open` and `scoped X`: one command again
        if d.kind == "scoped" and header:
            header[-1] += " " + text[d.start : d.end]
        else:
            header.append(text[d.start : d.end])
    if re.search(rf"(?<![\w.']){RESERVED}", "\n".join(header) + binders + conclusion):
        raise InputError(f"{what}: `{RESERVED}…` is a name BEq reserves for itself")
    return LeanStatement(header, binders, conclusion, _explicit(sig[start:colon]))


def _statement_colon(sig: list[Token], start: int) -> int | None:
    depth = 0
    for i in range(start, len(sig)):
        tok = sig[i].text
        if tok in OPEN_BRACKETS:
            depth += 1
        elif tok in CLOSE_BRACKETS:
            depth -= 1
        elif tok == ":" and depth == 0:
            return i
    return None


def _explicit(binders: list[Token]) -> int:
    """Names bound by `( … )` groups and bare names: the arguments `fb_other` takes."""
    count, depth, group, in_names = 0, 0, "", False
    for tok in binders:
        if tok.text in OPEN_BRACKETS:
            depth += 1
            if depth == 1:
                group, in_names = tok.text, True
        elif tok.text in CLOSE_BRACKETS:
            depth -= 1
        elif depth == 0 and tok.kind == "ident":
            count += 1
        elif depth == 1 and tok.text == ":":
            in_names = False
        elif depth == 1 and in_names and group == "(" and tok.kind == "ident":
            count += 1
    return count


def merged_header(*statements: LeanStatement) -> str:
    """Imports first (Lean requires it), then the other commands, each once. (Only the
    imports are shared in a comparison: see `sides_source`.)"""
    lines: list[str] = []
    for s in statements:
        for command in s.header:
            if command not in lines:
                lines.append(command)
    imports = [c for c in lines if c.startswith("import")]
    return "\n".join(imports + [c for c in lines if not c.startswith("import")]) + "\n"


def imports_of(*statements: LeanStatement) -> str:
    """The `import` commands of all statements, each once: a Lean file cannot import inside
    a section, so imports are the one part of the headers both sides share."""
    found = [c for s in statements for c in s.header if c.startswith("import")]
    return "\n".join(dict.fromkeys(found)) + "\n" if found else ""


def statement_name(role: str) -> str:
    return f"{RESERVED}{role}"


def section(stmt: LeanStatement, body: str) -> str:
    """`body` under the statement's own `open`/`set_option`/`universe` commands only:
    Lean closes them all at `end`, so nothing of one side reaches the other."""
    own = [c for c in stmt.header if not c.startswith("import")]
    return "\n".join(["section", *own, body, "end"])


def sides_source(roles: dict[str, LeanStatement]) -> tuple[str, dict[str, tuple[int, int]]]:
    """The shared imports, then each statement as `def fb_statement_<role> : Prop := …` in a
    section of its own header, and the lines each section spans (an error there: the
    statement does not elaborate in its own header)."""
    text = imports_of(*roles.values())
    lines: dict[str, tuple[int, int]] = {}
    for role, stmt in roles.items():
        first = text.count("\n") + 1
        text += section(stmt, f"def {statement_name(role)} : Prop :=\n  {stmt.prop}") + "\n"
        lines[role] = (first, text.count("\n"))
    return text, lines


def direction_setup(given: str, goal: str) -> str:
    """The first steps of a direction's proof: both constants unfolded (a definition with no
    arguments: `unfold` is `delta`, the statement exactly as elaborated), then `intros`."""
    return f"unfold {given} at fb_other\n  unfold {goal}\n  intros"


@dataclass
class _Probe:
    source: str
    check_lines: dict[str, tuple[int, int]]  # "reference"/"candidate" -> their sections


def _indent(script: str) -> str:
    return "\n".join("  " + line for line in script.splitlines())


def direction_source(
    given: LeanStatement,
    goal: LeanStatement,
    roles: tuple[str, str],
    index: int = 0,
    skip: tuple[set[int], set[int]] = (set(), set()),
) -> _Probe:
    """The one file of direction `index` (0 forward, 1 backward): both statements
    elaborated, each in its own header (`sides_source`), the goal proved from the given
    statement (probe hole 2 * index) and alone (the next hole); the hole numbers name the
    direction in the answers."""
    text, lines = sides_source(dict(sorted(zip(roles, (given, goal), strict=True))))
    g, q = statement_name(roles[0]), statement_name(roles[1])
    parts = [text.rstrip("\n")]
    parts.append(
        f"theorem fb_beq_with (fb_other : {g}) :\n    {q} := by\n  {direction_setup(g, q)}\n"
        + _indent(
            probe_script(Language.lean, 2 * index, with_other(given.explicit), LIMIT, skip[0])
        )
    )
    parts.append(
        f"theorem fb_beq_alone :\n    {q} := by\n  unfold {q}\n  intros\n"
        + _indent(probe_script(Language.lean, 2 * index + 1, ALONE, LIMIT, skip[1]))
    )
    return _Probe("\n".join(parts) + "\n", lines)


class LeanBeq:
    """Tier-1 BEq over a Lean backend: one check per direction (two for a blown branch)."""

    def __init__(self, backend: Backend, timeout: float = 120.0) -> None:
        if backend.language != Language.lean:
            raise InputError(f"Lean BEq needs a Lean backend, not {backend.name}")
        self.backend = backend
        self.timeout = timeout

    def compare(self, reference: str, candidate: str) -> BeqResult:
        p = parse_lean_statement(reference, "reference")
        q = parse_lean_statement(candidate, "candidate")
        forward, ok_f = self._direction(p, q, ("reference", "candidate"), 0)
        if ok_f.get("reference") is False:
            raise InputError(f"reference: Lean does not accept the statement: {forward.detail}")
        if ok_f.get("candidate") is False:
            off = Direction(False, False, forward.detail, forward.seconds)
            return BeqResult(off, off, compiled=False)
        backward, _ = self._direction(q, p, ("candidate", "reference"), 1)
        return BeqResult(forward, backward, compiled=True)

    def _direction(
        self,
        given: LeanStatement,
        goal: LeanStatement,
        roles: tuple[str, str],
        index: int,
    ) -> tuple[Direction, dict[str, bool]]:
        skip: tuple[set[int], set[int]] = (set(), set())
        holes = (2 * index, 2 * index + 1)
        start = time.perf_counter()
        for _ in range(RETRIES + 1):
            probe = direction_source(given, goal, roles, index, skip)
            result = self.backend.check(probe.source, targets=["fb_beq_with"], timeout=self.timeout)
            report = read_probe(result, probe.source)
            blown = [(h, k) for h, k in report.blown.items() if h in holes]
            if not blown:
                break
            for hole, k in blown:
                skip[hole - 2 * index].add(k)
        seconds = time.perf_counter() - start
        accepted = _accepted(result, probe.check_lines)
        if result.status != CheckStatus.ok:
            detail = f"{result.status.value}: {result.detail or ''}".strip()
            return Direction(False, False, detail, seconds), accepted
        won = report.wins.get(holes[0])
        axioms = set(result.axioms.get("fb_beq_with", ["unknown"]))
        proved = won is not None and axioms <= STANDARD_AXIOMS
        tactics = with_other(given.explicit)
        detail = tactics[won] if won is not None else _first_error(result)
        if won is not None and not proved:
            detail = f"axioms beyond the standard ones: {sorted(axioms - STANDARD_AXIOMS)}"
        alone = report.wins.get(holes[1])
        shown = ALONE[alone] if alone is not None and 0 <= alone < len(ALONE) else ""
        return Direction(proved, alone is not None, detail, seconds, alone=shown), accepted


def _accepted(result: CheckResult, lines: dict[str, tuple[int, int]]) -> dict[str, bool]:
    """Which statements elaborated: no error on their `#check` lines (unknown if the check
    did not run)."""
    if result.status != CheckStatus.ok:
        return {}
    errors = [d.line for d in result.diagnostics if d.severity == Severity.error]
    return {
        role: not any(e is not None and lo <= e <= hi for e in errors)
        for role, (lo, hi) in lines.items()
    }


def _first_error(result: CheckResult) -> str:
    errors = [d.message for d in result.diagnostics if d.severity == Severity.error]
    return errors[0][:200] if errors else (result.detail or "no proof found")
