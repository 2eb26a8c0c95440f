"""The Coq verdict on "same statement, same context", asked of the kernel (`backends.coq_identity`).

The text layer compares token streams; it can be misled by what it does not model (a
`Time`-prefixed command, a proof closed by `Proof term.`, a `where` notation, what a
`Require Import` brings in, a character Python reads as a space and Coq does not ...). Here
the kernel decides: each target of the candidate must have the original's elaborated type.

What must be shared rather than compared: constants that conversion cannot identify across
two files. A task's `Parameter`/`Axiom`/`Conjecture` (anywhere), a `Variable`/`Hypothesis`/
`Context` outside a section (a global assumption), an `Inductive`/`CoInductive`/`Variant`/
`Record`/`Structure`/`Class`, an `Instance`, `Declare Module`: `Original.color` and
`Candidate.color` are different inductives. When the original has such a declaration before
its first target, its text up to the end of the last one (closed at top level) is the
*context*: the candidate must contain exactly that text (commands it adds before it, such as
a `Require`, stay before it), and both sides are compiled on
top of it as one library. A context that ends inside a section or module still open at the
first target cannot be cut out (`context_of` raises `Unsplittable`): both sides are then
compiled whole, the original's inductives renamed side to side (`plans`), and a mismatch is
`undecided`, never left to a text rule.

Axioms are read in the identity file too (`axiom_findings`), by full path: one source of
truth for "same statement" and "rests on no disallowed axiom".
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence

from formalbench.backends.base import Backend
from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_identity import (
    CONTEXT_MODULE,
    ORIGINAL_MODULE,
    RESERVED,
    CoqIdentity,
    IdentityReport,
    Instance,
    TargetPlan,
    instance_sides,
    is_argument,
)
from formalbench.backends.coq_queries import LOCAL_MODULE
from formalbench.checking.coq_functors import Undecided, header_name, instance_of, resolved
from formalbench.checking.decls import COQ_CLOSERS, Decl
from formalbench.checking.holes import hole_decls
from formalbench.checking.shadowing import introduced_names
from formalbench.core.config import VerifierPolicy
from formalbench.core.lexer import words
from formalbench.core.records import CheckResult, Finding, Language, Reason

_ALWAYS_NEW = words(
    "Parameter Parameters Axiom Axioms Conjecture Inductive CoInductive Variant Record Structure Class Instance Declare"
)
_GLOBAL_OUTSIDE_SECTIONS = words("Variable Variables Hypothesis Hypotheses Context")
# Commands of the context that `Require Import FbContext` does not carry into the rest (an
# `Import` is not re-exported, a `Local Open Scope` ends with the file): they are run again,
# as the original has them, at the top of both split files.
_UNFOLDING = words("Definition Fixpoint CoFixpoint Function")
_NOMINAL = words("Inductive CoInductive Variant")
_RECORDS = words("Record Structure Class")
_ELIMINATORS = ("_ind", "_rect", "_rec", "_sind")


def _eliminator(name: str) -> bool:
    return name.endswith(_ELIMINATORS)


_POSTULATES = words("Axiom Axioms Parameter Parameters Conjecture")
# (`Generalizable Variables A` and `Implicit Types` end with the file too: SetoidClass.v)
_REPLAYED = words(
    "Require From Import Export Open Close Set Unset Delimit Bind Generalizable Implicit"
)


class Unsplittable(Exception):
    """The original's shared context ends inside a section or module open at a target."""


class SplitBroken(Unsplittable):
    """The context could be cut, but a side does not compile on top of it as a library."""


