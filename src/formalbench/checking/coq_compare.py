"""Two kernel dumps, the task's and the candidate's, compared: does the candidate prove the task?

Both sides are compiled by the verifier from source under the same library name
(`Candidate`), each in its own process, so kernel names coincide, and a plugin dumps each side
as JSON (`docs/kdump-format.md`, `backends.coq_dump`): each target's kind, type,
universes and assumptions, and the dependency closure of the statements restricted to the
library's own objects. Everything here is pure data: nothing is parsed from printed text.

What must hold (each failure is one finding, named):
- each target of the task is a constant of the candidate, proved (`def`/`opaque`), and its
  type is the task's (a target in a section: see `_strengthened`);
- every library-local constant and inductive of the task's closure is in the candidate's and
  equal: kind, type, body of a transparent definition, universes, typing flags; inductives
  field by field. A target met in the closure (a value hole) is compared by its type only
  (its body is the solver's). A task postulate may be proved (`undef` -> `opaque`: nothing
  can unfold it either way); any other change of kind is refused;
- terms are equal up to one bijective renaming of the library's own universe levels, built
  by one walk (targets by name, then closure objects by name, then pinned postulates), and
  every universe constraint the candidate's graph entails between renamed levels (and `Set`)
  is entailed by the task's too: the candidate's constraints are no stronger;
- the task's postulates are pinned: present in the candidate with the same type;
- a target inside a functor body or a module type (`where`) is in the same kind of place in
  the candidate, bound by the same parameters, each with the same objects in its signature
  (`_same_place`; their contents are closure objects): no hypothesis added or changed;
- no object of the candidate bypasses a kernel check (`unsafe`);
- each target's assumptions pass the allow-list (`coq_axioms.axiom_findings`): the task's
  postulates declared before it, the names of `allowed` (the kernel-verified presets and
  explicit names, `coq_presets.allowed_names`) and the policy's `allowed_axioms`; another
  target of the task, anything else of the library, a section variable and every bypassed
  kernel check are refused.

Anything a dump cannot express (a term the plugin marks `Unknown`, an object it could not
find or follow: `undumpable`, a `why` that says "cannot be dumped") is `undecided`, with the
case named.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from formalbench.checking.coq_axioms import BadAssumption, axiom_findings, from_dump
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Finding, Reason

LIBRARY = "Candidate"
FORMAT = 1
UNDUMPABLE = "cannot be dumped"  # how a target's `why` starts where the plugin cannot express it
PROVED = ("def", "opaque")
Json = Any


class Malformed(Exception):
    """A dump that does not follow the format: nothing can be decided from it."""


class Differs(Exception):
    """Two objects differ; the message says where."""


@dataclass
class Bijection:
    """The renaming of library-local universe levels, task side -> candidate side."""

    prefix: str = f"{LIBRARY}."
    there: dict[str, str] = field(default_factory=dict)
    back: dict[str, str] = field(default_factory=dict)

    def local(self, level: str) -> bool:
        return level.startswith(self.prefix)

    def same(self, a: object, b: object) -> None:
        if not isinstance(a, str) or not isinstance(b, str):
            raise Malformed(f"a universe level is not a string: {a!r} / {b!r}")
        if not (self.local(a) and self.local(b)):
            if a != b:
                raise Differs(f"universe level {a} is {b} in the candidate")
            return
        if self.there.get(a, b) != b or self.back.get(b, a) != a:
            raise Differs(
                f"universe level {a} is renamed both to {self.there.get(a, b)} and {b} "
                "(no bijection of the library's levels makes them equal)"
            )
        self.there[a], self.back[b] = b, a


class Comparer:
    """Structural equality of the dump's values, levels through one `Bijection`."""

    def __init__(self) -> None:
        self.levels = Bijection()

    # --- universes -----------------------------------------------------------------------
    def instance(self, a: Json, b: Json) -> None:
        _lists(a, b, "universe instance")
        for x, y in zip(a, b, strict=True):
            self.levels.same(x, y)

    def universe(self, a: Json, b: Json) -> None:
        """A universe `[[LEVEL, k], ...]`: its own levels matched as a set (each side keeps
        them sorted by its own names), those already renamed first."""
        _lists(a, b, "universe")
        pending = []
        rest = list(b)
        for x in a:
            level, k = _pair(x)
            if not self.levels.local(level) or level in self.levels.there:
                want = self.levels.there.get(level, level)
                hit = next((y for y in rest if _pair(y) == (want, k)), None)
                if hit is None:
                    raise Differs(f"universe {a} is {b} in the candidate")
                rest.remove(hit)
            else:
                pending.append((level, k))
        for level, k in pending:
            hit = next(
                (y for y in rest if _pair(y)[1] == k and self.levels.local(_pair(y)[0])
                 and _pair(y)[0] not in self.levels.back),
                None,
            )  # fmt: skip
            if hit is None:
                raise Differs(f"universe {a} is {b} in the candidate")
            self.levels.same(level, _pair(hit)[0])
            rest.remove(hit)

    def sort(self, a: Json, b: Json) -> None:
        if isinstance(a, str) or isinstance(b, str):
            if a != b:
                raise Differs(f"sort {a} is {b} in the candidate")
            return
        _lists(a, b, "sort")
        if a[0] != "Type" or b[0] != "Type" or len(a) != 2:
            raise Malformed(f"a sort is not one of the format's: {a!r}")
        self.universe(a[1], b[1])

    def univs(self, a: Json, b: Json, subset: bool = False) -> None:
        """UNIVS; `subset`: the candidate's own constraints may be fewer (a proved target:
        more general is no stronger), never more."""
        if not isinstance(a, dict) or not isinstance(b, dict):
            raise Malformed("universes are not an object")
        if bool(a.get("polymorphic")) != bool(b.get("polymorphic")):
            raise Differs("universe polymorphism differs")
        if not a.get("polymorphic"):
            return
        if a.get("size") != b.get("size"):
            raise Differs(f"{a.get('size')} universe variables, {b.get('size')} in the candidate")
        ours = [self._constraint(c, self.levels.there) for c in a.get("constraints", [])]
        theirs = [self._constraint(c, {}) for c in b.get("constraints", [])]
        # the task's constraints renamed: each of the candidate's must be among them
        if not set(theirs) <= set(ours) or (not subset and set(ours) != set(theirs)):
            raise Differs("the universe constraints differ")

    def _constraint(self, c: Json, rename: Mapping[str, str]) -> tuple[str, str, str]:
        if not isinstance(c, list) or len(c) != 3:
            raise Malformed(f"a universe constraint is not a triple: {c!r}")
        x, op, y = c
        return rename.get(x, x), op, rename.get(y, y)

    # --- terms ---------------------------------------------------------------------------
    def term(self, a: Json, b: Json) -> None:
        """Two terms equal up to the bijection; a worklist, not recursion (terms are deep:
        a numeral in `nat`, a long list)."""
        work = [(a, b)]
        while work:
            x, y = work.pop()
            work.extend(self._node(x, y))

    def _node(self, a: Json, b: Json) -> list[tuple[Json, Json]]:
        """Compare the head of two terms; the pairs of subterms still to compare."""
        if not isinstance(a, list) or not isinstance(b, list) or not a or not b:
            raise Malformed(f"a term is not a list: {str(a)[:60]}")
        tag = a[0]
        if tag != b[0]:
            raise Differs(f"{_show(a)} is {_show(b)} in the candidate")
        if tag == "Unknown":
            raise Malformed(f"the dump holds a term it could not express ({a[1:]!r})")
        shape = _SHAPES.get(tag)
        if shape is None:
            raise Malformed(f"unknown term constructor {tag!r}")
        if len(a) != len(shape) + 1 or len(b) != len(a):
            raise Malformed(f"a `{tag}` term has the wrong arity")
        pending: list[tuple[Json, Json]] = []
        for kind, x, y in zip(shape, a[1:], b[1:], strict=True):
            self.field(kind, x, y, a, pending)
        return pending

    def field(self, kind: str, x: Json, y: Json, where: Json, pending: list[Any]) -> None:
        """One field of a term; subterms are appended to `pending`."""
        if kind == "t":
            pending.append((x, y))
        elif kind == "ts":
            _lists(x, y, "terms")
            pending.extend(zip(x, y, strict=True))
        elif kind == "i":
            self.instance(x, y)
        elif kind == "s":
            self.sort(x, y)
        elif kind == "nt":  # [n_binders, term], or a list of them
            if x and isinstance(x[0], int):
                x, y = [x], [y]
            _lists(x, y, "branches")
            for (n, u), (m, v) in zip(x, y, strict=True):
                if n != m:
                    raise Differs(f"a `match` branch binds {n} names, {m} in the candidate")
                pending.append((u, v))
        elif kind == "invert":  # null, or the index terms of an inverted match
            if x is None or y is None:
                self.generic(x, y)
            else:
                self.field("ts", x, y, where, pending)
        elif x != y:  # names, numbers, relevances, cast kinds
            raise Differs(f"{_show(where)}: {x} is {y} in the candidate")

    def context(self, a: Json, b: Json) -> None:
        _lists(a, b, "context")
        for x, y in zip(a, b, strict=True):
            _lists(x, y, "context entry")
            if x[0] != y[0]:
                raise Differs("a context entry is a let-binding on one side only")
            for u, v in zip(x[1:], y[1:], strict=True):
                self.term(u, v)

    def generic(self, a: Json, b: Json) -> None:
        """Exact equality, for fields the format leaves open (`template`, `variance`, ...):
        a library-local level string must be the same string (no renaming assumed)."""
        if a != b:
            raise Differs(f"{str(a)[:80]} is {str(b)[:80]} in the candidate")


