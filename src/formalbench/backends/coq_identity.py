"""Statement identity and the axioms a target rests on, both decided by Coq in one file.

The original (holes as they are, `Admitted`) is compiled once as the library `Original` and
its `.vo` kept in a cache folder keyed by a hash of the assistant's version, its arguments
and the text, so that every later attempt at the task reuses it. The candidate is compiled
alone, exactly as submitted (nothing is appended to it, so an unterminated last sentence or
comment cannot swallow a query: the file must compile as it is), as the library `Candidate`,
in a folder that does not hold `Original.vo`. Then a third file, the *identity file*, holds
nothing but `Require Original Candidate.` (no `Import`: no notation, scope, abbreviation,
coercion, instance or hint of either side is active there) and, for each target `t`,

    Definition fb_identity_1 : ltac:(let T := type of @Original.t in exact T).
    Proof. exact (@Candidate.t). Defined.
    Print Assumptions fb_identity_1.

The type is the original's *elaborated* type, taken from the kernel's term (no text of it is
parsed again); `@Candidate.t` names the candidate's constant by its full path (nothing of the
candidate's scope can make it mean something else), and the kernel checks at `Defined` that
it has that type (conversion, unfolding the transparent definitions of each side; universe
levels of the two libraries are unified, so a candidate at least as general passes and one
that pins a level, `Set` for `Type`, does not). `fb_identity_1` is then a kernel-checked proof
of the original statement, and its `Print Assumptions` is the one list of axioms the verdict
reads, printed by full library paths (`Candidate.adm`, `Classical_Prop.classic`) and read with
a strict grammar (`coq_queries.read_assumptions`).

Two shapes need more than `exact`:
- a target inside a `Section`: the original's admitted constant takes every section variable
  declared before it, the candidate's proved one only those its statement and proof use; the
  body is then `fun <all variables> => Candidate.t <the ones it takes>` (built by `intros;
  eapply; eassumption`, checked by the kernel like any body);
- a statement about a value the task leaves open (`Definition step : nat -> nat. Admitted.`
  then `Theorem step_ok : step 1 = 2.`): in the original's type every such hole
  `Original.step` is replaced by `Candidate.step` (`pattern`, then beta) before the
  comparison; the value's own identity constant checks its signature.

Task-declared constants that conversion cannot identify (a `Parameter`/`Axiom`, an
`Inductive`, a `Record`, an `Instance`, a `Module` ...) must be the *same* constants on both
sides: the caller passes the original's text up to and including the last of them as
`context` (the candidate must start with exactly that text); it is compiled as the library
`FbContext`, and both sides are compiled as `Require Import FbContext.` followed by the rest
of their text, so `Original.t` and `Candidate.t` both speak of `FbContext.p`.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import re
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_output import parse_messages
from formalbench.backends.coq_queries import (
    LIBRARY_AXIOMS,
    LOCAL_MODULE,
    Located,
    Query,
    QueryScript,
    UnreadableOutput,
    basename,
    parse_locate,
    read_assumptions,
    resolve,
)
from formalbench.backends.coq_session import (
    CoqSession,
    SessionBroken,
    SessionPool,
    pool_for,
    preload_sentences,
)
from formalbench.backends.coq_source import SourceMap
from formalbench.backends.sandbox import ProcessOutcome, work_dir
from formalbench.core.records import CheckResult, CheckStatus, Severity

log = logging.getLogger(__name__)

ORIGINAL_MODULE = "Original"
CONTEXT_MODULE = "FbContext"
CHECK_MODULE = "FbIdentity"
_CONTEXT_IMPORT = f"Require Import {CONTEXT_MODULE}.\n"
_OWN = (ORIGINAL_MODULE, LOCAL_MODULE, CONTEXT_MODULE)  # libraries named by their first word
# The modules the identity file declares for functors (`<RESERVED>A1_1`: an argument,
# `<RESERVED>O1`/`<RESERVED>C1`: each side applied to them). The prefix is drawn afresh in
# each process, so no library a candidate can `Require` has a module of that name: a name
# printed with it is one of the identity file's own.
RESERVED = f"Fb{secrets.token_hex(5)}"


@dataclass(frozen=True)
class Instance:
    """A functor or a module type of the original that holds targets, as the identity file
    applies it: `path` as the original qualifies it (`F`, `M.F`); `module_type`: a module
    type (both sides declared as modules of it) rather than a functor (both sides applied);
    `params`: each parameter's module type as tokens, names by their full path (resolved by
    Coq in the original's scope, `checking.coq_functors`) and `#k` for the k-th argument."""

    path: str
    module_type: bool
    params: tuple[tuple[str, ...], ...]
    header: int = 0  # where the original's header starts (its scope is the one before it)
    # a module type's own `Parameter`/`Axiom` fields (names inside it): the candidate's are
    # made the original's (`with Definition p := <R>O1.p`), so both speak of the same ones
    fields: tuple[str, ...] = ()