def context_of(original: str) -> tuple[str, str] | None:
    """The original's text that both sides must share and the commands of it to replay
    (None: none is needed); raises `Unsplittable` when that text cannot be cut at top
    level before the first target."""
    decls, holes = hole_decls(original, Language.coq)
    scopes: list[str] = []
    pending = False
    cut: int | None = None
    replay: list[str] = []
    for d in decls:
        if d.index in holes:
            if pending:
                raise Unsplittable(d.name or "")
            break
        kind = d.kind
        if kind in _REPLAYED and not scopes:
            replay.append(original[d.start : d.end])
        in_section = "Section" in scopes
        # inside a functor or module type a declaration is a field of each side's instance,
        # never shared (no cut can fall there): compared on the instances instead
        fresh = kind in _ALWAYS_NEW or (kind in _GLOBAL_OUTSIDE_SECTIONS and not in_section)
        if fresh and "Functor" not in scopes:
            pending = True
        if _opens(d):
            scopes.append(_scope_kind(d))
        elif kind == "End" and scopes:
            scopes.pop()
        if pending and not scopes:
            cut, pending, kept = d.end, False, len(replay)
    if cut is None:
        return None
    return original[:cut], "".join(r + "\n" for r in replay[:kept])


def wide_context(original: str) -> tuple[str, str] | None:
    """The original's whole text before its first target, as `context_of` gives a context
    (with the commands to replay), or None when that target is inside a section or module."""
    decls, holes = hole_decls(original, Language.coq)
    scopes = 0
    replay: list[str] = []
    end: int | None = None
    for d in decls:
        if d.index in holes:
            if scopes or end is None:
                return None
            return original[:end], "".join(r + "\n" for r in replay)
        if d.kind in _REPLAYED and not scopes:
            replay.append(original[d.start : d.end])
        if _opens(d):
            scopes += 1
        elif d.kind == "End" and scopes:
            scopes -= 1
        end = d.end
    return None


def plans(original: str, unshared: bool = False) -> list[TargetPlan]:
    """How each target of the original is compared in the identity file (see
    `backends.coq_identity`): inside a section or not, and the value holes before it.

    `unshared` (the task's inductives could not be compiled apart, `Unsplittable`): each
    `Inductive`/`Variant`/`CoInductive` of the original before a target is renamed too, with
    its constructors (`Original.I` -> `Candidate.I` in later types), and its `I_ind` is
    compared like a target: the recursor's type lists every constructor with its type, in
    order, so equal recursors (after the renaming) mean the same inductive up to its name.
    Definitions after such a declaration are compared by their bodies, as after a value."""
    decls, holes = hole_decls(original, Language.coq)
    scopes: list[str] = []
    modules: list[str] = []  # the modules open around each declaration
    # the functor or module type each scope opens (a string: why its header is not read)
    instances: list[Instance | str | None] = []
    values: list[str] = []
    fields: dict[Instance, list[str]] = {}  # a module type's own postulates
    out: list[TargetPlan] = []
    last = max((i for i in holes if decls[i].name), default=-1)
    for d in decls[: last + 1]:  # what comes after the last target cannot matter to it
        if d.index in holes and d.name:
            instance = _instance_around(d.name, scopes, instances)
            in_section = "Section" in scopes
            out.append(TargetPlan(d.name, in_section, tuple(values), instance=instance))
            if d.kind != "Theorem":
                if in_section or instance is not None:
                    where = "a section" if in_section else "a functor or module type"
                    raise Undecided(
                        f"the value hole `{d.name}` is inside {where}, where the original's "
                        "admitted value and the candidate's are not the same constant; "
                        "statements about it cannot be compared"
                    )
                values.append(d.name)
        elif values and d.name and d.kind in _UNFOLDING and "Functor" not in scopes:
            # a definition after a value hole may unfold to it: compared by its body
            out.append(TargetPlan(d.name, False, tuple(values), body=True))
            values.append(d.name)
        elif values and d.name and d.kind == "Theorem" and not scopes:
            # a proved lemma after one: a later body may use it; compared by its type
            out.append(TargetPlan(d.name, False, tuple(values)))
            values.append(d.name)
        elif unshared and d.name and d.kind in _NOMINAL and "Functor" not in scopes:
            names = [n for n in introduced_names(d, Language.coq) if not _eliminator(n)]
            values.extend(names)
            out.append(TargetPlan(f"{d.name}_ind", False, tuple(values)))
        elif unshared and d.name and d.kind in _RECORDS and "Functor" not in scopes:
            shape = record_shape(d)
            # not renamed where no later text names it (its check could only fail: a
            # `Prop` record of data has no projections) nor where it is not read: its
            # uses then mismatch, `undecided`
            if shape is not None and _named_later(decls[d.index + 1 : last + 1], shape, d.name):
                values.extend([d.name, *shape])
                out.append(TargetPlan(d.name, False, tuple(values), scheme=True))
                out.append(TargetPlan(d.name, False, tuple(values), record=shape))
        functor = _instance_in(scopes, instances)
        own = d.kind in _POSTULATES and d.index not in holes and scopes[-1:] == ["Functor"]
        if own and functor is not None and functor.module_type:
            fields.setdefault(functor, []).extend(_postulated(d))
        if _opens(d):
            kind = _scope_kind(d)
            scopes.append(kind)
            if d.kind == "Module":
                modules.append(header_name(d))
            opened: Instance | str | None = None
            if kind == "Functor" and "Functor" not in scopes[:-1]:
                try:
                    opened = instance_of(d, ".".join(modules))
                except Undecided as why:  # it matters only when a target lies inside
                    opened = str(why)
            instances.append(opened)
        elif d.kind == "End" and scopes:
            if scopes.pop() != "Section":
                modules.pop()
            instances.pop()
    return [
        dataclasses.replace(
            p, instance=dataclasses.replace(p.instance, fields=tuple(fields[p.instance]))
        )
        if p.instance is not None and p.instance in fields
        else p
        for p in out
    ]


