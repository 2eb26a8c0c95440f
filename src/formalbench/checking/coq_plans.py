"""How the original's text becomes the identity file's plan (`backends.coq_identity`).

Read from the task's text only (never the candidate's): which declarations must be shared
rather than compared (the *context*, `context_of`, or the whole text before the first target,
`wide_context`), which targets lie in a section, a functor or a module type, which value
holes and unfolding definitions are renamed side to side, which inductives and records of an
open section are compared by their schemes (`plans`), and where the original is cut
(`closed`, `through_last_target`). Kept apart from `coq_identity`, which runs the plan and
turns the kernel's answers into findings.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from formalbench.backends.coq_identity import (
    Instance,
    TargetPlan,
)
from formalbench.checking.coq_functors import Undecided, header_name, instance_of
from formalbench.checking.decls import COQ_CLOSERS, Decl
from formalbench.checking.holes import hole_decls
from formalbench.checking.shadowing import introduced_names
from formalbench.core.lexer import words
from formalbench.core.records import Language

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


POSTULATES = words("Axiom Axioms Parameter Parameters Conjecture")
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
        own = d.kind in POSTULATES and d.index not in holes and scopes[-1:] == ["Functor"]
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


def opaque_sides(original: str) -> dict[str, str]:
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
            shared = d.kind in POSTULATES and len(scopes) == 1 and _is_module_type(opened)
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


def unfolds_in_section(original: str) -> dict[str, str]:
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
    return _signed(d, sealed_only=True)


def _signed(d: Decl, sealed_only: bool = False) -> bool:
    """A module checked against a signature at its `End` (`: T`, or `<: T` too unless
    `sealed_only`): a `:` outside the parameters."""
    texts = [t.text for t in d.tokens[d.head :]]
    depth = 0
    for i, text in enumerate(texts):
        depth += {"(": 1, ")": -1}.get(text, 0)
        if text == ":" and depth == 0 and not (sealed_only and texts[i - 1] == "<"):
            return True
    return False


def _scope_kind(d: Decl) -> str:
    """`Section`, `Module`, or `Functor` for a module type or a module with parameters."""
    texts = [t.text for t in d.tokens[d.head :]]
    if d.kind == "Module" and (texts[1:2] == ["Type"] or "(" in texts):
        return "Functor"
    return d.kind


def all_targets(original: str) -> list[str]:
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
    or once a section lemma is admitted (it then takes every section variable). Not cut
    inside a module checked against a signature (`Module F (X : A) <: T.`): its `End` needs
    the fields that come after the target (NZCyclic.v)."""
    decls, holes = hole_decls(original, Language.coq)
    last = max((i for i in holes if decls[i].name), default=-1)
    if last < 0 or last == len(decls) - 1:
        return original
    scopes: list[str] = []
    signed: list[bool] = []
    for d in decls[:last]:
        texts = [t.text for t in d.tokens[d.head :]]
        if _opens(d) and len(texts) > 1:
            signed.append(d.kind == "Module" and _signed(d))
            at = 2 if d.kind == "Module" and texts[1] in ("Import", "Export", "Type") else 1
            scopes.append(texts[min(at, len(texts) - 1)])
        elif d.kind == "End" and scopes:
            scopes.pop()
            signed.pop()
    if any(signed):
        return original
    closing = "".join(f"End {name}.\n" for name in reversed(scopes))
    return original[: decls[last].end] + "\n" + closing