def is_argument(name: str) -> bool:
    """Whether a printed name is a field of one of the identity file's declared arguments:
    a generic module of the original's parameter type, what the functor's statements are
    about, not an axiom of either side."""
    head = name.split(".", 1)[0]
    return re.fullmatch(rf"{RESERVED}A[0-9]+_[0-9]+", head) is not None


@dataclass(frozen=True)
class TargetPlan:
    """How one target is compared. `name` as the original qualifies it (`t`, `M.t`);
    `in_section`: declared inside a section (the candidate's constant may take fewer section
    variables); `values`: the value holes of the original declared before it and the
    definitions after the first of them (they may unfold to a hole), each `Original.h`
    replaced by `Candidate.h` in its type. `body`: not a target but such a definition,
    whose candidate must equal the original's body with the same replacement (a kernel
    `eq_refl`), the comparator's "value of a definition that is not a hole". `instance`:
    the target is a field of that functor or module type, compared on both sides'
    instances at the same declared arguments (`identity_text`)."""

    name: str
    in_section: bool = False
    values: tuple[str, ...] = ()
    body: bool = False
    instance: Instance | None = None  # a field of this functor or module type
    # a record of the original renamed side to side (`plans(..., unshared=True)`):
    # `scheme`: its `Scheme ... Induction` (Prop) compared like a target, which lists the
    # constructor's arguments, the fields and their types, in order; `record` (its
    # constructor and fields in order): each `Candidate` field projects its own argument
    scheme: bool = False
    record: tuple[str, ...] = ()


@dataclass
class OriginalBuild:
    """The compiled original: the folder holding its `.vo` files, or why it failed."""

    folder: Path | None
    problem: str | None = None


@dataclass
class IdentityReport:
    """The candidate's own compile and what the identity file decided.

    `mismatches`: target -> the kernel's reason its statement differs; `axioms`: target ->
    the full paths of the axioms its identity constant rests on; `undecided`: why nothing
    could be decided (the original does not compile here, the identity file's output could
    not be read ...), None when the identity file answered."""

    candidate: CheckResult
    mismatches: dict[str, str] = field(default_factory=dict)
    axioms: dict[str, list[str]] = field(default_factory=dict)
    undecided: str | None = None
    environment: bool = False  # `undecided` because the original does not compile here
    checked: bool = False  # the identity file ran
    elapsed: float = 0.0
    # a copy of the candidate's compiled library (the `keep` of `CoqIdentity.check`)
    library: Path | None = None


def split_source(text: str, context: str | None, replay: str = "") -> str:
    """The text compiled for one side: as it is, or `context` replaced by its library
    followed by `replay` (the context's own `Require`/`Import`/scope commands, which an
    import of the library does not carry over)."""
    if context is None:
        return text
    return _CONTEXT_IMPORT + replay + text[len(context) :]


