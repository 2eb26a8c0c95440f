"""Known soundness bugs of Coq/Rocq kernels that a verdict may be exposed to (data, no I/O).

Why: a strict verifier is only as sound as the kernel it runs on. Rocq keeps a list of its
critical bugs (`dev/doc/critical-bugs.md` in rocq-prover/rocq); the ones below prove `False`
with no axiom on some release a user may run, and each has a test here of our own writing
(`tests/kernel_bugs/`). A verdict records the ids of the bugs its Coq has not fixed
(`known_unsound`), so a user sees them before trusting a pass, and the docs show the table
(docs/decisions.md, "The coqchk replay and known kernel bugs").

`replay` says what `coqchk` of the same release does: `caught` (it refuses the library: coqchk
has no VM, so a proof resting on a VM bug fails there), `missed` (coqchk shares the kernel
code and accepts it), `partial` (our instance is caught, but upstream reports a variant that
coqchk accepts). A bug not `caught` on an affected version may be what a pass rests on. `reproduced` lists the versions our instance was run on
and proved `False` there (empty: the bug is listed from the upstream entry only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

UPSTREAM = "https://github.com/rocq-prover/rocq/blob/master/dev/doc/critical-bugs.md"
_ISSUES = "https://github.com/rocq-prover/rocq/issues/"


@dataclass(frozen=True)
class KernelBug:
    """One upstream critical bug: versions are inclusive `(major, minor, patch)` bounds."""

    id: str  # the upstream issue number, `rocq#NNNNN`
    title: str
    first: tuple[int, int, int]  # first affected release
    fixed: tuple[int, int, int] | None  # first release with the fix (None: not fixed)
    replay: str  # "caught" | "missed" | "partial": what coqchk of an affected release does
    test: str  # our instance, under tests/kernel_bugs/
    reproduced: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()  # more instances of ours, other shapes of the same bug

    @property
    def tests(self) -> tuple[str, ...]:
        return (self.test, *self.variants)

    @property
    def source(self) -> str:
        return _ISSUES + self.id.split("#", 1)[1]


KNOWN_BUGS: tuple[KernelBug, ...] = (
    KernelBug(
        "rocq#20413",
        "guard checker forgot to check non-structural arguments of a fixpoint",
        (8, 16, 0), (9, 0, 1), "missed", "guard_nonstructural", ("8.16.1", "8.20.1"),
    ),
    KernelBug(
        "rocq#20455",
        "guard checker takes a match on a match for a subterm",
        (8, 16, 0), (9, 0, 1), "missed", "guard_match_on_match", ("8.16.1", "8.20.1"),
    ),
    KernelBug(
        "rocq#21839",
        "guard checker reduces in the wrong context (`ltac:(fix ...)` inside a term)",
        (8, 16, 0), (9, 3, 0), "missed", "guard_ltac_fix", ("8.16.1", "8.20.1", "9.2.0"),
    ),
    KernelBug(
        "rocq#19402",
        "bytecode VM computes Uint63 addmuldiv wrongly for large shifts",
        (8, 10, 0), (8, 20, 0), "caught", "vm_addmuldiv", ("8.16.1",), ("vm_addmuldiv_64",),
    ),
    KernelBug(
        "rocq#16957",
        "VM value cache of a section variable mutated by change_no_check",
        (8, 1, 0), (8, 17, 0), "caught", "vm_section_let_cache", ("8.16.1",),
        ("vm_section_let_cache_nat",),
    ),
    KernelBug(
        "rocq#18503",
        "a Primitive field of a module type is implemented by anything",
        (8, 11, 0), (8, 19, 0), "partial", "module_primitive_field", ("8.16.1",),
    ),
    KernelBug(
        "rocq#21051",
        "missing substitution when a functor is strengthened (Include of a functor)",
        (8, 5, 0), (9, 0, 1), "missed", "module_functor_strengthening", ("8.16.1", "8.20.1"),
    ),
    KernelBug(
        "rocq#22387",
        "module subtyping ignores the order of let-ins in constructor types",
        (8, 14, 0), (9, 2, 1), "partial", "module_letin_constructor", ("8.16.1", "8.20.1", "9.2.0"),
    ),
    KernelBug(
        "rocq#22378",
        "conversion under a constructor's let-ins in SProp is done in the wrong context",
        (8, 14, 0), (9, 2, 1), "missed", "conversion_sprop_letin", ("8.16.1", "8.20.1", "9.2.0"),
    ),
)  # fmt: skip

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: str) -> tuple[int, int, int] | None:
    """The first `X.Y[.Z]` in `text` ("coq 8.16.1 amber-..", "9.2.0", "8.20+rc1")."""
    found = _VERSION.search(text)
    if found is None:
        return None
    major, minor, patch = found.groups()
    return int(major), int(minor), int(patch or 0)


def affects(bug: KernelBug, version: tuple[int, int, int]) -> bool:
    """Whether `version` is in the bug's affected range."""
    return bug.first <= version and (bug.fixed is None or version < bug.fixed)


def known_unsound(version: str) -> list[str]:
    """The ids of the listed bugs a Coq/Rocq of this version has not fixed (pure: a version
    string in, ids out; an unreadable version gives every bug, never an empty list)."""
    parsed = parse_version(version)
    if parsed is None:
        return [bug.id for bug in KNOWN_BUGS]
    return [bug.id for bug in KNOWN_BUGS if affects(bug, parsed)]


def bug(bug_id: str) -> KernelBug:
    """The entry of one id (KeyError when it is not listed)."""
    for entry in KNOWN_BUGS:
        if entry.id == bug_id:
            return entry
    raise KeyError(bug_id)


def unguarded(version: str) -> list[str]:
    """The unfixed bugs of `version` that the coqchk replay does not catch either: what a
    pass on this version may still rest on."""
    return [b for b in known_unsound(version) if bug(b).replay != "caught"]


def known_bugs_line(ids: list[str]) -> str:
    """One line for a verdict's reader: the listed kernel bugs its Coq has not fixed, and
    which of them the coqchk replay does not catch either."""
    replay = {b.id: b.replay for b in KNOWN_BUGS}  # an id of an older table: not caught
    missed = [i for i in ids if replay.get(i) != "caught"]
    line = f"known kernel bugs of this Coq (not fixed): {', '.join(ids)}"
    if missed:
        line += f"; not caught by the coqchk replay: {', '.join(missed)}"
    return line + " (docs/decisions.md, known kernel bugs)"


def _version_text(version: tuple[int, int, int] | None) -> str:
    return "not fixed" if version is None else ".".join(map(str, version))


_REPLAY_WORDS = {"caught": "yes", "missed": "no", "partial": "our instance yes; a variant no"}


def markdown_table() -> str:
    """The docs' table (bug, versions affected, fixed in, caught by the replay)."""
    rows = [
        "| bug | title | affected | fixed in | our instance proves False on | caught by the "
        "coqchk replay |",
        "|---|---|---|---|---|---|",
    ]
    for b in KNOWN_BUGS:
        affected = f"{_version_text(b.first)} – before {_version_text(b.fixed)}"
        rows.append(
            f"| [{b.id}]({b.source}) | {b.title} | {affected} | {_version_text(b.fixed)} "
            f"| {', '.join(b.reproduced) or '–'} | {_REPLAY_WORDS[b.replay]} |"
        )
    return "\n".join(rows) + "\n"
