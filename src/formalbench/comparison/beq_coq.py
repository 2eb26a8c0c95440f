"""BEq in Coq, tier 1 (no model): is a candidate statement Q equivalent to a reference P?

Each statement is first elaborated in its own header only, as a definition of a compiled
library (`coq_sides`): nothing of one side's imports, scopes, notations or settings reaches
the other. One more coqc run, over the libraries' fully qualified names, then checks per
direction (P ⊢ Q, then Q ⊢ P)
1. `(P) -> (Q)` with a fixed portfolio tried inside one `solve [ … | … ]` (`exact`,
   `intros; apply`, `eapply …; eauto`, `edestruct`, `firstorder`, closers `lia`/`lra`/`nra`
   on the side goals), every branch under `timeout` and announcing itself with `idtac`, so
   the last branch announced before the verdict is the tactic that proved the direction;
2. `Q` alone with `solve [ <the same closers without P> ]`: a direction counts only if the
   statement is not provable without the other one (otherwise a trivially true candidate
   would be "equivalent" to everything).
`solve`, not `first`: `auto` succeeds without closing a goal, so only `solve` makes a branch
mean "proved". Every check runs inside `assert_succeeds` and is then abandoned: nothing is
stated with `Qed`, the portfolio is fixed text, and no statement can add an axiom (only
header commands and one statement pass the gate). The same run prints both statements under
`Set Printing All` for GTED's operator trees.

Statements are hostile text: only `From`/`Require`/`Import`/`Open`/`Set` commands and one
`Theorem`/`Lemma` pass, the theorem's proof is dropped, and the project's forbidden-word gate
runs on what is kept. Nothing else of the input reaches coqc.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from formalbench.backends.coq import CoqBackend
from formalbench.backends.sandbox import work_dir
from formalbench.checking.decls import Decl, split_decls
from formalbench.checking.forbidden import forbidden_findings
from formalbench.comparison.coq_sides import DEFINITION, LOGICAL, Sides, SideStatement, build_sides
from formalbench.core.config import VerifierPolicy
from formalbench.core.errors import InputError
from formalbench.core.records import CheckStatus, Language

HEADER_KINDS = {"From", "Require", "Import", "Export", "Open", "Set", "Local"}
BASE_HEADER = "From Coq Require Import Lia Lra Psatz ZArith.\n"
LIMIT = 5  # seconds per portfolio branch

_CLOSE = "first [ assumption | symmetry; assumption | lia | lra | nra | auto ]"
# tactics that use the other statement, named `fb_other` in the context
WITH_OTHER = (
    "exact fb_other",
    "intros; apply fb_other; assumption",
    f"intros; apply fb_other; {_CLOSE}",
    f"intros; symmetry; apply fb_other; {_CLOSE}",
    "intros; apply fb_other; tauto",
    # Z's `>` and `>=` are not `<`, `<=` unfolded (as nat's and R's are)
    f"intros; first [ apply Z.lt_gt | apply Z.gt_lt | apply Z.le_ge | apply Z.ge_le ]; apply fb_other; {_CLOSE}",
    f"intros; eapply fb_other; eauto; {_CLOSE}",
    f"intros; edestruct fb_other; eauto; {_CLOSE}",
    "firstorder",
)
# the same closers with nothing to use: the non-triviality check
ALONE = (
    "intros; assumption",
    f"intros; {_CLOSE}",
    "intros; symmetry; assumption",
    "intros; tauto",
    f"intros; eauto; {_CLOSE}",
    "firstorder",
)


@dataclass
class CoqStatement:
    """A gated statement: the header commands it needs and its type as one term."""

    header: str
    term: str


@dataclass
class Direction:
    proved: bool
    trivial: bool  # the goal is provable without the other statement
    detail: str = ""  # the tactic that proved it, or why it was not decided
    seconds: float = 0.0
    alone: str = ""  # the tactic that proved the goal without the other statement
    undecided: bool = False  # the assistant stopped (time, memory) before a verdict

    @property
    def counts(self) -> bool:
        return self.proved and not self.trivial


@dataclass
class BeqResult:
    forward: Direction  # reference ⊢ candidate
    backward: Direction  # candidate ⊢ reference
    compiled: bool
    tier: str = "portfolio"
    notes: list[str] = field(default_factory=list)
    names: tuple[str, str] | None = None  # Coq: the statements' constants in their libraries
    printed: tuple[str, str] | None = None  # Coq: both statements under `Set Printing All`

    @property
    def beq(self) -> bool:
        return self.compiled and self.forward.counts and self.backward.counts


def parse_statement(text: str, what: str) -> CoqStatement:
    """Keep the header commands and the one theorem's type of a Coq text; refuse the rest."""
    decls = split_decls(text, Language.coq)
    theorems = [d for d in decls if d.kind == "Theorem"]
    if len(theorems) != 1:
        raise InputError(f"{what}: expected exactly one Theorem/Lemma, found {len(theorems)}")
    thm = theorems[0]
    others = [d for d in decls if d is not thm and not _header_decl(d, text, thm.start)]
    if others:
        raise InputError(
            f"{what}: only Require/Import/Open/Set commands and definitions (`:=`, no proof "
            f"mode) may precede the theorem, found `{others[0].kind}` at line {others[0].line}"
        )
    kept = [d for d in decls if d is not thm]
    sig = thm.signature
    found = forbidden_findings(
        [*kept, thm], VerifierPolicy().forbidden_for(Language.coq), language=Language.coq
    )
    in_sig = [f for f in found if f.line is not None and f.line <= sig[-1].line]
    if in_sig:
        raise InputError(f"{what}: {in_sig[0].message}")
    start = thm.head + 2  # after `Theorem name`
    if start >= len(sig):
        raise InputError(f"{what}: the theorem has no statement")
    rest = text[sig[start].offset : sig[-1].end]
    binders, term = _split_colon(rest, what)
    term = f"forall {binders}, {term}" if binders.strip() else term
    header = "".join(text[d.start : d.end] + "\n" for d in kept)
    reserved = _RESERVED.search(header + term)
    if reserved:  # one side could otherwise name the other's elaborated statement
        raise InputError(f"{what}: `{reserved.group(0)}` is a name BEq reserves for itself")
    return CoqStatement(header, term)


