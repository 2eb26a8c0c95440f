"""The kernel dump format (kdump-format.md, v1) as strict pydantic models, and its reader.

Why a module of its own: the comparator (kcompare) reads dumps without running Coq; it needs
the models and the checks, not the process machinery of `coq_kernel_dump`. Every model
forbids unknown fields and coercions; a TERM is checked by an iterative walker (terms can be
deeper than Python's recursion allows). The reader takes the one line between this call's
`FBDUMP-BEGIN <nonce>` / `FBDUMP-END <nonce>` markers and refuses anything else with one
line (`KernelDumpError`).
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError, model_validator

from formalbench.core.errors import BackendError

FORMAT = 1


class KernelDumpError(BackendError):
    """The dump could not be produced or is not exactly the format (one line: why)."""


# --- TERM, checked without recursion (terms can be deep) ---------------------------------
_REL = ("R", "I")
_CASTS = ("VM", "NATIVE", "DEFAULT")
# Rocq 9.x forms (never written by 8.16): a sort variable's relevance or an instance's
# quality is a string "q:<quality>" (`q:Prop`, `q:SProp`, `q:Type`, `q:QVar(0)`)
_QUALITY = "q:"
_HEX = frozenset("0123456789abcdef")


def _is_relevance(v: object) -> bool:
    return v in _REL or _is_quality(v)


def _is_quality(v: object) -> bool:
    return isinstance(v, str) and v.startswith(_QUALITY) and len(v) > len(_QUALITY)


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_level(v: object) -> None:
    if not isinstance(v, str) or not v:
        raise ValueError(f"a universe level must be a name, got {v!r}")


def _check_instance(v: object) -> None:
    if not isinstance(v, list):
        raise ValueError("a universe instance must be a list")
    for level in v:
        _check_level(level)


def _check_universe(v: object) -> None:
    if not isinstance(v, list) or not v:
        raise ValueError("a universe must be a non-empty list of [level, k]")
    for pair in v:
        if not (isinstance(pair, list) and len(pair) == 2 and _is_int(pair[1])):
            raise ValueError(f"a universe entry must be [level, k], got {pair!r}")
        _check_level(pair[0])


def check_sort(v: object) -> object:
    if v in ("SProp", "Prop", "Set"):
        return v
    if isinstance(v, list) and len(v) == 2 and v[0] == "Type":
        _check_universe(v[1])
        return v
    if isinstance(v, list) and len(v) == 3 and v[0] == "QSort" and isinstance(v[1], str):
        _check_universe(v[2])  # Rocq 9.x: a sort-polymorphic sort
        return v
    raise ValueError(f"not a sort: {v!r}")


def check_term(root: object) -> object:
    """`root` if it is a TERM of the format, else ValueError naming the first fault."""
    stack = [root]
    while stack:
        t = stack.pop()
        if not isinstance(t, list) or not t or not isinstance(t[0], str):
            raise ValueError(f"a term must be a list headed by its constructor, got {t!r:.80}")
        head, n = t[0], len(t)
        shape_ok = True
        if head == "Rel":
            shape_ok = n == 2 and _is_int(t[1]) and t[1] >= 1
        elif head == "Var":
            shape_ok = n == 2 and isinstance(t[1], str)
        elif head == "Sort":
            shape_ok = n == 2
            if shape_ok:
                check_sort(t[1])
        elif head == "Cast":
            shape_ok = n == 4 and t[2] in _CASTS
            stack += [t[1], t[3]] if shape_ok else []
        elif head in ("Prod", "Lambda"):
            shape_ok = n == 4 and _is_relevance(t[1])
            stack += [t[2], t[3]] if shape_ok else []
        elif head == "LetIn":
            shape_ok = n == 5 and _is_relevance(t[1])
            stack += [t[2], t[3], t[4]] if shape_ok else []
        elif head == "App":
            shape_ok = n == 3 and isinstance(t[2], list) and bool(t[2])
            stack += [t[1], *t[2]] if shape_ok else []
        elif head == "Const":
            shape_ok = n == 3 and isinstance(t[1], str)
            if shape_ok:
                _check_instance(t[2])
        elif head == "Ind":
            shape_ok = n == 4 and isinstance(t[1], str) and _is_int(t[2])
            if shape_ok:
                _check_instance(t[3])
        elif head == "Construct":
            shape_ok = n == 5 and isinstance(t[1], str) and _is_int(t[2]) and _is_int(t[3])
            if shape_ok:
                _check_instance(t[4])
        elif head == "Case":
            shape_ok = (
                n == 10
                and isinstance(t[1], str)
                and _is_int(t[2])
                and isinstance(t[4], list)
                and isinstance(t[5], list)
                and len(t[5]) == 2
                and _is_int(t[5][0])
                and (t[6] is None or isinstance(t[6], list))
                and isinstance(t[8], list)
                and all(isinstance(b, list) and len(b) == 2 and _is_int(b[0]) for b in t[8])
                and _is_relevance(t[9])
            )
            if shape_ok:
                _check_instance(t[3])
                stack += [*t[4], t[5][1], *(t[6] or []), t[7], *(b[1] for b in t[8])]
        elif head == "Fix":
            shape_ok = (
                n == 5
                and isinstance(t[1], list)
                and all(_is_int(k) for k in t[1])
                and _is_int(t[2])
                and isinstance(t[3], list)
                and isinstance(t[4], list)
                and len(t[1]) == len(t[3]) == len(t[4])
            )
            stack += [*t[3], *t[4]] if shape_ok else []
        elif head == "CoFix":
            shape_ok = (
                n == 4
                and _is_int(t[1])
                and isinstance(t[2], list)
                and isinstance(t[3], list)
                and len(t[2]) == len(t[3])
            )
            stack += [*t[2], *t[3]] if shape_ok else []
        elif head == "Proj":
            shape_ok = n == 4 and isinstance(t[1], str) and isinstance(t[2], bool)
            stack += [t[3]] if shape_ok else []
        elif head in ("Int", "Float"):
            shape_ok = n == 2 and isinstance(t[1], str)
        elif head == "String":  # Rocq 9.x primitive string: its bytes in lower-case hex
            shape_ok = n == 2 and isinstance(t[1], str) and len(t[1]) % 2 == 0
            shape_ok = shape_ok and set(t[1]) <= _HEX
        elif head == "Array":
            shape_ok = n == 5 and isinstance(t[2], list)
            if shape_ok:
                _check_instance(t[1])
                stack += [*t[2], t[3], t[4]]
        elif head == "Unknown":
            shape_ok = n == 2 and isinstance(t[1], str)
        else:
            raise ValueError(f"unknown term constructor {head!r}")
        if not shape_ok:
            raise ValueError(f"malformed {head} term: {t!r:.120}")
    return root


def _check_context(v: object) -> object:
    if not isinstance(v, list):
        raise ValueError("a context must be a list")
    for decl in v:
        if isinstance(decl, list) and len(decl) == 2 and decl[0] == "assum":
            check_term(decl[1])
        elif isinstance(decl, list) and len(decl) == 3 and decl[0] == "def":
            check_term(decl[1])
            check_term(decl[2])
        else:
            raise ValueError(f"not a context declaration: {decl!r:.80}")
    return v


def _check_pair(v: list[str]) -> list[str]:
    if len(v) != 2:
        raise ValueError("a pair of levels has two names")
    return v


def _check_constraint(v: list[str]) -> list[str]:
    if len(v) != 3 or v[1] not in ("<", "<=", "="):
        raise ValueError(f"not a universe constraint: {v!r:.80}")
    return v


Term = Annotated[Any, AfterValidator(check_term)]
LevelPair = Annotated[list[str], AfterValidator(_check_pair)]
UnivConstraint = Annotated[list[str], AfterValidator(_check_constraint)]
Sort = Annotated[Any, AfterValidator(check_sort)]
RelContext = Annotated[Any, AfterValidator(_check_context)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def _check_quality(v: str) -> str:
    if not _is_quality(v):
        raise ValueError(f"not a quality: {v!r:.80}")
    return v


Quality = Annotated[str, AfterValidator(_check_quality)]


class Univs(_Strict):
    polymorphic: bool
    size: int | None = None
    constraints: list[UnivConstraint] | None = None
    # Rocq 9.x, only where a polymorphic context binds sort variables: their number and the
    # elimination constraints [from, to] between qualities
    qualities: int | None = None
    elim_constraints: list[list[Quality]] | None = None

    @model_validator(mode="after")
    def _complete(self) -> Univs:
        if self.polymorphic != (self.size is not None and self.constraints is not None):
            raise ValueError("a polymorphic context has a size and constraints, else neither")
        if (self.qualities is None) != (self.elim_constraints is None) or (
            self.qualities is not None and not self.polymorphic
        ):
            raise ValueError("sort variables come with their constraints, in a polymorphic context")
        if any(len(c) != 2 for c in self.elim_constraints or []):
            raise ValueError("an elimination constraint is a pair of qualities")
        return self


class Flags(_Strict):
    check_guarded: bool
    check_positive: bool
    check_universes: bool
    allow_uip: bool
    impredicative_set: bool
    indices_matter: bool
    sprop_allowed: bool
    cumulative_sprop: bool


class Assumption(_Strict):
    """One assumption, by the kernel's constructor (`Printer.context_object`)."""

    kind: Literal["variable", "axiom", "positive", "guarded", "type_in_type", "uip"]
    name: str
    type: Term | None = None  # only for `axiom`

    @model_validator(mode="after")
    def _typed(self) -> Assumption:
        if (self.kind == "axiom") != (self.type is not None):
            raise ValueError("an axiom has a type, other assumptions none")
        return self