def record_shape(d: Decl) -> tuple[str, ...] | None:
    """(constructor, field 1, ..., field n) of a `Record`/`Structure`/`Class` as the
    original qualifies them (`M.Build_R`, `M.f`), or None where the text is not the plain
    shape `... := [C] { f1 ... : T1; ...; fn ... : Tn }.`: a manifest field (`f := t`,
    not a constructor argument), mutual records (`with`), a definitional class
    (`Class C := f : T.`, no record), anything unusual; such a record is not renamed and
    a statement about it stays `undecided`."""
    texts = [t.text for t in d.tokens[d.head :]]
    if d.name is None or "with" in texts or ":=" not in texts:
        return None
    rest = texts[texts.index(":=") + 1 :]
    short = d.name.rsplit(".", 1)[-1]
    where = d.name[: len(d.name) - len(short)]
    constructor = f"Build_{short}"
    if rest[:1] != ["{"]:
        if len(rest) < 2 or rest[1] != "{" or not _ident(rest[0]):
            return None
        constructor, rest = rest[0], rest[1:]
    if rest[-2:] != ["}", "."]:
        return None
    fields: list[str] = []
    depth, current = 0, list[str]()
    for text in [*rest[1:-2], ";"]:
        depth += {"(": 1, ")": -1, "{": 1, "}": -1, "[": 1, "]": -1}.get(text, 0)
        if text == ";" and depth == 0:
            if not current:
                continue
            colon = [i for i, w in enumerate(current) if w in (":", ":>", "::")]
            if ":=" in current or not colon or not _ident(current[0]):
                return None
            fields.append(current[0])
            current = []
        else:
            current.append(text)
    if not fields or depth != 0:
        return None
    return (where + constructor, *(where + f for f in fields))


def _named_later(later: Sequence[Decl], shape: tuple[str, ...], record: str) -> bool:
    """Whether a later declaration's text names the record, its constructor or a field
    (by its last component: `M.f`, `r.(f)`)."""
    names = {n.rsplit(".", 1)[-1] for n in (record, *shape)}
    return any(t.text.rsplit(".", 1)[-1] in names for d in later for t in d.tokens)


def _ident(word: str) -> bool:
    """A plain Coq identifier (letters, digits, `_` and `'`, not starting with a digit)."""
    return re.fullmatch(r"[^\W\d][\w']*", word) is not None