# the fields of each term constructor after its tag: t term, ts terms, i instance, s sort,
# nt [n, term] (or a list of them), invert (open), anything else compared exactly
_SHAPES: dict[str, tuple[str, ...]] = {
    "Rel": ("n",),
    "Var": ("n",),
    "Sort": ("s",),
    "Cast": ("t", "n", "t"),
    "Prod": ("n", "t", "t"),
    "Lambda": ("n", "t", "t"),
    "LetIn": ("n", "t", "t", "t"),
    "App": ("t", "ts"),
    "Const": ("n", "i"),
    "Ind": ("n", "n", "i"),
    "Construct": ("n", "n", "n", "i"),
    "Case": ("n", "n", "i", "ts", "nt", "invert", "t", "nt", "n"),
    "Fix": ("n", "n", "ts", "ts"),
    "CoFix": ("n", "ts", "ts"),
    "Proj": ("n", "n", "t"),
    "Int": ("n",),
    "Float": ("n",),
    "Array": ("i", "ts", "t", "t"),
}


def _lists(a: Json, b: Json, what: str) -> None:
    if not isinstance(a, list) or not isinstance(b, list):
        raise Malformed(f"a {what} is not a list")
    if len(a) != len(b):
        raise Differs(f"a {what} has {len(a)} entries, {len(b)} in the candidate")