# `symbol`: a Rocq 9.x rewrite-rule symbol (no body; listed in `unsafe` as rewrite_rules)
Kind = Literal["def", "opaque", "undef", "primitive", "symbol"]


class Binder(_Strict):
    """A functor or module-type parameter that binds a target outside the environment: its
    canonical name (`Candidate.F.(1:X)`) and every object of its signature, by full name."""

    name: str
    fields: list[str]


class Target(_Strict):
    found: bool
    why: str | None = None
    user: str | None = None
    canonical: str | None = None
    kind: Kind | None = None
    type: Term | None = None
    univs: Univs | None = None
    assumptions: list[Assumption] | None = None
    section_vars: None = None
    # a field of a functor body or of a module type (not in the environment): where it is,
    # and the parameters that bind it, outermost first (absent for an environment constant)
    where: Literal["functor", "module_type"] | None = None
    binders: list[Binder] | None = None

    @model_validator(mode="after")
    def _complete(self) -> Target:
        given = [self.user, self.canonical, self.kind, self.type, self.univs, self.assumptions]
        if self.found and (self.why is not None or any(v is None for v in given)):
            raise ValueError("a found target has every field and no `why`")
        if not self.found and (self.why is None or any(v is not None for v in given)):
            raise ValueError("a target not found has only `why`")
        if (self.where is None) != (self.binders is None) or (self.where and not self.found):
            raise ValueError("a target outside the environment has `where` and `binders`")
        return self


