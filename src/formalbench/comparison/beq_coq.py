"""BEq in Coq, tier 1 (no model): is a candidate statement Q equivalent to a reference P?

For each direction (P ⊢ Q, then Q ⊢ P) one coqc run checks a file that
1. proves `(P) -> (Q)` with a fixed portfolio tried inside one `solve [ … | … ]` (`exact`,
   `intros; apply`, `eapply …; eauto`, `edestruct`, `firstorder`, closers `lia`/`lra`/`nra`
   on the side goals), every branch under `timeout`;
2. then states `Q` alone and requires `Fail solve [ <the same closers without P> ]`: a
   direction counts only if the statement is not provable without the other one (otherwise a
   trivially true candidate would be "equivalent" to everything).
`solve`, not `first`: `auto` succeeds without closing a goal, so only `solve` makes a branch
mean "proved". The verdict is read from where coqc stopped (an error on the lemma: not
proved; an error on the `Fail` line: provable alone), and the lemma's axioms from `Print
Assumptions` through the Coq backend: a local axiom or an admitted proof is never accepted.

Statements are hostile text: only `From`/`Require`/`Import`/`Open`/`Set` commands and one
`Theorem`/`Lemma` pass, the theorem's proof is dropped, and the project's forbidden-word gate
runs on what is kept. Nothing else of the input reaches coqc.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from formalbench.backends.coq import CoqBackend
from formalbench.checking.decls import split_decls
from formalbench.checking.forbidden import forbidden_findings
from formalbench.core.config import VerifierPolicy
from formalbench.core.errors import InputError
from formalbench.core.records import Language

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
    detail: str = ""
    seconds: float = 0.0

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
    others = [d for d in decls if d is not thm and d.kind not in HEADER_KINDS]
    if others:
        raise InputError(
            f"{what}: only Require/Import/Open commands may precede the theorem, "
            f"found `{others[0].kind}` at line {others[0].line}"
        )
    kept = [d for d in decls if d.kind in HEADER_KINDS]
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
    return CoqStatement(header, term)


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


def _alternatives(tactics: tuple[str, ...]) -> str:
    return "\n  | ".join(f"timeout {LIMIT} ({t})" for t in tactics)


def _probe(goal: str, tactics: tuple[str, ...], mark: str, intro: str = "") -> str:
    """A goal, the portfolio tried on it (the goal is left as it was), a marker printed for
    the outcome, and the goal dropped: one file holds every check of a pair."""
    return (
        f"Goal {goal}.\n{intro}"
        f"first [ assert_succeeds (solve [ {_alternatives(tactics)} ]);\n"
        f'  idtac "{MARK} {mark} yes" | idtac "{MARK} {mark} no" ].\nAbort.\n'
    )


MARK = "formalbench_beq"
_SAID = re.compile(rf"{MARK} (\d+)_(\w+) (yes|no)")


def pair_script(i: int, p: CoqStatement, q: CoqStatement) -> str:
    """Pair `i`: both statements type-checked (a candidate that does not type-check stops
    the file, so a batch runs it alone again), both directions, both non-triviality checks."""
    ok = 'Goal True. idtac "{m} {i}_{k} yes". Abort.\n'
    return (
        f"Check ({p.term}).\n"
        + ok.format(m=MARK, i=i, k="reference")
        + f"Check ({q.term}).\n"
        + ok.format(m=MARK, i=i, k="candidate")
        + _probe(f"({p.term}) -> ({q.term})", WITH_OTHER, f"{i}_forward", "intro fb_other.\n")
        + _probe(f"({q.term})", ALONE, f"{i}_candidate_alone")
        + _probe(f"({q.term}) -> ({p.term})", WITH_OTHER, f"{i}_backward", "intro fb_other.\n")
        + _probe(f"({p.term})", ALONE, f"{i}_reference_alone")
    )


def _header(*statements: CoqStatement) -> str:
    seen: list[str] = []
    for s in statements:
        for line in s.header.splitlines(keepends=True):
            if line not in seen:
                seen.append(line)
    return "".join(seen)


class CoqBeq:
    """Tier-1 BEq over a Coq backend (real coqc): one coqc run per pair."""

    def __init__(self, backend: CoqBackend | None = None, timeout: float = 120.0) -> None:
        self.backend = backend or CoqBackend(timeout=timeout)
        self.timeout = timeout

    def compare(self, reference: str, candidate: str) -> BeqResult:
        return self.compare_many([(reference, candidate)])[0]

    def compare_many(self, pairs: list[tuple[str, str]]) -> list[BeqResult]:
        """BEq of each (reference, candidate): pairs sharing one header go through one coqc
        run; a pair whose statements do not type-check is run again alone to tell which."""
        parsed = [
            (parse_statement(r, "reference"), parse_statement(c, "candidate")) for r, c in pairs
        ]
        results: list[BeqResult | None] = [None] * len(pairs)
        groups: dict[str, list[int]] = {}
        for i, (p, q) in enumerate(parsed):
            groups.setdefault(_header(p, q), []).append(i)
        for header, members in groups.items():
            said, stderr, seconds = self._run(header, [(i, *parsed[i]) for i in members])
            for i in members:
                if f"{i}_reference_alone" not in said and len(members) > 1:
                    said_i, stderr_i, secs_i = self._run(header, [(i, *parsed[i])])
                    results[i] = _result(i, said_i, stderr_i, secs_i)
                else:
                    results[i] = _result(i, said, stderr, seconds / len(members))
        return [r for r in results if r is not None]

    def _run(
        self, header: str, items: list[tuple[int, CoqStatement, CoqStatement]]
    ) -> tuple[dict[str, str], str, float]:
        script = BASE_HEADER + header + "".join(pair_script(i, p, q) for i, p, q in items)
        t0 = time.perf_counter()
        # the backend's process runner (limits, scrubbed env, throw-away dir); its stdout
        # carries the markers, which a CheckResult does not keep
        outcome = self.backend.run(script, self.timeout * len(items))
        said = {f"{i}_{k}": v for i, k, v in _SAID.findall(outcome.stdout)}
        return said, outcome.stderr, time.perf_counter() - t0


def _result(i: int, said: dict[str, str], stderr: str, seconds: float) -> BeqResult:
    if said.get(f"{i}_reference") != "yes":
        raise InputError("reference: Coq does not accept the statement: " + _first_error(stderr))
    if said.get(f"{i}_candidate") != "yes":
        off = Direction(False, False, _first_error(stderr), seconds)
        return BeqResult(off, off, compiled=False)
    if f"{i}_reference_alone" not in said:
        raise InputError("coqc stopped before the end of the BEq checks: " + _first_error(stderr))
    forward = Direction(
        said[f"{i}_forward"] == "yes", said[f"{i}_candidate_alone"] == "yes", seconds=seconds
    )
    backward = Direction(
        said[f"{i}_backward"] == "yes", said[f"{i}_reference_alone"] == "yes", seconds=seconds
    )
    return BeqResult(forward, backward, compiled=True)


def _first_error(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    found = next((i for i, ln in enumerate(lines) if ln.startswith("Error")), None)
    if found is None:
        return lines[-1][:200] if lines else "no output"
    return " ".join(lines[found : found + 2])[:200]