_cache_guard = threading.Lock()
_cache_folder: list[Path] = []


def process_cache_dir() -> Path:
    """This process's folder of compiled originals, shared by every verifier in it.

    Named like the sandbox's throw-away folders (`formalbench-KIND-PID-*`), so that it is
    removed when formalbench exits and swept by the next start after a SIGKILL."""
    with _cache_guard:
        if not _cache_folder:
            folder = Path(tempfile.mkdtemp(prefix=f"formalbench-coqcache-{os.getpid()}-"))
            atexit.register(shutil.rmtree, folder, ignore_errors=True)
            _cache_folder.append(folder)
        return _cache_folder[0]


class CoqIdentity:
    """Compiles originals once (cached by hash) and checks candidates against them."""

    def __init__(
        self, backend: CoqBackend, cache_dir: Path | None = None, *, session: bool = True
    ) -> None:
        self.backend = backend
        self.cache_dir = cache_dir or process_cache_dir()
        # identity files go to a warm coqtop (`coq_session`) unless turned off
        self.sessions: SessionPool | None = pool_for(backend) if session else None
        self.session_checks = 0  # identity files a session answered
        self.session_fallbacks = 0  # identity files a session could not answer (one-shot)
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def _key(self, original: str, context: str | None) -> str:
        parts = [self.backend.version(), "\0".join(self.backend.args), context or "", original]
        return hashlib.sha256("\x01".join(parts).encode("utf-8")).hexdigest()[:32]

    def original(
        self, original: str, context: str | None, timeout: float, replay: str = ""
    ) -> OriginalBuild:
        """The original compiled as `Original` (and its context as `FbContext`), from the
        cache when an earlier attempt already built it."""
        key = self._key(original, (context or "") + "\0" + replay if context else None)
        folder = self.cache_dir / key
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if (folder / f"{ORIGINAL_MODULE}.vo").exists():
                return OriginalBuild(folder)
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            work = Path(tempfile.mkdtemp(prefix="build-", dir=self.cache_dir))
            try:
                steps = [(ORIGINAL_MODULE, split_source(original, context, replay))]
                if context is not None:
                    steps.insert(0, (CONTEXT_MODULE, context))
                for module, text in steps:
                    outcome = self.backend.compile(work, module, text, timeout)
                    if outcome.status != CheckStatus.ok or outcome.returncode:
                        return OriginalBuild(None, _failure(module, outcome))
                for junk in work.glob("*.v*"):
                    if junk.suffix != ".vo":
                        junk.unlink()
                try:
                    os.replace(work, folder)
                except OSError:  # another process built it meanwhile: use theirs
                    if not (folder / f"{ORIGINAL_MODULE}.vo").exists():
                        raise
            finally:
                shutil.rmtree(work, ignore_errors=True)
            return OriginalBuild(folder)

    def check(
        self,
        original: str,
        candidate: str,
        targets: Sequence[TargetPlan],
        *,
        context: str | None = None,
        replay: str = "",
        prefix: str = "",
        timeout: float | None = None,
        query_limit: float | None = None,
        keep: Callable[[Path], Path] | None = None,
    ) -> IdentityReport:
        """Compile the candidate alone (exactly its text: no query is appended), then decide
        in the identity file, per target, its statement and the axioms it rests on.
        `query_limit`: at most that many seconds for the identity file (a route tried first
        that may give up: its timeout is `undecided`, and the caller goes another way).
        `keep`: given the work folder once the candidate compiled, copies its compiled
        library out of it (the coqchk replay's input) and returns where (`report.library`)."""
        started = time.perf_counter()
        limit = float(timeout if timeout is not None else self.backend.timeout)
        build = self.original(original, context, limit, replay)
        if context is not None and build.folder is None:
            # no shared context to compile the candidate on: its own compile, then why
            report = IdentityReport(self.backend.check(prefix + candidate, timeout=limit))
            report.undecided = f"the original does not compile here: {build.problem}"
            report.environment = True
            return report
        with work_dir("coq") as tmp:
            work = Path(tmp)
            if context is not None and build.folder is not None:
                shutil.copy(build.folder / f"{CONTEXT_MODULE}.vo", work)
            left = limit - (time.perf_counter() - started)
            compiled = prefix + split_source(candidate, context, replay)
            result = self.backend.check(compiled, timeout=left, workdir=work)
            report = IdentityReport(result)
            if not result.compiled or result.status != CheckStatus.ok:
                return report
            if build.folder is None:
                report.undecided = f"the original does not compile here: {build.problem}"
                report.environment = True
                return report
            if keep is not None:  # before anything else is put beside it
                report.library = keep(work)
            shutil.copy(build.folder / f"{ORIGINAL_MODULE}.vo", work)
            left = limit - (time.perf_counter() - started)
            if query_limit is not None:
                left = min(left, query_limit)
            preload = preload_sentences(original, (*_OWN, CHECK_MODULE))
            self._decide(report, work, targets, max(left, 0.1), preload)
        report.elapsed = time.perf_counter() - started
        return report

    def _decide(
        self,
        report: IdentityReport,
        work: Path,
        targets: Sequence[TargetPlan],
        timeout: float,
        preload: Sequence[str] = (),
    ) -> None:
        """Run the identity file (twice at most: once more when an axiom's full path was not
        among the names located up front) and record what it says in `report`."""
        report.checked = True
        names = list(LIBRARY_AXIOMS)
        deadline = time.monotonic() + timeout
        for _ in range(2):
            warm = self._session_run(work, targets, names, deadline, preload)
            left = max(deadline - time.monotonic(), 0.0)
            run = warm or identity_run(self.backend, work, targets, names, left)
            report.mismatches, report.undecided = run.mismatches, run.undecided
            if run.undecided is not None or run.mismatches:
                return
            unknown = [p for ps in run.printed.values() for p in ps if run.path(p) is None]
            if not unknown or set(unknown) <= set(names):
                break
            names = sorted(set(names) | set(unknown))
        report.axioms = {t: [run.path(p) or p for p in ps] for t, ps in run.printed.items()}

    def _session_run(
        self,
        work: Path,
        targets: Sequence[TargetPlan],
        names: Sequence[str],
        deadline: float,
        preload: Sequence[str],
    ) -> IdentityRun | None:
        """The identity file played in a warm session (`coq_session`), or None where no
        session may answer it: sessions off, or the session broke (it is then killed and
        this file is compiled one-shot, as without sessions)."""
        if self.sessions is None or not self.sessions.usable:
            return None
        text, lines = identity_text(targets)
        subjects = {f"fb_identity_{i}": plan.name for i, plan in enumerate(targets, 1)}
        files = [work / f"{m}.vo" for m in (CONTEXT_MODULE, ORIGINAL_MODULE, LOCAL_MODULE)]
        try:
            with self.sessions.session(preload) as session:
                session.prepare(preload, deadline)
                run = session_query(
                    session,
                    [f for f in files if f.exists()],
                    text,
                    lines,
                    subjects,
                    names,
                    deadline,
                )
        except SessionBroken as why:
            log.info("coq session gave no answer (%s); the identity file runs one-shot", why)
            run = None
        if run is None:
            self.session_fallbacks += 1
        else:
            self.sessions.succeeded()
            self.session_checks += 1
        return run