def _pair(x: Json) -> tuple[str, int]:
    if not isinstance(x, list) or len(x) != 2:
        raise Malformed(f"a universe entry is not [LEVEL, k]: {x!r}")
    return x[0], x[1]


_WORDS = {
    "App": "an application",
    "Prod": "a product (forall)",
    "Lambda": "a function",
    "LetIn": "a let",
    "Sort": "a sort",
    "Case": "a match",
    "Fix": "a fixpoint",
    "CoFix": "a cofixpoint",
    "Proj": "a projection",
    "Cast": "a cast",
}


def _show(t: Json) -> str:
    """A term's head in a message: a name where it has one, else what it is."""
    if isinstance(t, list) and t and t[0] in ("Const", "Ind", "Construct", "Var"):
        return str(t[1]) if t[0] != "Construct" else f"constructor {t[3]} of {t[1]}"
    if isinstance(t, list) and t and t[0] == "Rel":
        return f"bound variable {t[1]}"
    if isinstance(t, list) and t and isinstance(t[0], str):
        return _WORDS.get(t[0], f"a `{t[0]}`")
    return str(t)[:40]


# --- de Bruijn strengthening (targets in sections) ------------------------------------------
class _Used(Exception):
    pass


def _map_rels(t: Json, depth: int, outer: Callable[[int], int]) -> Json:
    """`t` with each free `Rel` (index past `depth` local binders) renumbered by `outer`
    (index relative to the outside -> new index; raises `_Used` for a dropped binder)."""
    if not isinstance(t, list) or not t:
        return t
    tag = t[0]
    if tag == "Rel":
        n = t[1]
        return t if n <= depth else ["Rel", outer(n - depth) + depth]
    if tag in ("Prod", "Lambda"):
        return [tag, t[1], _map_rels(t[2], depth, outer), _map_rels(t[3], depth + 1, outer)]
    if tag == "LetIn":
        return [tag, t[1], *(_map_rels(x, depth, outer) for x in t[2:4]),
                _map_rels(t[4], depth + 1, outer)]  # fmt: skip
    if tag == "Case":
        invert = None if t[6] is None else [_map_rels(x, depth, outer) for x in t[6]]
        ret = [t[5][0], _map_rels(t[5][1], depth + t[5][0], outer)]
        branches = [[n, _map_rels(b, depth + n, outer)] for n, b in t[8]]
        params = [_map_rels(p, depth, outer) for p in t[4]]
        return [*t[:4], params, ret, invert, _map_rels(t[7], depth, outer), branches, t[9]]
    if tag == "Fix":
        k = len(t[3])
        return [tag, t[1], t[2], [_map_rels(x, depth, outer) for x in t[3]],
                [_map_rels(x, depth + k, outer) for x in t[4]]]  # fmt: skip
    if tag == "CoFix":
        k = len(t[2])
        return [tag, t[1], [_map_rels(x, depth, outer) for x in t[2]],
                [_map_rels(x, depth + k, outer) for x in t[3]]]  # fmt: skip
    shape = _SHAPES.get(tag, ())
    out = [tag]
    for kind, x in zip(shape, t[1:], strict=False):
        if kind == "t":
            out.append(_map_rels(x, depth, outer))
        elif kind == "ts":
            out.append([_map_rels(y, depth, outer) for y in x])
        else:
            out.append(x)
    return out


def _strengthen(t: Json, kept: Sequence[bool]) -> Json:
    """`t`, under the binders `kept` describes (outermost first), with the dropped ones
    removed: raises `_Used` where `t` refers to one of them."""
    size = len(kept)

    def outer(n: int) -> int:
        if n > size:  # past every binder: a free variable of the whole type (none)
            return n - kept.count(False)
        position = size - n  # 0: outermost
        if not kept[position]:
            raise _Used
        return 1 + sum(kept[position + 1 :])

    return _map_rels(t, 0, outer)