class Constant(_Strict):
    kind: Kind
    type: Term
    body: Term | str | None
    univs: Univs
    flags: Flags

    @model_validator(mode="after")
    def _body(self) -> Constant:
        ok = {
            "def": isinstance(self.body, list),
            "primitive": isinstance(self.body, str),
            "opaque": self.body is None,
            "undef": self.body is None,
            "symbol": self.body is None,
        }[self.kind]
        if not ok:
            raise ValueError(f"a `{self.kind}` constant has the wrong body")
        return self


def _check_kelim(v: str) -> str:
    if v in ("SProp", "Prop", "Set", "Type") or (v.startswith("squashed:") and len(v) > 9):
        return v
    raise ValueError(f"not an elimination sort: {v!r:.80}")


def _check_relevance_word(v: str) -> str:
    if v in ("Relevant", "Irrelevant") or _is_quality(v):
        return v
    raise ValueError(f"not a relevance: {v!r:.80}")


class Packet(_Strict):
    name: str
    arity_ctxt: RelContext
    user_arity: Term | None
    sort: Sort
    consnames: list[str]
    user_lc: list[Term]
    nrealargs: int
    nrealdecls: int
    # Rocq 9.x: also "squashed:<qualities>" (a sort-polymorphic inductive squashed at some
    # instances) or "squashed:always:<qvar>"
    kelim: Annotated[str, AfterValidator(_check_kelim)]
    relevance: Annotated[str, AfterValidator(_check_relevance_word)]