def _postulated(d: Decl) -> list[str]:
    """The names a `Parameter`/`Axiom` declares (`Parameter Inline t`, `Parameters (a b :
    t) (c : u)`); a name that is not a plain identifier is left out (a field not shared
    only makes the comparison stricter, a wrong one would fail the genuine candidate)."""
    texts = [t.text for t in d.tokens[d.head + 1 : d.body_start]]
    if texts[:1] == ["Inline"]:
        texts = texts[4:] if texts[1:2] == ["("] else texts[1:]
    names: list[str] = []
    groups = [texts]
    if texts[:1] == ["("]:
        groups, depth, current = [], 0, []
        for text in texts:
            depth += {"(": 1, ")": -1}.get(text, 0)
            current.append(text)
            if depth == 0:
                groups.append(current[1:-1])
                current = []
    for group in groups:
        if ":" in group:
            names += [w for w in group[: group.index(":")] if w.isidentifier()]
    return names


def _instance_in(scopes: list[str], instances: list[Instance | str | None]) -> Instance | None:
    """The functor or module type open here (when its header was read and no other one is
    open inside it)."""
    if scopes.count("Functor") != 1:
        return None
    for kind, instance in zip(scopes, instances, strict=True):
        if kind == "Functor":
            return instance if isinstance(instance, Instance) else None
    return None


def _instance_around(
    name: str, scopes: list[str], instances: list[Instance | str | None]
) -> Instance | None:
    """The functor or module type around a target (None: at top level, in modules and
    sections only); `Undecided` for a functor inside a functor or a header not read."""
    functors = [i for i, kind in enumerate(scopes) if kind == "Functor"]
    if not functors:
        return None
    if len(functors) > 1:
        raise Undecided(
            f"the target `{name}` is inside a functor or module type nested in another one, "
            "whose parameters may depend on the outer one's: not instantiated here"
        )
    instance = instances[functors[0]]
    if not isinstance(instance, Instance):
        raise Undecided(f"the target `{name}` is inside a functor or module type: {instance}")
    if not name.startswith(instance.path + "."):
        raise Undecided(f"the target `{name}` is not named under its functor `{instance.path}`")
    return instance


_SEALED = (
    "is inside a module sealed by a signature (`Module M : T`), whose definitions are "
    "opaque on each side, so two files cannot share them"
)
_OWN_FIELDS = (
    "is inside a functor or module type that declares its own postulates or inductives "
    "before it: each side's instance has its own copy of them, which conversion cannot "
    "identify"
)
_INSTANCE_NEW = _ALWAYS_NEW | _GLOBAL_OUTSIDE_SECTIONS


def _opaque_sides(original: str) -> dict[str, str]:
    """Targets whose statement may speak of something each side has its own copy of (a
    mismatch there is `undecided`), and why: inside a module with an opaque signature
    (`Module M : T.`), or inside a functor or module type after a postulate or inductive
    of its own (an `Inductive` or a functor's `Parameter` is each side's own; a module
    type's `Parameter`/`Axiom` directly in it is shared, `Instance.fields`)."""
    decls, holes = hole_decls(original, Language.coq)
    scopes: list[tuple[bool, bool]] = []  # (sealed, a functor or module type)
    fields = False  # the current functor or module type declared its own
    opened: Decl | None = None  # the outermost scope open
    found: dict[str, str] = {}
    for d in decls:
        inside = any(functor for _, functor in scopes)
        if d.index in holes and d.name:
            if any(sealed for sealed, _ in scopes):
                found[d.name] = _SEALED
            elif inside and fields:
                found[d.name] = _OWN_FIELDS
        elif inside and d.kind in _INSTANCE_NEW:
            shared = d.kind in _POSTULATES and len(scopes) == 1 and _is_module_type(opened)
            fields = fields or not shared
        if _opens(d):
            functor = d.kind == "Module" and _scope_kind(d) == "Functor"
            scopes.append((d.kind == "Module" and _opaque(d), functor))
            opened = d if len(scopes) == 1 else opened
        elif d.kind == "End" and scopes:
            scopes.pop()
            fields = fields and any(functor for _, functor in scopes)
    return found


_SECTION_LEMMA = (
    "is inside a section still open at it, after a lemma proved in that section and a "
    "definition that may unfold to it (a `Qed` lemma is opaque: `Original.l` and "
    "`Candidate.l` differ, and no shared text can be cut inside an open section; "
    "coq-topology TietzeExtension.v)"
)


