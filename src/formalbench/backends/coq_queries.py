"""The queries appended to files of ours, and how their output is read back.

The files are ours, never the candidate's: the query files of `library_assumptions`
(`coq_assumptions`) and APE (`pipelines/ape/completeness.py`) only `Require` the
compiled candidate, so nothing of its scope (notations, abbreviations, `Import`s) is active
where the queries run. `Print Assumptions` prints each assumption by its shortest name in
that file's context (`classic`, `Candidate.adm`, `Classical_Prop.classic`), which does not say
where it lives; `Locate <basename>.` run at the same point lists every object with that
basename by its fully qualified path, each with its shortest name there (the query itself,
or the "shorter name ... is X" note), so matching the shortest name printed by `Print
Assumptions` gives the qualified path, e.g. `Coq.Logic.Classical_Prop.classic`.

Each query is bracketed by `Locate fb_<nonce>_q<i>.`, which prints `No object of basename
fb_<nonce>_q<i>`: a marker no required library can forge because the nonce is fresh per run.
`Fail Show.` comes first: it fails exactly when the text ends inside an open proof.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field

from formalbench.backends.coq_output import is_time_line

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
    # the command that prints assumptions: Coq's, or the memoizing plugin's in a session
    # (`coq_assumptions_plugin`), whose answer is the same
    assumptions_verb: str = "Print Assumptions"

    @property
    def command(self) -> str:
        verb = self.assumptions_verb if self.kind == "assumptions" else "Locate"
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
    rf"^(?P<name>{QUALID})(?: :(?: .*)?| is assumed to be (?P<assumed>guarded|positive)\."
    r"| relies on (?P<relies>an unsafe hierarchy|definitional UIP)\.)$"
)
# the kind (`checking.coq_axioms.Assumption`) of an entry that is a switched-off check
_RELIES = {"an unsafe hierarchy": "type_in_type", "definitional UIP": "uip"}
_ALONE = re.compile(rf"^(?P<name>{QUALID})$")
_USED_IN = re.compile(rf"used in {QUALID} to prove:?")
_AXIOMS_HEADER = "Axioms:"


class UnreadableOutput(ValueError):
    """What coqc printed for a query does not follow the grammar expected of it."""


def read_assumptions(lines: list[str]) -> list[str]:
    """The names `Print Assumptions` listed (`read_assumption_entries`)."""
    return list(read_assumption_entries(lines))


def read_assumption_entries(lines: list[str]) -> dict[str, str]:
    """The names `Print Assumptions` listed, in order, each with its kind (`axiom`, or the
    check switched off for it: `guarded`, `positive`, `type_in_type`, `uip`), read with
    a strict grammar; {} when closed.

    The output is either the single line `Closed under the global context`, or the header
    `Axioms:` followed by entries `qualid : type` (the name at column 0, then ` :`), whose
    type may go on over lines that begin with a blank (a long one: the name alone, then
    the ` : type` on the next, indented line), or `qualid is assumed to be
    guarded.` / `... positive.` / `qualid relies on an unsafe hierarchy.` / `... relies on
    definitional UIP.` (a kernel check switched off for it). An entry used inside a module
    sealed by its signature is followed by `used in qualid to prove` and the proved type
    (indented), which belong to it. Every other header (`Section
    Variables:`, the lists of constants relying on switched-off kernel checks) and every
    line that fits none of these raises `UnreadableOutput`: a line that cannot be read is
    never skipped, since it could hide an assumption."""
    body = [line for line in lines if line.strip()]
    if body == [_CLOSED]:
        return {}
    if not body or body[0] != _AXIOMS_HEADER:
        first = body[0] if body else "(nothing)"
        raise UnreadableOutput(
            f"`Print Assumptions` printed {first[:120]!r} where `Axioms:` is due"
        )
    names: dict[str, str] = {}
    rest = body[1:]
    for at, line in enumerate(rest):
        if line[0].isspace() and names:
            continue  # the type of the entry above, continued
        if names and _USED_IN.fullmatch(line):
            continue  # where the entry above is used inside a sealed module (type below)
        entry = _ENTRY_LINE.match(line)
        after = rest[at + 1] if at + 1 < len(rest) else ""
        if entry is None and re.fullmatch(r"\s+:(?: .*)?", after):
            entry = _ALONE.match(line)  # a long entry: its name, then ` : type` below
        if entry is None:
            raise UnreadableOutput(f"`Print Assumptions` printed an unreadable line {line[:120]!r}")
        assumed, relies = entry.groupdict().get("assumed"), entry.groupdict().get("relies")
        kind = assumed or (_RELIES[relies] if relies else "axiom")
        names.setdefault(entry["name"], kind)
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