def _binders(t: Json) -> Iterator[tuple[Json, Json]]:
    while isinstance(t, list) and t and t[0] == "Prod":
        yield t, t[3]
        t = t[3]


_SEARCH_BUDGET = 20_000  # steps of the search below before `undecided`


def strengthened_match(
    task: Json, candidate: Json, droppable: int, compare: Callable[[Json, Json], bool]
) -> tuple[bool, ...] | None:
    """Which of the task type's first `droppable` binders (the section variables the task's
    admitted constant abstracts) the candidate's type keeps, such that the candidate's type
    is the task's with the others removed and each removed one unused after it; None where
    no choice does. `compare(x, y)`: equality of two terms (without side effects on a
    failure; the caller replays the winner). Why this is sound: a removed binder is unused,
    so `fun (x : A) => c` turns a proof `c` of the candidate's type into one of the task's
    (the kernel's weakening): the candidate proves at least the task's statement."""
    prods = [p for p, _ in _binders(task)][:droppable]
    steps = [0]

    def search(i: int, kept: list[bool], cand: Json) -> tuple[bool, ...] | None:
        steps[0] += 1
        if steps[0] > _SEARCH_BUDGET:
            raise _Used
        if i == len(prods):
            rest = prods[-1][3] if prods else task
            try:
                body = _strengthen(rest, kept)
            except _Used:
                return None
            return tuple(kept) if compare(body, cand) else None
        domain = prods[i][2]
        if isinstance(cand, list) and cand and cand[0] == "Prod":
            try:
                mine = _strengthen(domain, kept)
            except _Used:
                mine = None
            if mine is not None and cand[1] == prods[i][1] and compare(mine, cand[2]):
                found = search(i + 1, [*kept, True], cand[3])
                if found is not None:
                    return found
        return search(i + 1, [*kept, False], cand)

    try:
        return search(0, [], candidate)
    except _Used:
        return None


# --- the comparison -------------------------------------------------------------------------
@dataclass
class Outcome:
    """What the comparison found, and each target's axioms by full name (for the verdict)."""

    findings: list[Finding] = field(default_factory=list)
    axioms: dict[str, list[str]] = field(default_factory=dict)


def _finding(reason: Reason, subject: str | None, message: str) -> Finding:
    return Finding(reason=reason, subject=subject, message=message[:500])


def full(name: str) -> str:
    return f"{LIBRARY}.{name}"


def compare(
    task: Mapping[str, Any],
    candidate: Mapping[str, Any],
    targets: Sequence[str],
    policy: VerifierPolicy,
    *,
    in_section: frozenset[str] = frozenset(),
    before: Mapping[str, tuple[frozenset[str], tuple[str, ...]]] | None = None,
    allowed: Collection[str] = frozenset(),
) -> Outcome:
    """Compare the task's dump with the candidate's (`targets`: names as the task's text
    qualifies them, `t`, `M.t`; `in_section`: those of them inside a section of the task;
    `before`: per target, the task's postulates declared before it, by full name and by
    module prefix, the only ones it may rest on; None: every task postulate; `allowed`: the
    library axioms allowed by full name, on top of `policy.allowed_axioms`)."""
    listed = frozenset({*allowed, *(policy.allowed_axioms or ())})
    try:
        return _compare(task, candidate, targets, listed, in_section, before)
    except (Malformed, KeyError, TypeError, ValueError, IndexError, AttributeError) as why:
        message = f"undecided: a kernel dump cannot be read ({type(why).__name__}: {why})"
        return Outcome([_finding(Reason.undecided, None, message)])
    except RecursionError:
        message = "undecided: a term of the kernel dump nests deeper than this comparison follows"
        return Outcome([_finding(Reason.undecided, None, message)])