def _unfolds_in_section(original: str) -> dict[str, str]:
    """Targets whose statement may unfold, through a definition of an open section, to a
    lemma each side proves for itself (a mismatch there is `undecided`, not a changed
    statement), and why. Only the reason of a refusal depends on it."""
    decls, holes = hole_decls(original, Language.coq)
    # per open scope: (a section, a lemma proved in it, then a definition after that)
    scopes: list[list[bool]] = []
    found: dict[str, str] = {}
    for d in decls:
        if d.index in holes and d.name:
            if any(section and lemma and unfolds for section, lemma, unfolds in scopes):
                found[d.name] = _SECTION_LEMMA
        elif scopes and d.name and d.kind == "Theorem":
            for scope in scopes:
                scope[1] = True
        elif scopes and d.name and d.kind in _UNFOLDING:
            for scope in scopes:
                scope[2] = scope[2] or scope[1]
        if _opens(d):
            scopes.append([d.kind == "Section", False, False])
        elif d.kind == "End" and scopes:
            scopes.pop()
    return found


def _is_module_type(d: Decl | None) -> bool:
    return d is not None and [t.text for t in d.tokens[d.head : d.head + 2]] == ["Module", "Type"]


def _opens(d: Decl) -> bool:
    """A `Section` or a `Module` with a body to come (not `Module M := F X.`; a `:=` inside
    a parameter's type, `(X : T with Definition t := nat)`, does not define it)."""
    if d.kind not in ("Section", "Module"):
        return False
    depth = 0
    for t in d.tokens:
        depth += {"(": 1, ")": -1}.get(t.text, 0)
        if t.text == ":=" and depth == 0:
            return False
    return True


def _opaque(d: Decl) -> bool:
    """`Module M : T.` or `Module F (X : A) : T.`: a `:` outside the parameters, not `<:`."""
    texts = [t.text for t in d.tokens[d.head :]]
    depth = 0
    for i, text in enumerate(texts):
        depth += {"(": 1, ")": -1}.get(text, 0)
        if text == ":" and depth == 0 and texts[i - 1] != "<":
            return True
    return False


def _scope_kind(d: Decl) -> str:
    """`Section`, `Module`, or `Functor` for a module type or a module with parameters."""
    texts = [t.text for t in d.tokens[d.head :]]
    if d.kind == "Module" and (texts[1:2] == ["Type"] or "(" in texts):
        return "Functor"
    return d.kind


def _all_targets(original: str) -> list[str]:
    decls, holes = hole_decls(original, Language.coq)
    return [d.name for d in decls if d.index in holes and d.name]


def closed(original: str) -> str:
    """The original as it is compiled: a last target left open (`Proof.` and the end of the
    file, as some public datasets ship tasks) gets its `Admitted.`; coqc would otherwise
    refuse the file for its pending proof, which says nothing about any candidate."""
    decls, holes = hole_decls(original, Language.coq)
    last = decls[-1] if decls else None
    if last is None or last.index not in holes:
        return original
    ends = [i for i, t in enumerate(last.tokens[:-1]) if t.text == "."]
    closer = last.tokens[ends[-1] + 1].text if ends else ""
    if closer in COQ_CLOSERS or last.tokens[-1].text != ".":
        return original
    return original.rstrip() + "\nAdmitted.\n"


def through_last_target(original: str) -> str:
    """The original up to the end of its last target, its open sections and modules closed:
    what comes after cannot change a target's elaborated type, and a later proof may break
    once the context is a library of its own (NeighborhoodBases.v: a hypothesis named
    `elements0` by `destruct` is `elements` where the record's projections are imported),
    or once a section lemma is admitted (it then takes every section variable)."""
    decls, holes = hole_decls(original, Language.coq)
    last = max((i for i in holes if decls[i].name), default=-1)
    if last < 0 or last == len(decls) - 1:
        return original
    scopes: list[str] = []
    for d in decls[:last]:
        texts = [t.text for t in d.tokens[d.head :]]
        if _opens(d) and len(texts) > 1:
            at = 2 if d.kind == "Module" and texts[1] in ("Import", "Export", "Type") else 1
            scopes.append(texts[min(at, len(texts) - 1)])
        elif d.kind == "End" and scopes:
            scopes.pop()
    closing = "".join(f"End {name}.\n" for name in reversed(scopes))
    return original[: decls[last].end] + "\n" + closing