# Definitions a statement may come with: each side's library holds its own, so the two
# sides' `f` are two constants, related by conversion (transparent, `:=` bodies). Nothing
# that can assume (`Axiom`, `Parameter`, an `Admitted` body) or end in proof mode.
DEFINITION_KINDS = {"Definition", "Fixpoint", "Notation"}
_LOCAL = re.compile(r"Local\s+(Open|Close|Set|Unset|Notation)\b")
_PROOF_MODE = re.compile(r"(?<![\w'])(Proof|Admitted|admit|Defined|Qed|Abort|Save)(?![\w'])")


def _header_decl(d: Decl, text: str, before: int) -> bool:
    """Whether `d` may stay in a statement's header: a header command, or a `:=` definition
    (or module alias) before the theorem."""
    body = text[d.start : d.end]
    if d.kind == "Local":  # `Local Open Scope`, never `Local Axiom`
        return bool(_LOCAL.match(body)) and not _PROOF_MODE.search(body)
    if d.kind in HEADER_KINDS:
        return True
    if d.start >= before or ":=" not in body or _PROOF_MODE.search(body):
        return False
    return d.kind in DEFINITION_KINDS or (d.kind == "Module" and "End" not in body)


_RESERVED = re.compile(rf"(?<![\w'])({DEFINITION}\w*|{LOGICAL}\b|FbS[0-9a-f]\w*|FbCompare\b)")


def _split_colon(text: str, what: str) -> tuple[str, str]:
    """`(x : T) (h : P) : goal` -> ("(x : T) (h : P)", "goal"): the first `:` at depth 0."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == ":" and depth == 0 and text[i + 1 : i + 2] != "=":
            return text[:i].strip(), text[i + 1 :].strip()
    raise InputError(f"{what}: cannot find the `:` before the statement")


def _alternatives(tactics: tuple[str, ...], mark: str) -> str:
    return "\n  | ".join(
        f'idtac "{MARK} {mark} try {k}"; timeout {LIMIT} ({t})' for k, t in enumerate(tactics)
    )


def _probe(goal: str, tactics: tuple[str, ...], mark: str, intro: str = "") -> str:
    """A goal, the portfolio tried on it (the goal is left as it was), a marker printed for
    the outcome, and the goal dropped: one file holds every check of a batch."""
    return (
        f"Goal {goal}.\n{intro}"
        f"first [ assert_succeeds (solve [ {_alternatives(tactics, mark)} ]);\n"
        f'  idtac "{MARK} {mark} yes" | idtac "{MARK} {mark} no" ].\nAbort.\n'
    )


MARK = "formalbench_beq"
_SAID = re.compile(rf"{MARK} (\d+)_(\w+) (yes|no|try (\d+))")
_TIME = re.compile(r"^Chars \d+ - \d+ ")
TREE = "formalbench_tree"
PROBES = "formalbench_probes_begin"
_TREES = re.compile(rf'"?{TREE} (\d+)"?\s*')


def unfold(name: str, where: str = "") -> str:
    """Replace one statement's constant by its body and nothing else (no beta, no iota)."""
    return f"cbv delta [{name}]{f' in {where}' if where else ''}."


