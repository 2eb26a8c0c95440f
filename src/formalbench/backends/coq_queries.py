"""The commands the backend appends after a source, and how their output is read back.

For every target the backend asks `Print Assumptions <target>.`; Coq 8.16 prints each
assumption by its *shortest* name in the file's final context (`classic`, `adm`,
`Classical_Prop.classic`, `M.inner`), which does not say whether it is local or where it
lives. `Locate <basename>.` run at the same point lists every object with that basename by
its fully qualified path, each with its shortest name there (the query itself, or the
"shorter name ... is X" note), so matching the shortest name printed by `Print
Assumptions` gives the qualified path, e.g. `Candidate.adm` or
`Coq.Logic.Classical_Prop.classic`.

Each query is bracketed by `Locate fb_<nonce>_q<i>.`, which prints `No object of basename
fb_<nonce>_q<i>`: a marker the checked text cannot forge because the nonce is fresh per run.
`Fail Show.` comes first: it fails exactly when the source ends inside an open proof, which
coqc itself would only report after our queries (and not at all if one of them failed).
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field

from formalbench.backends.coq_output import is_time_line
from formalbench.core.records import Diagnostic, Severity

# Axioms of the Coq standard library, Located up front so that the usual cases
# (classical logic, the axioms behind Reals) need a single run of coqc.
LIBRARY_AXIOMS: tuple[str, ...] = (
    "classic",
    "functional_extensionality_dep",
    "sig_forall_dec",
    "sig_not_dec",
    "proof_irrelevance",
    "propositional_extensionality",
    "constructive_indefinite_description",
    "constructive_definite_description",
    "epsilon_statement",
    "relational_choice",
    "eq_rect_eq",
    "extensional_function_representative",
    "Extensionality_Ensembles",
    "proof_admitted",
)

LOCAL_MODULE = "Candidate"  # the module name coqc gives the checked file, Candidate.v

_HEADER = re.compile(r"^[A-Z][A-Za-z /()-]*:$")
_CLOSED = "Closed under the global context"
_SHORTER = re.compile(r"\(shorter name to refer to it in current context is (\S+)\)")
_ENTRY = re.compile(r"^(?P<kind>Module Type|Section Variable|\S+) (?P<path>[^\s()]+)")
_NOT_TERMS = frozenset({"Notation", "Ltac", "Ltac2", "Module", "Module Type", "Abbreviation"})


@dataclass(frozen=True)
class Query:
    kind: str  # "assumptions" (subject: a target) or "locate" (subject: a basename)
    subject: str

    @property
    def command(self) -> str:
        verb = "Print Assumptions" if self.kind == "assumptions" else "Locate"
        return f"{verb} {self.subject}."


@dataclass
class QueryScript:
    """The text appended to a source and where each of its commands sits in the file."""

    queries: list[Query]
    first_line: int  # 1-based line of the file on which the appended text starts
    nonce: str = field(default_factory=lambda: secrets.token_hex(6))
    text: str = ""
    guard_line: int = 0  # the line of `Fail Show.`
    query_lines: dict[int, int] = field(default_factory=dict)  # file line -> query index

    def __post_init__(self) -> None:
        lines = ["", "Fail Show.", "Set Printing Width 1000.", self._marker("begin")]
        self.guard_line = self.first_line + 1
        for index, query in enumerate(self.queries):
            lines.append(self._marker(f"q{index}"))
            self.query_lines[self.first_line + len(lines)] = index
            lines.append(query.command)
        lines.append(self._marker("end"))
        self.text = "\n".join(lines) + "\n"

    def _marker(self, label: str) -> str:
        return f"Locate fb_{self.nonce}_{label}."

    def _seen(self, label: str) -> str:
        return f"No object of basename fb_{self.nonce}_{label}"

    def split(self, stdout: str) -> tuple[bool, dict[int, list[str]]]:
        """Whether the queries began, and the output lines of each query that finished."""
        lines = [line for line in stdout.splitlines() if not is_time_line(line)]
        begin = self._seen("begin")
        if begin not in lines:
            return False, {}
        lines = lines[lines.index(begin) + 1 :]
        marks = {self._seen(f"q{i}"): i for i in range(len(self.queries))}
        marks[self._seen("end")] = len(self.queries)
        outputs: dict[int, list[str]] = {}
        current: int | None = None
        buffer: list[str] = []
        for line in lines:
            if line in marks:
                if current is not None:
                    outputs[current] = buffer
                current, buffer = marks[line], []
                if current == len(self.queries):
                    break
            elif current is not None:
                buffer.append(line)
        return True, outputs


# A Coq qualified identifier as printed: dot-separated identifiers, each a letter or `_`
# then letters, digits, `_` and `'` (Unicode letters included, Unicode blanks never).
QUALID = r"[^\W\d][\w']*(?:\.[^\W\d][\w']*)*"
_ENTRY_LINE = re.compile(
    rf"^(?P<name>{QUALID})(?: :(?: .*)?| is assumed to be (?:guarded|positive)\."
    r"| relies on an unsafe hierarchy\.)$"
)
_ALONE = re.compile(rf"^(?P<name>{QUALID})$")
_AXIOMS_HEADER = "Axioms:"


class UnreadableOutput(ValueError):
    """What coqc printed for a query does not follow the grammar expected of it."""


def read_assumptions(lines: list[str]) -> list[str]:
    """The names `Print Assumptions` listed, read with a strict grammar; [] when closed.

    The output is either the single line `Closed under the global context`, or the header
    `Axioms:` followed by entries `qualid : type` (the name at column 0, then ` :`), whose
    type may go on over lines that begin with a blank (a long one: the name alone, then
    the ` : type` on the next, indented line), or `qualid is assumed to be
    guarded.` / `... positive.` / `qualid relies on an unsafe hierarchy.` (a kernel check
    switched off for it: an assumption like any other). Every other header (`Section
    Variables:`, the lists of constants relying on switched-off kernel checks) and every
    line that fits none of these raises `UnreadableOutput`: a line that cannot be read is
    never skipped, since it could hide an assumption."""
    body = [line for line in lines if line.strip()]
    if body == [_CLOSED]:
        return []
    if not body or body[0] != _AXIOMS_HEADER:
        first = body[0] if body else "(nothing)"
        raise UnreadableOutput(
            f"`Print Assumptions` printed {first[:120]!r} where `Axioms:` is due"
        )
    names: list[str] = []
    rest = body[1:]
    for at, line in enumerate(rest):
        if line[0].isspace() and names:
            continue  # the type of the entry above, continued
        entry = _ENTRY_LINE.match(line)
        after = rest[at + 1] if at + 1 < len(rest) else ""
        if entry is None and re.fullmatch(r"\s+:(?: .*)?", after):
            entry = _ALONE.match(line)  # a long entry: its name, then ` : type` below
        if entry is None:
            raise UnreadableOutput(f"`Print Assumptions` printed an unreadable line {line[:120]!r}")
        if entry["name"] not in names:
            names.append(entry["name"])
    return names


def parse_assumptions(lines: list[str]) -> list[str]:
    """`read_assumptions` for the backend's own queries: an unreadable answer is reported
    as an assumption nobody can resolve, so the check fails instead of passing unseen."""
    try:
        return read_assumptions(lines)
    except UnreadableOutput as problem:
        return [f"<unreadable: {problem}>"]


@dataclass(frozen=True)
class Located:
    kind: str  # Constant, Inductive, Constructor, Notation, ...
    path: str  # fully qualified
    shortest: str  # how the object is printed at that point of the file


def parse_locate(lines: list[str], query: str) -> list[Located]:
    """The objects `Locate <query>.` listed.

    Each starts at column 0 as `<Kind> <full.path>`, optionally followed (on the same line or
    on indented ones, depending on the printing width) by `(shorter name to refer to it in
    current context is X)` and `(alias of Y)`.
    """
    found: list[Located] = []
    for line in lines:
        if not line.strip() or line.startswith("No object"):
            continue
        entry = None if line[0].isspace() else _ENTRY.match(line)
        if entry:
            found.append(Located(entry["kind"], entry["path"], query))
        note = _SHORTER.search(line)
        if note and found:
            last = found[-1]
            found[-1] = Located(last.kind, last.path, note.group(1))
    return found


def resolve(printed: str, located: list[Located]) -> str | None:
    """The qualified path of the term printed as `printed`, from its basename's Locate."""
    matches = [o for o in located if o.shortest == printed and o.kind not in _NOT_TERMS]
    matches.sort(key=lambda o: o.kind != "Constant")
    return matches[0].path if matches else None