@dataclass
class IdentityRun:
    """One run of the identity file: mismatches, printed axioms per target, Locate answers."""

    mismatches: dict[str, str] = field(default_factory=dict)
    printed: dict[str, list[str]] = field(default_factory=dict)
    located: dict[str, list[Located]] = field(default_factory=dict)  # basename or qualid -> Located
    undecided: str | None = None
    own: tuple[str, ...] = _OWN  # libraries whose names are printed with their first word

    def path(self, printed: str) -> str | None:
        """The full path of an axiom as the identity file printed it; the libraries of the
        task and the candidate are named by their first word (nothing is imported there, so
        a name from `Candidate` is always printed with it)."""
        if printed.split(".", 1)[0] in self.own or printed.startswith(RESERVED):
            return printed
        for key in (printed, basename(printed)):
            found = resolve(printed, self.located.get(key, []))
            if found is not None:
                return found
        return None


def identity_text(targets: Sequence[TargetPlan]) -> tuple[str, dict[int, str]]:
    """The identity file's declarations, and the target each of its lines checks.

    A target inside a functor or module type is compared on instances: its parameters are
    declared as generic modules of the original's parameter types (`Declare Module
    <RESERVED>A1 : T.`), and both sides are applied to the same ones (a module type: a
    module of it declared, whose proved fields keep their proofs), so `<RESERVED>O1.t` and
    `<RESERVED>C1.t` are constants again, about the same arguments. The candidate's
    application is a comparison line: a functor that does not take those arguments (another
    parameter type, one more parameter) is that target's mismatch."""
    out = [f"Require {ORIGINAL_MODULE} {LOCAL_MODULE}."]
    lines: dict[int, str] = {}
    named = _numbered(targets)
    done: set[Instance] = set()
    for plan in targets:
        if plan.instance is not None and plan.instance not in done:
            done.add(plan.instance)
            out += _instance(plan.instance, named[plan.instance])
            lines[len(out)] = plan.name  # the candidate's side comes last
    for i, plan in enumerate(targets, 1):
        if plan.record:
            out.append(f"Definition fb_identity_{i} : True.")
            out.append(f"Proof. {_fields(plan)} Defined.")
            lines[len(out) - 1] = lines[len(out)] = plan.name
            continue
        if plan.scheme:
            for side in (ORIGINAL_MODULE, LOCAL_MODULE):
                out.append(
                    f"Scheme fb_scheme_{side}_{i} := Induction for {side}.{plan.name} Sort Prop."
                )
                lines[len(out)] = plan.name
        out.append(f"Definition fb_identity_{i} : ltac:({_statement(plan, named, i)}).")
        lines[len(out)] = plan.name
        out.append(f"Proof. {_body(plan, named, i)}. Defined.")
        lines[len(out)] = plan.name
    return "\n".join(out) + "\n", lines