def pair_script(i: int, p: str, q: str) -> str:
    """Pair `i` over the constants `p` (reference) and `q` (candidate): both directions and
    both non-triviality checks."""
    return (
        _probe(f"{p} -> {q}", WITH_OTHER, f"{i}_forward", direction_setup(p, q) + "\n")
        + _probe(q, ALONE, f"{i}_candidate_alone", unfold(q) + "\n")
        + _probe(f"{q} -> {p}", WITH_OTHER, f"{i}_backward", direction_setup(q, p) + "\n")
        + _probe(p, ALONE, f"{i}_reference_alone", unfold(p) + "\n")
    )


def direction_setup(given: str, goal: str) -> str:
    """The first step of a direction's proof: the other statement as `fb_other`, both
    constants unfolded to the statements as written."""
    return f"intro fb_other. {unfold(given, 'fb_other')} {unfold(goal)}"


def trees_script(names: list[str]) -> str:
    """Every statement printed in full (`Set Printing All`, no depth or width cut), each
    after a marker, for the operator trees."""
    lines = ["Set Printing All.\nSet Printing Width 1000000.\nSet Printing Depth 1000000.\n"]
    for k, name in enumerate(names):
        lines.append(f'Goal True. idtac "{TREE} {k}". Abort.\nEval cbv delta [{name}] in {name}.\n')
    return "".join(lines)


@dataclass
class _Said:
    """What the comparison run printed: verdicts by mark, the winning branch by mark."""

    verdict: dict[str, str] = field(default_factory=dict)
    winner: dict[str, int] = field(default_factory=dict)
    printed: dict[str, str] = field(default_factory=dict)  # constant -> printed term
    stderr: str = ""
    seconds: float = 0.0
    ended: str = ""  # how coqc ended when not normally (timeout, out_of_memory, ...)


def read_run(stdout: str, names: list[str]) -> _Said:
    """The verdicts, winning branches and printed terms (of `names`, by their marker) in
    the comparison run's stdout."""
    said = _Said()
    tried: dict[str, int] = {}
    text = "\n".join(ln for ln in stdout.splitlines() if not _TIME.match(ln))
    # the printed terms come first (a run stopped by a slow probe still has them), the
    # verdicts after the last probes marker: nothing a printed statement holds is read as one
    begin = text.rfind(PROBES)
    printed, probes = (text[:begin], text[begin:]) if begin >= 0 else (text, "")
    for m in _SAID.finditer(probes):
        mark = f"{m.group(1)}_{m.group(2)}"
        if m.group(4) is not None:
            tried[mark] = int(m.group(4))
        else:
            said.verdict[mark] = m.group(3)
            if m.group(3) == "yes" and mark in tried:
                said.winner[mark] = tried[mark]
    parts = _TREES.split(printed)
    for k in range(1, len(parts) - 1, 2):
        text = parts[k + 1].strip()
        index = int(parts[k])
        if text.startswith("=") and index < len(names):  # `Eval` answers `= TERM : Type`
            said.printed[names[index]] = text[1:].strip()
    return said