def basename(name: str) -> str:
    return name.rsplit(".", 1)[-1]


@dataclass
class Pending:
    """What the queries of one check still owe across runs of coqc, and what they answered."""

    targets: list[str]
    names: list[str]
    late: set[str] = field(default_factory=set)  # targets the source text never mentions
    axioms: dict[str, list[str]] = field(default_factory=dict)  # target -> printed names
    located: dict[str, list[Located]] = field(default_factory=dict)  # basename -> objects
    failed: list[Diagnostic] = field(default_factory=list)  # one per missing target
    missing: set[str] = field(default_factory=set)

    def queries(self) -> list[Query]:
        """Targets the text names, then Locates, then the others: a missing target stops
        coqc, and the ones the text never mentions are the likely missing ones."""
        first = [Query("assumptions", t) for t in self.targets if t not in self.late]
        last = [Query("assumptions", t) for t in self.targets if t in self.late]
        return first + [Query("locate", n) for n in self.names] + last

    def answer(self, queries: list[Query], outputs: dict[int, list[str]]) -> None:
        """Record the queries that ran to their end; ask next for the names still unknown."""
        for index, query in enumerate(queries):
            if index not in outputs:
                continue
            if query.kind == "assumptions":
                self.axioms[query.subject] = parse_assumptions(outputs[index])
                self.targets.remove(query.subject)
            else:
                self.located[query.subject] = parse_locate(outputs[index], query.subject)
                self.names.remove(query.subject)
        wanted = {basename(p) for names in self.axioms.values() for p in names}
        self.names = sorted(set(self.names) | (wanted - set(self.located)))

    def fail(self, query: Query, message: str) -> None:
        """A query coqc refused: a target that does not exist, or a name it cannot Locate."""
        if query.kind == "assumptions":
            self.targets.remove(query.subject)
            self.missing.add(query.subject)
            self.failed.append(
                Diagnostic(
                    severity=Severity.error,
                    message=f"target `{query.subject}` not found: {message}",
                    kind="missing_target",
                )
            )
        else:
            self.names.remove(query.subject)
            self.located[query.subject] = []

    def qualified(self, targets: list[str]) -> tuple[dict[str, list[str]], list[Diagnostic]]:
        """Each answered target's axioms by qualified path, and errors for what is unknown:
        an assumption that cannot be resolved fails the check rather than pass unseen."""
        axioms: dict[str, list[str]] = {}
        problems: list[Diagnostic] = []
        for target in targets:
            if target not in self.axioms:
                if target not in self.missing:
                    problems.append(_error(f"could not read the assumptions of `{target}`"))
                continue
            problem = self._denotes_own(target)
            if problem:
                problems.append(problem)
            axioms[target] = []
            for printed in self.axioms[target]:
                path = resolve(printed, self.located.get(basename(printed), []))
                if path is None:
                    problems.append(_error(f"could not resolve `{printed}`, used by `{target}`"))
                axioms[target].append(path or printed)
        return axioms, problems

    def _denotes_own(self, target: str) -> Diagnostic | None:
        """An error unless `target` names the file's own `Candidate.<target>`: a candidate must
        not satisfy the check with another object of that name (e.g. an imported module's)."""
        located = [o for o in self.located.get(basename(target), []) if o.kind not in _NOT_TERMS]
        exact = [o.path for o in located if o.shortest == target]
        suffix = [o.path for o in located if o.path.endswith("." + target)]
        paths = exact or (suffix if len(suffix) == 1 else [])
        own = f"{LOCAL_MODULE}.{target}"
        if paths and paths[0] == own:
            return None
        meaning = f"`{paths[0]}`" if paths else "an object coqc could not locate"
        return Diagnostic(
            severity=Severity.error,
            message=f"target `{target}` denotes {meaning}, not the file's own `{own}`",
            kind="missing_target",
        )


def _error(message: str) -> Diagnostic:
    return Diagnostic(severity=Severity.error, message=message)