class KernelIdentity:
    """Runs the identity file for a Coq backend and turns what it decides into findings."""

    def _resolved(
        self,
        original: str,
        plan: list[TargetPlan],
        split: tuple[str, str] | None,
        timeout: float | None,
    ) -> list[TargetPlan]:
        """`plan` with its functors' parameter types located in the original's scope: on
        top of the shared context's library where the original is compiled on it."""
        key = (original, split, tuple(p.name for p in plan))
        known = self._located.get(key)
        if known is not None:  # located once per task: `eval` checks many candidates of it
            return known
        limit = float(timeout if timeout is not None else self.backend.timeout)
        if split is None:
            found = resolved(self.backend, original, plan, limit)
        else:
            context, replay = split
            build = self.identity.original(original, context, limit, replay)
            if build.folder is None:
                raise Undecided(f"environment: the original does not compile here: {build.problem}")
            found = resolved(self.backend, original, plan, limit, (context, replay, build.folder))
        self._located[key] = found
        return found

    def _unshared(
        self,
        original: str,
        candidate: str,
        targets: Sequence[str],
        every: set[str],
        timeout: float | None,
    ) -> tuple[IdentityReport, list[TargetPlan]] | None:
        """The identity file with both sides compiled whole (`plans(..., unshared=True)`),
        or None where that route cannot decide either (the candidate or the original does
        not compile whole, a functor's instance not resolved)."""
        try:
            plan = [
                p
                for p in plans(original, unshared=True)
                if p.name in targets or p.name not in every
            ]
            if any(p.instance is not None for p in plan):
                plan = self._resolved(original, plan, None, timeout)
        except Undecided:
            return None
        report = self.identity.check(original, candidate, plan, timeout=timeout)
        if report.undecided is not None or not report.candidate.compiled:
            return None
        return report, plan

    def __init__(self, backend: CoqBackend) -> None:
        self.identity = CoqIdentity(backend)
        self.backend = backend
        self.kernel_checks = 0  # how many candidates reached the identity file
        # functors' parameter types as Coq located them, by task (the original's scope)
        self._located: dict[
            tuple[str, tuple[str, str] | None, tuple[str, ...]], list[TargetPlan]
        ] = {}

    def check(
        self,
        original: str,
        candidate: str,
        targets: Sequence[str],
        timeout: float | None,
        policy: VerifierPolicy,
    ) -> tuple[CheckResult, list[Finding]]:
        """(the candidate's own compile as the verifier reads it, the findings of the
        identity file: changed statements, disallowed axioms, or why it cannot decide)."""
        original = through_last_target(closed(original))
        unshared: Unsplittable | None = None
        every = set(_all_targets(original))
        try:
            try:
                split = context_of(original)
            except Unsplittable as why:  # compared unshared; a mismatch is then undecided
                split, unshared = None, why
            plan = [
                p
                for p in plans(original, unshared is not None)
                if p.name in targets or p.name not in every
            ]
            if any(p.instance is not None for p in plan):
                plan = self._resolved(original, plan, split, timeout)
        except Undecided as off_route:
            result = self.backend.check(candidate, timeout=timeout)
            return result, [_undecided(off_route)]
        context, replay = split if split is not None else (None, "")
        prefix = ""
        if context is not None and context in candidate:
            # commands the candidate put before the shared text stay before it in its file
            at = candidate.index(context)
            candidate, prefix = candidate[at:], candidate[:at]
        if context is not None and not candidate.startswith(context):
            whole = self.backend.check(prefix + candidate, timeout=timeout)
            return whole, [_context_changed(context)]
        report = self.identity.check(
            original,
            candidate,
            plan,
            context=context,
            replay=replay,
            prefix=prefix,
            timeout=timeout,
        )
        split_failed = report.environment or not report.candidate.compiled
        if context is not None and split_failed and replay:
            # the replayed imports shadow the context's own names (SetoidClass.v's `equiv`
            # under RelationClasses'), where the original has them after: imported again.
            # Not always: that also re-imports what the context exports, over a later import
            # (coq-topology Powerset_facts.v imports RelationClasses after Sets on purpose)
            again = self.identity.check(
                original, candidate, plan, context=context,
                replay=f"{replay}Import {CONTEXT_MODULE}.\n", prefix=prefix, timeout=timeout,
            )  # fmt: skip
            if again.undecided is None and again.candidate.compiled:
                report, replay = again, f"{replay}Import {CONTEXT_MODULE}.\n"
        if context is not None and (report.environment or not report.candidate.compiled):
            # the split broke, not the statement: a proof may use a name that `destruct`
            # generates (`f0` where the record's projection `f` is a constant of the same
            # file, `f` where it is imported from the context: NeighborhoodBases.v). Both
            # sides compiled whole instead, as for an `Unsplittable` context: a pass is the
            # kernel's, a mismatch is undecided. Only a candidate that kept the context
            # verbatim gets here, and each side's copy of a postulate stays its own.
            whole_route = self._unshared(original, prefix + candidate, targets, every, timeout)
            if whole_route is not None:
                report, plan = whole_route
                candidate, prefix, context, replay = prefix + candidate, "", None, ""
                unshared = SplitBroken()
        wide = wide_context(original) if report.mismatches and unshared is None else None
        if wide is not None and wide[0] != context and (prefix + candidate).startswith(wide[0]):
            # a statement may unfold to lemmas the file proves before it (`Qed`: opaque, so
            # `Original.l` and `Candidate.l` differ): where the candidate keeps the whole text
            # before the first target, that text is shared instead, and the kernel decides again
            again = self.identity.check(
                original, prefix + candidate, plan, context=wide[0], replay=wide[1],
                timeout=timeout,
            )  # fmt: skip
            if not again.mismatches and again.undecided is None and again.candidate.compiled:
                report, (context, replay) = again, wide
                candidate, prefix = prefix + candidate, ""
        self.kernel_checks += report.checked
        bodies = {p.name for p in plan if p.body}
        findings = [
            _mismatch(target, why, target in bodies) for target, why in report.mismatches.items()
        ]
        if unshared is not None and findings:
            # the statement may speak of a nominal type of each side's own: not decidable
            findings = [_undecided(unshared, f.message) for f in findings]
        opaque = {**_unfolds_in_section(original), **_opaque_sides(original)}
        findings = [
            Finding(
                reason=Reason.undecided,
                subject=f.subject,
                message=f"undecided: `{f.subject}` {opaque[f.subject]}: {f.message}"[:500],
            )
            if f.subject in opaque and f.reason == Reason.statement_changed
            else f
            for f in findings
        ]
        if report.undecided is not None:
            kind = "environment: " if report.environment else ""
            findings.append(
                Finding(reason=Reason.undecided, message=f"{kind}{report.undecided}"[:500])
            )
        # the fields of the declared arguments are what a functor's statement is about;
        # a field of an instance is named as the side's functor's (`Candidate.F.adm`)
        sides = instance_sides(plan)
        report.axioms = {
            t: [_side_name(n, sides) for n in a if not is_argument(n)]
            for t, a in report.axioms.items()
            if t in every
        }
        findings += axiom_findings(report.axioms, original, policy)
        result = report.candidate.model_copy(update={"axioms": report.axioms})
        if context is None:
            return result, findings
        if not result.compiled:
            first = result.errors[:1]
            said = first[0].message if first else result.status.value
            findings.append(
                Finding(
                    reason=Reason.statement_changed,
                    subject="context",
                    message="the candidate does not compile on top of the task's shared "
                    f"context, so its statements cannot be compared: {said}"[:500],
                )
            )
        # the verdict's diagnostics and lines are those of the file as the candidate wrote it
        whole = self.backend.check(prefix + candidate, timeout=timeout)
        return whole.model_copy(update={"axioms": report.axioms}), findings