def _compare(
    task: Mapping[str, Any],
    cand: Mapping[str, Any],
    targets: Sequence[str],
    allowed: frozenset[str],
    in_section: frozenset[str],
    before: Mapping[str, tuple[frozenset[str], tuple[str, ...]]] | None,
) -> Outcome:
    out = Outcome()
    add = out.findings.append
    for side, dump in (("task", task), ("candidate", cand)):
        if dump.get("format") != FORMAT or dump.get("library") != LIBRARY:
            raise Malformed(f"the {side}'s dump is not format {FORMAT} of `{LIBRARY}`")
    if task.get("coq") != cand.get("coq"):
        raise Malformed(f"the dumps come from two Coqs: {task.get('coq')} / {cand.get('coq')}")
    for u in cand.get("unsafe", []):
        add(_finding(
            Reason.forbidden_construct, u["name"],
            f"`{u['name']}` ({u.get('object', 'object')}) was declared with the kernel's "
            f"{u.get('what')} check off",
        ))  # fmt: skip
    names = sorted(full(t) for t in targets)
    asked = set(names)
    # the targets by the names the kernel uses inside terms and assumptions too (a target
    # reached through a module alias has another canonical name): none is a postulate
    holes = asked | {
        str(t["canonical"])
        for n in names
        if (t := task["targets"].get(n)) and t.get("found") and t.get("canonical")
    }
    postulates = {n: p for n, p in task["postulates"].items() if n not in holes}
    cmp = Comparer()
    strengthened: set[str] = set()
    for name in names:
        mine, theirs = task["targets"].get(name), cand["targets"].get(name)
        short = name[len(LIBRARY) + 1 :]
        if mine is None or not mine.get("found"):
            why = (mine or {}).get("why") or _undumpable(task, name) or "not in the dump"
            add(_finding(Reason.undecided, short,
                         f"undecided: the task's `{short}` has no kernel object to compare: "
                         f"{why}"))  # fmt: skip
            continue
        if theirs is None or not theirs.get("found"):
            why = (theirs or {}).get("why") or _undumpable(cand, name) or "not in the dump"
            if why.startswith(UNDUMPABLE):  # the plugin could not express it: no refusal
                add(_finding(Reason.undecided, short,
                             f"undecided: the candidate's `{short}` {why}"))  # fmt: skip
            else:
                add(_finding(Reason.missing_target, short,
                             f"target `{short}` is not a constant of the candidate: {why}"))  # fmt: skip
            continue
        if not _proved(name, theirs):
            add(_finding(
                Reason.forbidden_construct, short,
                f"`{short}` is not proved: the kernel holds it as `{theirs['kind']}` "
                "(an assumption: Admitted, Parameter, Axiom)",
            ))  # fmt: skip
        problem = _same_place(mine, theirs) or _same_target(
            cmp, mine, theirs, droppable=short in in_section
        )
        if problem == "strengthened":
            strengthened.add(name)
        elif problem is not None:
            add(_finding(Reason.statement_changed, short,
                         f"`{short}` does not state the task's statement: {problem}"))  # fmt: skip
    for side, dump in (("task", task), ("candidate", cand)):
        for u in dump.get("undumpable", []):
            if u.get("name") not in dump["targets"]:  # an object of a closure: not compared
                add(_finding(Reason.undecided, None,
                             f"undecided: the {side}'s dump lacks `{u.get('name')}`, which its "
                             f"statements use: {u.get('why')}"))  # fmt: skip
    closure = task["closure"]
    theirs_closure = cand["closure"]
    for kind in ("constants", "inductives"):
        for name in sorted(closure[kind]):
            if name in asked:
                continue  # a target met in the closure (a value hole): its type, above
            other = theirs_closure[kind].get(name)
            short = name[len(LIBRARY) + 1 :] if name.startswith(f"{LIBRARY}.") else name
            if other is None:
                add(_finding(Reason.statement_changed, short,
                             f"`{short}`, which the task's statements use, is not in the "
                             "candidate's"))  # fmt: skip
                continue
            try:
                if kind == "constants":
                    _same_constant(cmp, closure[kind][name], other)
                else:
                    _same_inductive(cmp, closure[kind][name], other)
            except Differs as why:
                reason = Reason.statement_changed
                if _mentions(closure[kind][name], strengthened):
                    reason = Reason.undecided
                add(_finding(reason, short,
                             f"{'undecided: ' if reason == Reason.undecided else ''}`{short}`, "
                             f"which the task's statements use, differs: {why}"))  # fmt: skip
    # the statements' own levels: constraints are compared on these; a level met only in a
    # postulate's type (an axiom's `Type`) is like the level of any lemma a proof uses: a
    # proof that instantiates it adds a constraint that says nothing about the statements
    stated = dict(cmp.levels.back)
    for name in sorted(postulates):
        short = name[len(LIBRARY) + 1 :]
        other = cand["targets"].get(name) or {}
        if not other.get("found") and name in cand["postulates"]:
            other = {"found": True, **cand["postulates"][name]}
        if not other.get("found"):
            add(_finding(Reason.statement_changed, short,
                         f"the task's postulate `{short}` is not in the candidate"))  # fmt: skip
            continue
        try:
            cmp.term(postulates[name]["type"], other["type"])
        except Differs as why:
            add(_finding(Reason.statement_changed, short,
                         f"the task's postulate `{short}` has another type: {why}"))  # fmt: skip
    own, shared = _own_levels(task, names, postulates)
    for finding in _stronger(task, cand, stated, own, shared):
        add(finding)
    for name in names:
        theirs = cand["targets"].get(name) or {}
        if not theirs.get("found"):
            continue
        short = name[len(LIBRARY) + 1 :]
        assumptions = theirs.get("assumptions", [])
        out.axioms[short] = [str(a["name"]) for a in assumptions if a.get("kind") == "axiom"]
        usable = postulates
        if before is not None:
            exact, prefixes = before.get(short, (frozenset(), ()))
            usable = {
                n: p for n, p in postulates.items() if n in exact or n.startswith(tuple(prefixes))
            }
        try:
            found = {short: from_dump(assumptions)}
        except BadAssumption as why:
            raise Malformed(str(why)) from why
        out.findings += axiom_findings(found, set(usable), allowed, holes)
    return out