def _numbered(targets: Sequence[TargetPlan]) -> dict[Instance, int]:
    named: dict[Instance, int] = {}
    for plan in targets:
        if plan.instance is not None and plan.instance not in named:
            named[plan.instance] = len(named) + 1
    return named


def instance_sides(targets: Sequence[TargetPlan]) -> dict[str, str]:
    """The identity file's instance modules -> what they are: `<RESERVED>C1` is
    `Candidate.F` applied to the declared arguments (a postulate of it is the candidate's)."""
    out = {}
    for instance, k in _numbered(targets).items():
        out[f"{RESERVED}O{k}"] = f"{ORIGINAL_MODULE}.{instance.path}"
        out[f"{RESERVED}C{k}"] = f"{LOCAL_MODULE}.{instance.path}"
    return out


def _instance(instance: Instance, k: int) -> list[str]:
    """The declarations of instance `k`: its arguments, the original's side, the candidate's."""
    args = [f"{RESERVED}A{k}_{j + 1}" for j in range(len(instance.params))]
    out = []
    for j, param in enumerate(instance.params):
        words = [args[int(w[1:])] if w.startswith("#") else w for w in param]
        out.append(f"Declare Module {args[j]} : {' '.join(words)}.")
    applied = "".join(f" {a}" for a in args)
    original, candidate = f"{RESERVED}O{k}", f"{RESERVED}C{k}"
    if instance.module_type:
        shared = "".join(f" with Definition {f} := {original}.{f}" for f in instance.fields)
        out.append(f"Declare Module {original} : {ORIGINAL_MODULE}.{instance.path}{applied}.")
        out.append(f"Declare Module {candidate} : {LOCAL_MODULE}.{instance.path}{applied}{shared}.")
    else:
        out.append(f"Module {original} := {ORIGINAL_MODULE}.{instance.path}{applied}.")
        out.append(f"Module {candidate} := {LOCAL_MODULE}.{instance.path}{applied}.")
    return out