def _side_name(name: str, sides: Mapping[str, str]) -> str:
    """A field of an instance module by the functor it applies (`Candidate.F.adm`)."""
    head, _, rest = name.partition(".")
    return f"{sides[head]}.{rest}" if head in sides and rest else name


def _mismatch(target: str, why: str, body: bool) -> Finding:
    """The identity file refused a target: no such constant in the candidate's library
    (`missing_target`), or another statement (`statement_changed`); or a definition the
    statements unfold is not the original's (`statement_changed`)."""
    if body:
        message = f"definition `{target}` is not the original's (kernel check): {why}"
        return Finding(reason=Reason.statement_changed, subject=target, message=message[:500])
    if f"{LOCAL_MODULE}.{target} was not found" in why:
        message = f"target `{target}` is not a top-level constant of the candidate: {why}"
        return Finding(reason=Reason.missing_target, subject=target, message=message[:500])
    message = f"`{target}` does not prove the original statement (kernel check): {why}"
    return Finding(reason=Reason.statement_changed, subject=target, message=message[:500])


def given_postulates(original: str) -> set[str]:
    """Full paths of the postulates the original itself declares outside its holes (a
    `Parameter` the task states): `Original.p` in the identity file."""
    decls, holes = hole_decls(original, Language.coq)
    return {
        f"{ORIGINAL_MODULE}.{d.name}"
        for d in decls
        if d.name and d.kind in _POSTULATES and d.index not in holes
    }