class CoqBeq:
    """Tier-1 BEq over a Coq backend (real coqc): one library per distinct header, then one
    coqc run for a whole batch of pairs."""

    def __init__(self, backend: CoqBackend | None = None, timeout: float = 120.0) -> None:
        self.backend = backend or CoqBackend(timeout=timeout)
        self.timeout = timeout

    def compare(self, reference: str, candidate: str, folder: Path | None = None) -> BeqResult:
        return self.compare_many([(reference, candidate)], folder)[0]

    def compare_many(
        self, pairs: list[tuple[str, str]], folder: Path | None = None
    ) -> list[BeqResult]:
        """BEq of each (reference, candidate). The libraries are built in `folder` (kept
        for the caller, e.g. for tier 2) or in a throw-away one."""
        parsed = [
            (parse_statement(r, "reference"), parse_statement(c, "candidate")) for r, c in pairs
        ]
        if folder is not None:
            return self._compare(parsed, folder)
        with work_dir("beq") as tmp:
            return self._compare(parsed, Path(tmp))

    def _compare(
        self, parsed: list[tuple[CoqStatement, CoqStatement]], folder: Path
    ) -> list[BeqResult]:
        statements = [SideStatement(s.header, s.term) for pair in parsed for s in pair]
        sides = build_sides(self.backend, statements, folder, self.timeout)
        results: list[BeqResult | None] = [None] * len(parsed)
        todo: list[tuple[int, str, str]] = []
        for i in range(len(parsed)):
            if 2 * i in sides.errors:
                raise InputError(
                    f"reference: Coq does not accept the statement: {sides.errors[2 * i]}"
                )
            if 2 * i + 1 in sides.errors:
                off = Direction(False, False, sides.errors[2 * i + 1])
                results[i] = BeqResult(off, off, compiled=False)
            else:
                todo.append((i, sides.names[2 * i], sides.names[2 * i + 1]))
        if todo:
            said = self._run(sides, folder, todo)
            for i, p, q in todo:
                if f"{i}_reference_alone" not in said.verdict and len(todo) > 1:
                    results[i] = _result(i, (p, q), self._run(sides, folder, [(i, p, q)]))
                else:
                    results[i] = _result(i, (p, q), said, len(todo))
        return [r for r in results if r is not None]

    def _run(self, sides: Sides, folder: Path, items: list[tuple[int, str, str]]) -> _Said:
        names = list(dict.fromkeys(n for _, p, q in items for n in (p, q)))
        script = (
            BASE_HEADER
            + sides.require()
            + trees_script(names)
            + f'Unset Printing All.\nGoal True. idtac "{PROBES}". Abort.\n'
            + "".join(pair_script(i, p, q) for i, p, q in items)
        )
        t0 = time.perf_counter()
        # the backend's process runner (limits, scrubbed env, the gate); its stdout carries
        # the markers and printed terms, which a CheckResult does not keep
        outcome = self.backend.compile(
            folder, "FbCompare", script, self.timeout * len(items), ["-time", *sides.load_path()]
        )
        said = read_run(outcome.stdout, names)
        said.stderr, said.seconds = outcome.stderr, time.perf_counter() - t0
        if outcome.status != CheckStatus.ok:
            said.ended = outcome.status.value
        return said


def _result(i: int, names: tuple[str, str], said: _Said, share: int = 1) -> BeqResult:
    seconds = said.seconds / share
    notes: list[str] = []

    def direction(goal: str, alone: str, tactics: tuple[str, ...]) -> Direction:
        verdict, trivial = said.verdict.get(f"{i}_{goal}"), said.verdict.get(f"{i}_{alone}")
        if verdict is None or trivial is None:
            ended = f" ({said.ended})" if said.ended else ""
            why = f"coqc stopped before this check{ended}: {_first_error(said.stderr)}"
            notes.append(f"{goal}: undecided, {why}")
            return Direction(False, False, why, seconds, undecided=True)
        won = said.winner.get(f"{i}_{goal}")
        alone_won = said.winner.get(f"{i}_{alone}")
        return Direction(
            verdict == "yes",
            trivial == "yes",
            tactics[won] if won is not None else "",
            seconds,
            alone=ALONE[alone_won] if alone_won is not None else "",
        )

    forward = direction("forward", "candidate_alone", WITH_OTHER)
    backward = direction("backward", "reference_alone", WITH_OTHER)
    result = BeqResult(forward, backward, compiled=True, notes=notes, names=names)
    p, q = said.printed.get(names[0]), said.printed.get(names[1])
    if p is not None and q is not None:
        result.printed = (p, q)
    return result


def _first_error(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    found = next((i for i, ln in enumerate(lines) if ln.startswith("Error")), None)
    if found is None:
        return lines[-1][:200] if lines else "no output"
    return " ".join(lines[found : found + 2])[:200]