def _sides(plan: TargetPlan, named: Mapping[Instance, int]) -> tuple[str, str, str]:
    """The original's and the candidate's module holding the target, and its name there."""
    if plan.instance is None:
        return ORIGINAL_MODULE, LOCAL_MODULE, plan.name
    k = named[plan.instance]
    return f"{RESERVED}O{k}", f"{RESERVED}C{k}", plan.name[len(plan.instance.path) + 1 :]


_MOST_PARAMETERS = 12  # a record's parameters tried (its own and the section's it uses)


def _fields(plan: TargetPlan) -> str:
    """A proof of `True` that checks, in the kernel, that each field `f_k` the original
    names is, in the candidate, the projection of the constructor's k-th argument:
    `Candidate.f_k (Candidate.C p.. x1 .. xn) = x_k` by `eq_refl` for variables `p`, `x`
    (and that the record's type, its parameters and sort, is the original's)
    (taken from the type of `Candidate.C`), so a field renamed into another's place fails.
    The number of parameters is found by trying each count: only the right one applies
    the constructor fully (its type is then the record, not a product), and only the
    right one gives the field the record value as its last argument."""
    constructor, fields = plan.record[0], plan.record[1:]
    xs = " ".join(f"fb_x{k}" for k in range(1, len(fields) + 1))
    # the record's own type (its parameters, earlier records renamed, and its sort)
    own = TargetPlan(plan.name, values=plan.values)
    arity = (
        f"ltac:({_statement(own)}) = ltac:(let T := type of @{LOCAL_MODULE}.{plan.name} in exact T)"
    )
    steps = [f"pose (fb_s := eq_refl : {arity})."]
    # the original's side too: the order read from its text is checked, not assumed
    for side in (ORIGINAL_MODULE, LOCAL_MODULE):
        build = " | ".join(
            f"exact (@{side}.{constructor}{' _' * m} {xs})" for m in range(_MOST_PARAMETERS + 1)
        )
        steps += [
            f"assert (fb_h : ltac:(let T := type of @{side}.{constructor} in exact T)).",
            "{ intros.",
            f"do {len(fields)} (match goal with h : _ |- _ => revert h end).",
            f"intros {xs}.",
            f"pose (fb_b := ltac:(first [ {build} ])).",
        ]
        for k, name in enumerate(fields, 1):
            tries = " | ".join(
                f"exact (eq_refl : @{side}.{name}{' _' * m} fb_b = fb_x{k})"
                for m in range(_MOST_PARAMETERS + 1)
            )
            steps.append(f"pose (fb_e{k} := ltac:(first [ {tries} ])).")
        steps += ["exact fb_b. }", "clear fb_h."]
    return " ".join([*steps, "exact I."])


def _statement(
    plan: TargetPlan, named: Mapping[Instance, int] | None = None, index: int = 0
) -> str:
    """Ltac that builds the original's type of the target (for a `body` plan: the equation
    `Candidate.d = <Original.d unfolded once>`; for a `scheme` plan: the type of the
    original's induction scheme of the record), value holes replaced."""
    original, candidate, name = _sides(plan, named or {})
    if plan.scheme:
        ltac = f"let T := type of @fb_scheme_{ORIGINAL_MODULE}_{index} in "
    elif plan.body:
        ltac = f"let T := eval cbv delta [{original}.{name}] in (@{original}.{name}) in "
    else:
        ltac = f"let T := type of @{original}.{name} in "
    if plan.values:  # all at once: a later value's type may mention an earlier one
        olds = ", ".join(f"(@{ORIGINAL_MODULE}.{v})" for v in plan.values)
        news = " ".join(f"(@{LOCAL_MODULE}.{v})" for v in plan.values)
        holes = " _" * len(plan.values)
        ltac += (
            f"let T := eval pattern {olds} in T in "
            f"let T := lazymatch T with ?F{holes} => constr:(F {news}) end in "
            "let T := eval cbv beta in T in "
        )
    if plan.body:
        return ltac + f"exact (@{candidate}.{name} = T)"
    return ltac + "exact T"