def axiom_findings(
    axioms: Mapping[str, Sequence[str]], original: str, policy: VerifierPolicy
) -> list[Finding]:
    """Which axioms of the identity constants are refused, by full path: anything of the
    candidate's own library (`Candidate.*`, whatever it is named); of the original's, only
    what the original postulates outside its holes; the shared context's (`FbContext.*`,
    the task's own text verbatim) always allowed; a library axiom as the policy says. A
    name of the identity file's own modules (`RESERVED*`: a functor applied there) is the
    candidate's postulate (or the original's) made a field of that instance: refused. The
    fields of its declared arguments were taken out before (`is_argument`)."""
    given = given_postulates(original) if axioms else set()
    findings = []
    for target, names in axioms.items():
        for name in names:
            head = name.split(".", 1)[0]
            if head == CONTEXT_MODULE or name in given:
                continue
            own = head in (LOCAL_MODULE, ORIGINAL_MODULE) or head.startswith(RESERVED)
            if not own and (policy.allow_library_axioms or name in (policy.allowed_axioms or [])):
                continue
            findings.append(
                Finding(
                    reason=Reason.disallowed_axiom,
                    subject=name,
                    message=f"`{target}` depends on the axiom `{name}`",
                )
            )
    return findings


def _undecided(why: Exception, kernel: str = "") -> Finding:
    if isinstance(why, SplitBroken):
        message = (
            "a side does not compile on top of the task's shared context as a library (a "
            "proof may use a hypothesis name generated after a field of the context's "
            "records), so both sides were compiled whole, each with its own copy of the "
            f"context, and the statements differ there: {kernel}"
        )
    elif isinstance(why, Unsplittable):
        message = (
            f"the task's inductives or postulates before `{why}` are inside a section or "
            "module still open there, so both sides have their own copy; renamed "
            "side to side, the statements still differ (a `match` on such a type cannot "
            f"be renamed, and no text rule decides in the kernel's place): {kernel}"
        )
    else:
        message = str(why)
    return Finding(reason=Reason.undecided, message=f"undecided: {message}"[:500])


def _context_changed(context: str) -> Finding:
    last = context.rstrip().splitlines()[-1] if context.strip() else ""
    return Finding(
        reason=Reason.statement_changed,
        subject="context",
        message="the candidate must keep the task's declarations up to its first target "
        f"verbatim (they are shared with the original); it changes them up to `{last[:80]}`",
    )


def kernel_identity_for(backend: Backend | None, language: Language) -> KernelIdentity | None:
    """The kernel identity check where the backend is a real coqc backend, else None."""
    if language == Language.coq and isinstance(backend, CoqBackend):
        return KernelIdentity(backend)
    return None