def _proved(name: str, target: Mapping[str, Any]) -> bool:
    """A constant with a body, or a field of a module sealed by its signature (`Module M :
    T`: the environment holds the signature's `Parameter`, `undef`) whose implementation the
    kernel's assumptions walk resolved to a proof: the target is then not among its own
    assumptions. A real postulate (`Parameter`, `Axiom`, `Admitted`, a `Declare Module`
    field) always is, so it stays unproved."""
    if target["kind"] in PROVED:
        return True
    own = any(a.get("kind") == "axiom" and a.get("name") == name for a in target["assumptions"])
    return target["kind"] == "undef" and not own


def _same_place(mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> str | None:
    """None where both targets are in the same kind of place (the environment, a functor
    body, a module type) under the same parameters, each with the same objects in its
    signature (their contents are compared as closure objects: the plugin puts every field
    of a binding parameter's signature in the closure); else the difference. A candidate
    can so neither add a hypothesis to a parameter's module type nor swap parameters."""
    places = (mine.get("where"), theirs.get("where"))
    if places[0] != places[1]:
        task_place, cand_place = (
            f"a field of a {str(w).replace('_', ' ')}" if w else "a constant" for w in places
        )
        return f"it is {task_place} in the task, {cand_place} in the candidate"
    ours, other = mine.get("binders") or [], theirs.get("binders") or []
    names = ([b["name"] for b in ours], [b["name"] for b in other])
    if names[0] != names[1]:
        return f"it is bound by the parameters {names[0]} in the task, {names[1]} in the candidate"
    for a, b in zip(ours, other, strict=True):
        if a["fields"] != b["fields"]:
            extra = sorted(set(b["fields"]) - set(a["fields"]))
            lost = sorted(set(a["fields"]) - set(b["fields"]))
            parts = [f"fields added: {extra}"] if extra else []
            parts += [f"fields removed: {lost}"] if lost else []
            detail = "; ".join(parts) or "its fields are in another order"
            return f"the signature of its parameter `{a['name']}` differs ({detail})"
    return None


def _undumpable(dump: Mapping[str, Any], name: str) -> str | None:
    for u in dump.get("undumpable", []):
        if u.get("name") in (name, name[len(LIBRARY) + 1 :]):
            return str(u.get("why"))
    return None


def _same_target(
    cmp: Comparer, mine: Mapping[str, Any], theirs: Mapping[str, Any], droppable: bool
) -> str | None:
    """None where the candidate's target has the task's type and universes; "strengthened"
    where it does only once some section variables are removed (`strengthened_match`); else
    the difference."""
    try:
        cmp.term(mine["type"], theirs["type"])
        cmp.univs(mine["univs"], theirs["univs"], subset=True)
        return None
    except Differs as why:
        if not droppable:
            return str(why)
        first = str(why)
    saved = (dict(cmp.levels.there), dict(cmp.levels.back))

    def trial(x: Json, y: Json) -> bool:
        probe = Comparer()
        probe.levels.there, probe.levels.back = dict(saved[0]), dict(saved[1])
        try:
            probe.term(x, y)
        except Differs:
            return False
        return True

    count = sum(1 for _ in _binders(mine["type"]))
    kept = strengthened_match(mine["type"], theirs["type"], count, trial)
    if kept is None:
        return first
    # replay the winning choice on the real bijection (its level pairs are recorded)
    try:
        cmp.term(_strip(mine["type"], kept), theirs["type"])
        cmp.univs(mine["univs"], theirs["univs"], subset=True)
    except Differs as why:
        return str(why)
    return "strengthened" if not all(kept) else None


def _strip(t: Json, kept: Sequence[bool]) -> Json:
    """The task's type with the binders `kept` marks False removed (they are unused)."""
    prods = [p for p, _ in _binders(t)][: len(kept)]
    rest = prods[-1][3] if prods else t
    out = _strengthen(rest, kept)
    for i in range(len(prods) - 1, -1, -1):
        if kept[i]:
            out = ["Prod", prods[i][1], _strengthen(prods[i][2], kept[:i]), out]
    return out


def _mentions(obj: Json, names: set[str]) -> bool:
    if not names:
        return False
    if isinstance(obj, list):
        if len(obj) >= 2 and obj[0] == "Const" and obj[1] in names:
            return True
        return any(_mentions(x, names) for x in obj)
    if isinstance(obj, dict):
        return any(_mentions(x, names) for x in obj.values())
    return False


_CONSTANT_KEYS = frozenset(("kind", "type", "body", "univs", "flags"))


def _same_constant(cmp: Comparer, a: Mapping[str, Any], b: Mapping[str, Any]) -> None:
    kinds = (a["kind"], b["kind"])
    if kinds[0] != kinds[1] and kinds != ("undef", "opaque"):
        raise Differs(f"it is `{kinds[0]}` in the task, `{kinds[1]}` in the candidate")
    cmp.term(a["type"], b["type"])
    if a["kind"] == "def":
        cmp.term(a["body"], b["body"])
    elif a["kind"] == "primitive" and a.get("body") != b.get("body"):
        raise Differs("another primitive")
    cmp.univs(a["univs"], b["univs"])
    cmp.generic(a.get("flags"), b.get("flags"))
    for key in sorted((set(a) | set(b)) - _CONSTANT_KEYS):  # fields the format may add
        cmp.generic(a.get(key), b.get(key))


_MIND_TYPED = frozenset(("params", "univs", "packets", "flags", "record", "template"))
_PACKET_TYPED = frozenset(("arity_ctxt", "user_arity", "sort", "user_lc"))


def _same_inductive(cmp: Comparer, a: Mapping[str, Any], b: Mapping[str, Any]) -> None:
    """Every field of a mutual inductive block; those holding terms or universe levels
    through the bijection, the others (finiteness, counts, names, variance ...) exactly."""
    for key in sorted((set(a) | set(b)) - _MIND_TYPED):
        cmp.generic(a.get(key), b.get(key))
    cmp.context(a["params"], b["params"])
    cmp.univs(a["univs"], b["univs"])
    cmp.generic(a.get("flags"), b.get("flags"))
    _same_record(cmp, a.get("record"), b.get("record"))
    _same_template(cmp, a.get("template"), b.get("template"))
    _lists(a["packets"], b["packets"], "inductive block")
    for p, q in zip(a["packets"], b["packets"], strict=True):
        for key in sorted((set(p) | set(q)) - _PACKET_TYPED):
            cmp.generic(p.get(key), q.get(key))
        cmp.context(p["arity_ctxt"], q["arity_ctxt"])
        if p.get("user_arity") is None or q.get("user_arity") is None:
            cmp.generic(p.get("user_arity"), q.get("user_arity"))
        else:
            cmp.term(p["user_arity"], q["user_arity"])
        cmp.sort(p["sort"], q["sort"])
        _lists(p["user_lc"], q["user_lc"], "constructor list")
        for x, y in zip(p["user_lc"], q["user_lc"], strict=True):
            cmp.term(x, y)


def _same_record(cmp: Comparer, a: Json, b: Json) -> None:
    """`null`, `"fake"`, or a primitive record: projections by name, their types as terms."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        cmp.generic(a, b)
        return
    for key in sorted((set(a) | set(b)) - {"types"}):
        cmp.generic(a.get(key), b.get(key))
    if "types" in a or "types" in b:
        _lists(a.get("types"), b.get("types"), "projection list")
        for x, y in zip(a["types"], b["types"], strict=True):
            cmp.term(x, y)


def _same_template(cmp: Comparer, a: Json, b: Json) -> None:
    """`null` or a template's levels (through the bijection) and constraints."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        cmp.generic(a, b)
        return
    for key in sorted((set(a) | set(b)) - {"param_levels", "levels", "constraints"}):
        cmp.generic(a.get(key), b.get(key))
    params_a, params_b = a.get("param_levels", []), b.get("param_levels", [])
    _lists(params_a, params_b, "template parameter list")
    for x, y in zip(params_a, params_b, strict=True):
        if x is None or y is None:
            cmp.generic(x, y)
        else:
            cmp.levels.same(x, y)
    cmp.instance(a.get("levels", []), b.get("levels", []))
    ours = {cmp._constraint(c, cmp.levels.there) for c in a.get("constraints", [])}
    theirs = {cmp._constraint(c, {}) for c in b.get("constraints", [])}
    if ours != theirs:
        raise Differs("the template's universe constraints differ")


def _levels_in(obj: Json, found: set[str]) -> set[str]:
    """Every library-local universe level (`Candidate.<n>`) named anywhere in `obj`."""
    stack = [obj]
    while stack:  # a worklist: terms nest thousands deep
        x = stack.pop()
        if isinstance(x, str):
            if x.startswith(f"{LIBRARY}.") and x[len(LIBRARY) + 1 :].isdigit():
                found.add(x)
        elif isinstance(x, list):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
    return found


_OWN_LEVELS: OrderedDict[tuple[int, tuple[str, ...], tuple[str, ...]], tuple[object, Any]] = (
    OrderedDict()
)
_own_levels_guard = threading.Lock()
OWN_LEVELS = 32


def _own_levels(
    task: Mapping[str, Any], names: Sequence[str], postulates: Mapping[str, Any]
) -> tuple[frozenset[str], frozenset[str]]:
    """`_task_levels`, remembered for the last OWN_LEVELS task dump objects (a service
    checks the same tasks over and over; on a statement with `2^2014` the walk takes
    ~40 ms). The entry holds the dump itself, so its `id` is not reused while remembered
    (a few dumps kept alive: the verifier's own cache of parsed dumps holds them anyway);
    dumps are never changed."""
    key = (id(task), tuple(names), tuple(sorted(postulates)))
    with _own_levels_guard:
        hit = _OWN_LEVELS.get(key)
        if hit is not None and hit[0] is task:
            _OWN_LEVELS.move_to_end(key)
            return hit[1]
    found = _task_levels(task, names, postulates)
    with _own_levels_guard:
        _OWN_LEVELS[key] = (task, found)
        while len(_OWN_LEVELS) > OWN_LEVELS:
            _OWN_LEVELS.popitem(last=False)
    return found


def _task_levels(
    task: Mapping[str, Any], names: Sequence[str], postulates: Mapping[str, Any]
) -> tuple[frozenset[str], frozenset[str]]:
    """(the task's levels that only one target's statement has, its fresh `Type`s: in no
    object of the closure, no postulate's type and no other target's statement; the levels
    of the closure's objects). Coq fixes an own level from the statement's proof (`Qed` adds
    the proof's constraints on it; an `Admitted` statement leaves it free), so a genuine
    proof may bound it by a level of an object the statements use (`_stronger`)."""
    per_target = [
        _levels_in([t.get("type"), t.get("univs")], set())
        for n in names
        if (t := task["targets"].get(n)) and t.get("found")
    ]
    closure = _levels_in(task["closure"], set())
    shared = _levels_in([p.get("type") for p in postulates.values()], set(closure))
    own: set[str] = set()
    for i, levels in enumerate(per_target):
        others = set().union(*(ls for j, ls in enumerate(per_target) if j != i))
        own |= levels - shared - others
    return frozenset(own), frozenset(closure)


def _inconsistent(
    edges: Collection[tuple[str, str, bool]], new: Collection[tuple[str, str, bool]]
) -> tuple[str, str] | None:
    """A new edge (lower, upper, strict) on a cycle of `edges` + `new` through a strict edge
    (a universe inconsistency), or None. `edges` (the task's) are consistent, so such a
    cycle has a new edge: a search from each, remembering whether a strict edge was met."""
    succ: dict[str, set[tuple[str, bool]]] = {}
    for a, b, strict in [*edges, *new]:
        succ.setdefault(a, set()).add((b, strict))
    for a, b, strict in new:
        seen, todo = {(b, strict)}, [(b, strict)]
        while todo:
            x, hard = todo.pop()
            if x == a and hard:
                return (a, b)
            for y, s in succ.get(x, ()):
                if (y, hard or s) not in seen:
                    seen.add((y, hard or s))
                    todo.append((y, hard or s))
    return None


def _stronger(
    task: Mapping[str, Any],
    cand: Mapping[str, Any],
    stated: Mapping[str, str],
    own: frozenset[str] = frozenset(),
    closure: frozenset[str] = frozenset(),
) -> list[Finding]:
    """Every constraint the candidate's graph entails between the statements' renamed levels
    (`stated`: candidate level -> task level; or `Set`) that the task's does not: the
    candidate's statement would hold only under it. Except a bound on a target's own fresh
    level (`own`, `_own_levels`) by a level of the closure's objects (`closure`; never
    `Set`, another target's level or a postulate's), as every proof in Coq
    fixes such a level (stdpp's `dom_alt {A : Type}` is proved through a class field over
    `A : Type@{u}` and its proof adds `A's level <= u`); those bounds are refused all the
    same where, with the task's own constraints, they are inconsistent (a candidate that
    dropped a later lemma forcing the opposite)."""
    findings = []
    back = {**stated, "Set": "Set"}
    new: list[tuple[str, str, bool]] = []
    for rel in ("le", "lt"):
        ours = {tuple(p) for p in task["universes"][rel]}
        for x, y in cand["universes"][rel]:
            if x in back and y in back and (back[x], back[y]) not in ours:
                pair = {back[x], back[y]}
                if len(pair & own) == 1 and len(pair & closure) == 1:
                    new.append((back[x], back[y], rel == "lt"))
                    continue
                op = "<=" if rel == "le" else "<"
                findings.append(_finding(
                    Reason.statement_changed, "universes",
                    f"the candidate's library forces {back[x]} {op} {back[y]} (its {x} {op} "
                    f"{y}), which the task's does not: its statements hold under stronger "
                    "universe constraints",
                ))  # fmt: skip
    edges = [(a, b, rel == "lt") for rel in ("le", "lt") for a, b in task["universes"][rel]]
    cycle = _inconsistent(edges, new) if new else None
    if cycle is not None:
        findings.append(_finding(
            Reason.statement_changed, "universes",
            f"the candidate's library bounds a statement's own universe level by "
            f"{cycle[0]} <= {cycle[1]}, which the task's constraints contradict (a cycle "
            "through a strict constraint)",
        ))  # fmt: skip
    return findings