def _body(plan: TargetPlan, named: Mapping[Instance, int] | None = None, index: int = 0) -> str:
    _, candidate, name = _sides(plan, named or {})
    if plan.scheme:
        return f"exact (@fb_scheme_{LOCAL_MODULE}_{index})"
    if plan.body:
        return "exact eq_refl"
    exact = f"exact (@{candidate}.{name})"
    if not plan.in_section:
        return exact
    return f"first [{exact} | intros; eapply (@{candidate}.{name}); eassumption]"


def identity_run(
    backend: CoqBackend,
    work: Path,
    targets: Sequence[TargetPlan],
    names: Sequence[str],
    timeout: float,
) -> IdentityRun:
    """Compile the identity file in `work` (which holds `Original.vo` and `Candidate.vo`):
    each target's identity constant, its `Print Assumptions`, and `Locate` of `names`."""
    text, lines = identity_text(targets)
    subjects = {f"fb_identity_{i}": plan.name for i, plan in enumerate(targets, 1)}
    return query_file(backend, work, CHECK_MODULE, text, lines, subjects, names, timeout)


def query_file(
    backend: CoqBackend,
    work: Path,
    module: str,
    text: str,
    lines: Mapping[int, str],
    subjects: Mapping[str, str],
    names: Sequence[str],
    timeout: float,
    own: tuple[str, ...] = _OWN,
) -> IdentityRun:
    """Compile `text` + `Print Assumptions` of each of `subjects` (constant -> the name the
    answer is filed under) + `Locate` of `names`, as `<module>.v` in `work`. An error on one
    of `lines` (line -> name) is that name's mismatch; any other error, an unanswered query
    or an answer outside the grammar leaves the run `undecided`."""
    queries, script = _queries(text, subjects, names)
    full = text + script.text
    outcome = backend.compile(work, module, full, timeout)
    run = IdentityRun(own=own)
    if outcome.status != CheckStatus.ok:
        run.undecided = f"{module}.v ended with {outcome.status.value}"
        return run
    for message in parse_messages(outcome.stderr, SourceMap(full).line_starts):
        if message.severity != Severity.error:
            continue
        said = " ".join(message.text.split())[:400]
        name = lines.get(message.line or 0)
        if name is None:
            run.undecided = f"{module}.v failed outside a comparison: {said}"
            return run
        run.mismatches.setdefault(name, said)
    if run.mismatches:
        return run
    if outcome.returncode:
        run.undecided = f"{module}.v failed without a message"
        return run
    return _answers(run, module, script, queries, subjects, outcome.stdout)


def _queries(
    text: str,
    subjects: Mapping[str, str],
    names: Sequence[str],
    verb: str = "Print Assumptions",
) -> tuple[list[Query], QueryScript]:
    """`Print Assumptions` (or `verb`) of each subject and `Locate` of each name, placed
    after `text`."""
    queries = [Query("assumptions", c, verb) for c in subjects]
    queries += [Query("locate", n) for n in names]
    return queries, QueryScript(queries, first_line=text.count("\n") + 1)