class PrimRecord(_Strict):
    projections: list[str]
    types: list[Term]
    relevances: list[Annotated[str, AfterValidator(_check_relevance_word)]]


class Template(_Strict):
    """Coq 8.16's template universes (global levels)."""

    param_levels: list[str | None]
    levels: list[str]
    constraints: list[UnivConstraint]


class Template9(_Strict):
    """Rocq 9.x's template universes: bound in an abstract context of their own."""

    param_sorts: list[Sort | None]
    concl: Sort
    univs: Univs
    defaults: list[str]


class Inductive(_Strict):
    finite: Literal["Finite", "CoFinite", "BiFinite"]
    ntypes: int
    nparams: int
    nparams_rec: int
    params: RelContext
    record: Literal["fake"] | PrimRecord | None
    univs: Univs
    template: Template | Template9 | None
    variance: list[Literal["Irrelevant", "Covariant", "Invariant"]] | None
    private: bool | None
    flags: Flags
    packets: list[Packet]


class Closure(_Strict):
    constants: dict[str, Constant]
    inductives: dict[str, Inductive]


class Postulate(_Strict):
    type: Term
    univs: Univs


class Unsafe(_Strict):
    name: str
    what: str
    object: Literal["constant", "inductive", "rules"]  # rules: a 9.x rewrite-rule block


class ExternalUniverses(_Strict):
    """Levels of other libraries the graph relates directly to a level of this one, and
    the true pairs between them and this library's levels seen (either order)."""

    levels: list[str]
    le: list[LevelPair]
    lt: list[LevelPair]


class Universes(_Strict):
    levels: list[str]
    le: list[LevelPair]
    lt: list[LevelPair]
    external: ExternalUniverses


class Undumpable(_Strict):
    name: str
    why: str


class KernelDump(_Strict):
    """The `targets` dump (kdump-format.md, v1)."""

    format: Literal[1]
    dump: Literal["targets"]
    coq: str
    library: str
    flags: Flags
    targets: dict[str, Target]
    closure: Closure
    postulates: dict[str, Postulate]
    unsafe: list[Unsafe]
    universes: Universes
    undumpable: list[Undumpable]


class LibraryObject(_Strict):
    name: str
    where: Literal["module", "functor", "module_type", "functor_parameter"]
    object: Literal["constant", "inductive"]
    kind: Kind | None
    type: Term | None
    flags: Flags
    assumptions: list[Assumption] | None
    refs: list[str] | None

    @model_validator(mode="after")
    def _complete(self) -> LibraryObject:
        constant = self.object == "constant"
        if constant != (self.kind is not None and self.type is not None):
            raise ValueError("a constant has a kind and a type, an inductive neither")
        in_env = self.where == "module"
        if in_env and self.refs is not None:  # assumptions: null only if named undumpable
            raise ValueError("an object of the environment has assumptions, not refs")
        if not in_env and (self.assumptions is not None or (constant and self.refs is None)):
            raise ValueError("an object outside the environment has refs, no assumptions")
        return self


