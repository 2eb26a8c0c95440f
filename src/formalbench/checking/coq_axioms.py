"""Which assumptions a Coq target may rest on: an explicit allow-list, nothing else.

One pure function, `axiom_findings`, decides on a target's assumptions as the kernel dump
gives them (`kdump-format.md`: each assumption by the kernel's own constructor, `from_dump`);
the comparison route calls it once per target (`coq_compare`).

A target may rest on
- an axiom of the task itself (`postulates`: the original's `Parameter`s/`Axiom`s, its
  top-level `Variable`s such as PutnamBench-Coq's `Variable R : realType`, its admitted
  non-target lemmas), by fully qualified name. The name set is checked here; that the
  candidate's postulate states what the original's does is the kernel comparison's part
  (both sides' postulates are compared there), so a postulate must never reach this
  function unpinned;
- an axiom on the allow-list (`allowed`): fully qualified names, from the presets verified
  against the running Coq (`coq_presets`), `--allow-axiom`, the task's `allowed_axioms`.

Everything else is refused and named (`Reason.disallowed_axiom`, the full name and the
target): an axiom of any library that is not listed (`Coq.Compat.AdmitAxiom.proof_admitted`,
an `Admitted` lemma of a `--coq-project` library or of an installed one, which the kernel
keeps as an axiom of that library), a target of the task the candidate left unproved
(`holes`), a section variable, and every switched-off kernel check (guard, positivity,
universes, definitional UIP), which no list can allow: they are not axioms but holes in
what the kernel checked. A name of the checked libraries themselves (`CHECKED_LIBRARIES`)
is never taken from the allow-list: what `Candidate.x` states is the candidate's to choose,
so it passes only as one of the task's pinned postulates.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from formalbench.core.records import Finding, Reason

AssumptionKind = Literal["variable", "axiom", "positive", "guarded", "type_in_type", "uip"]
KINDS: frozenset[str] = frozenset(
    ("variable", "axiom", "positive", "guarded", "type_in_type", "uip")
)
# The library names the verifier gives the files it compiles (`Candidate`; `Original` and
# `FbContext`, names an earlier route used, stay reserved so no old run folder's name passes): never reachable by an allow-list.
CHECKED_LIBRARIES: frozenset[str] = frozenset(("Candidate", "Original", "FbContext"))

# What each switched-off check is called in a finding.
_BYPASS = {
    "guarded": "is assumed to be guarded (its guard check was switched off)",
    "positive": "is assumed to be positive (its positivity check was switched off)",
    "type_in_type": "relies on an unsafe universe hierarchy (universe checking switched off)",
    "uip": "relies on definitional UIP (switched on for it)",
}


@dataclass(frozen=True)
class Assumption:
    """One assumption of a target, as the kernel classifies it: `name` fully qualified
    (a section variable: its short name); `type` the dump's term where known (unused here:
    the kernel comparison pins the task's postulates)."""

    kind: AssumptionKind
    name: str
    type: Any = None


class BadAssumption(ValueError):
    """A dump's assumption entry outside the format: refused, never skipped."""


def from_dump(entries: Sequence[Mapping[str, Any]]) -> list[Assumption]:
    """A target's `assumptions` list of a kernel dump (`kdump-format.md`) as records.
    An unknown kind or field, or a missing name, raises `BadAssumption`: an entry that
    cannot be read could hide an axiom."""
    found: list[Assumption] = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            raise BadAssumption(f"an assumption is not an object: {entry!r}"[:200])
        kind, name = entry.get("kind"), entry.get("name")
        if kind not in KINDS or not isinstance(name, str) or not name:
            raise BadAssumption(f"an assumption of unknown kind or without a name: {entry!r}"[:200])
        unknown = set(entry) - {"kind", "name", "type"}
        if unknown:
            raise BadAssumption(f"an assumption with unknown fields {sorted(unknown)}"[:200])
        found.append(Assumption(kind, name, entry.get("type")))
    return found


def axiom_findings(
    targets: Mapping[str, Sequence[Assumption]],
    postulates: Collection[str],
    allowed: Collection[str],
    holes: Collection[str] = (),
) -> list[Finding]:
    """The refused assumptions of each target (target name -> its assumptions), one
    finding each, naming the assumption fully qualified and the target.

    `postulates`: the task's own axioms by full name (their statements pinned by the
    kernel comparison); `allowed`: the allow-list (full names); `holes`: the full names of
    the task's targets, refused even where listed (a target left unproved is no axiom of
    the task)."""
    own = set(postulates) - set(holes)
    listed = {n for n in allowed if n.split(".", 1)[0] not in CHECKED_LIBRARIES} - set(holes)
    findings: list[Finding] = []
    for target, assumptions in targets.items():
        for a in assumptions:
            why = _refused(a, own, listed, holes)
            if why is not None:
                findings.append(
                    Finding(
                        reason=Reason.disallowed_axiom,
                        subject=a.name,
                        message=f"`{target}` {why}"[:500],
                    )
                )
    return findings


def _refused(a: Assumption, own: set[str], listed: set[str], holes: Collection[str]) -> str | None:
    """Why the assumption is refused, or None where it is allowed."""
    if a.kind == "variable":
        return f"depends on the section variable `{a.name}`, which no verdict can allow"
    if a.kind != "axiom":
        return f"depends on `{a.name}`, which {_BYPASS[a.kind]}"
    if a.name in own or a.name in listed:
        return None
    if a.name in holes:
        return f"depends on the axiom `{a.name}`: a target of the task left unproved"
    return (
        f"depends on the axiom `{a.name}`, which is neither the task's own nor on the "
        f"allow-list (--allow-axiom {a.name} allows it)"
    )


def listed_axioms(targets: Mapping[str, Sequence[Assumption]]) -> dict[str, list[str]]:
    """Each target's assumptions as the verdict lists them: full names, in order."""
    return {t: [a.name for a in assumptions] for t, assumptions in targets.items()}