def _answers(
    run: IdentityRun,
    module: str,
    script: QueryScript,
    queries: Sequence[Query],
    subjects: Mapping[str, str],
    stdout: str,
) -> IdentityRun:
    """Read the queries' answers into `run`, strictly (see `query_file`)."""
    _, outputs = script.split(stdout)
    for index, query in enumerate(queries):
        if index not in outputs:
            run.undecided = f"{module}.v did not answer `{query.command}`"
            return run
        if query.kind == "locate":
            run.located[query.subject] = parse_locate(outputs[index], query.subject)
            continue
        name = subjects[query.subject]
        try:
            run.printed[name] = read_assumptions(outputs[index])
        except UnreadableOutput as problem:
            run.undecided = f"the axioms of `{name}` cannot be read: {problem}"
            return run
    return run


def session_query(
    session: CoqSession,
    files: Sequence[Path],
    text: str,
    lines: Mapping[int, str],
    subjects: Mapping[str, str],
    names: Sequence[str],
    deadline: float,
) -> IdentityRun | None:
    """`query_file` for the identity file, played in a warm session: the same text and the
    same queries, cut into parts at each change of the target its lines check, so that an
    error is that target's mismatch exactly when coqc would put it on one of its lines. As
    coqc stops at its first error, so is the first error here the only one read. None (the
    caller compiles the file one-shot) for an error outside a comparison or in the queries:
    those are `undecided` one-shot, with coqc's own message."""
    queries, script = _queries(text, subjects, names, session.assumptions_verb)
    groups: list[tuple[str | None, list[str]]] = []
    for number, line in enumerate(text.splitlines(), 1):
        name = lines.get(number)
        if groups and groups[-1][0] == name:
            groups[-1][1].append(line)
        else:
            groups.append((name, [line]))
    parts = ["\n".join(g) for _, g in groups] + [script.text]
    segments = session.run_check(files, parts, deadline)
    run = IdentityRun()
    for (name, _), segment in zip(groups, segments, strict=False):
        if not segment.errors:
            continue
        if name is None:
            return None
        run.mismatches[name] = segment.errors[0][:400]
        return run
    if segments[-1].errors:
        return None
    return _answers(run, CHECK_MODULE, script, queries, subjects, segments[-1].stdout)


def library_assumptions(
    backend: CoqBackend,
    folder: Path,
    library: str,
    declarations: Sequence[str],
    timeout: float,
) -> dict[str, list[str]]:
    """The axioms each declaration of a compiled library rests on, by full path, read the
    strict way (the public entry for other pipelines, e.g. APE answers).

    `folder` (a sandbox work folder, `sandbox.work_dir`) holds `<library>.vo` and the `.vo`
    files it needs; a query file there holds
    only `Require <library>.` (nothing imported) and `Print Assumptions <library>.<d>` for
    each declaration `d` (`t`, `M.t`). The library's own holes and postulates come back as
    `<library>.<name>` (an `Admitted` theorem is an axiom of its library); library axioms
    by their full path where `Locate` finds it. Raises `UnreadableOutput` with the reason
    when coqc's output cannot be read or a declaration does not exist."""
    text = f"Require {library}.\n"
    subjects = {f"{library}.{d}": d for d in declarations}
    names = list(LIBRARY_AXIOMS)
    for _ in range(2):
        run = query_file(
            backend, folder, "FbAssumptions", text, {}, subjects, names, timeout, (library,)
        )
        if run.undecided is not None:
            raise UnreadableOutput(run.undecided)
        unknown = {p for ps in run.printed.values() for p in ps if run.path(p) is None}
        if unknown <= set(names):
            break
        names = sorted(set(names) | unknown)
    return {d: [run.path(p) or p for p in ps] for d, ps in run.printed.items()}


def _failure(module: str, outcome: ProcessOutcome) -> str:
    if outcome.status != CheckStatus.ok:
        return f"{module}.v: coqc ended with {outcome.status.value}"
    first = next(
        (m.text for m in parse_messages(outcome.stderr, [0]) if m.severity == Severity.error),
        outcome.stderr.strip()[-300:],
    )
    return f"{module}.v: {' '.join(first.split())[:300]}"