class LibraryDump(_Strict):
    """The `library` dump: every object of the library (for APE's compile pass)."""

    format: Literal[1]
    dump: Literal["library"]
    coq: str
    library: str
    flags: Flags
    objects: list[LibraryObject]
    unsafe: list[Unsafe]
    undumpable: list[Undumpable]

    @model_validator(mode="after")
    def _named(self) -> LibraryDump:
        named = {u.name for u in self.undumpable}
        for obj in self.objects:
            if obj.where == "module" and obj.assumptions is None and obj.name not in named:
                raise ValueError(f"{obj.name} has no assumptions and is not named undumpable")
        return self


# --- reading the framed output ------------------------------------------------------------
def framed_json(stdout: str, nonce: str) -> Any:
    """The one JSON object printed between this call's markers; KernelDumpError otherwise."""
    lines = stdout.splitlines()
    begin, end = f"FBDUMP-BEGIN {nonce}", f"FBDUMP-END {nonce}"
    if lines.count(begin) != 1 or lines.count(end) != 1:
        raise KernelDumpError(
            f"the dump's markers were seen {lines.count(begin)} and {lines.count(end)} times"
        )
    start, stop = lines.index(begin), lines.index(end)
    if stop != start + 2:
        raise KernelDumpError("the dump is not one line between its markers")
    try:
        return loads_dump(lines[start + 1])
    except RecursionError as exc:
        raise KernelDumpError("the dump nests deeper than this reader follows") from exc
    except ValueError as exc:
        raise KernelDumpError(f"the dump is not JSON: {exc}") from exc


# A numeral in a statement is a chain of `S` as deep as its value (`3000` is 6000 JSON
# levels), deeper than Python's default recursion limit, which json's C parser and encoder
# obey. Such a dump is parsed (or written) again in a thread of its own with a large stack
# and a raised limit (one at a time: the limit is the interpreter's).
DEEP_LIMIT = 400_000
_DEEP_STACK = 512 << 20
_deep_lock = threading.Lock()


def loads_dump(text: str) -> Any:
    """`json.loads` for a dump of any depth (a `RecursionError` is retried deep)."""
    try:
        return json.loads(text)
    except RecursionError:
        return _deep(json.loads, text)


def dumps_dump(data: Any) -> str:
    """`json.dumps` for a dump of any depth: the verifier caches the task's dump as a file."""
    try:
        return json.dumps(data)
    except RecursionError:
        return str(_deep(json.dumps, data))


def _deep(work: Any, arg: Any) -> Any:
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = work(arg)
        except BaseException as exc:  # handed to the caller's thread as is
            box["error"] = exc

    with _deep_lock:
        old_limit = sys.getrecursionlimit()
        old_stack = threading.stack_size(_DEEP_STACK)
        try:
            sys.setrecursionlimit(max(old_limit, DEEP_LIMIT))
            worker = threading.Thread(target=run, name="kdump-deep-json")
            worker.start()
        finally:
            threading.stack_size(old_stack)
        worker.join()
        sys.setrecursionlimit(old_limit)
    if "error" in box:
        raise box["error"]
    return box["value"]


def _validated(model: type[KernelDump] | type[LibraryDump], data: Any) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise KernelDumpError(
            f"the dump is malformed at {where or 'top'}: {first['msg']}"
        ) from None
    except RecursionError as exc:
        raise KernelDumpError("the dump nests deeper than this reader follows") from exc


def read_targets_dump(stdout: str, nonce: str, asked: Sequence[str] = ()) -> KernelDump:
    """The `targets` dump of `stdout`, checked; every asked name must have its entry."""
    dump: KernelDump = _validated(KernelDump, framed_json(stdout, nonce))
    missing = [n for n in asked if n not in dump.targets]
    if missing or (asked and len(dump.targets) != len(set(asked))):
        raise KernelDumpError(f"the dump does not answer exactly the names asked: {missing[:3]}")
    return dump


def read_library_dump(stdout: str, nonce: str) -> LibraryDump:
    result: LibraryDump = _validated(LibraryDump, framed_json(stdout, nonce))
    return result
