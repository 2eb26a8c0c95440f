"""The Coq verdict route: both sides compiled as `Candidate`, dumped, and compared as kernel objects.

The task's original (its holes `Admitted`) is compiled once, as `Candidate.v`, in a cache
folder keyed by (assistant version, its arguments and project, the text), and dumped once
(the dump kept beside its `.vo`). The candidate is compiled exactly as submitted, as
`Candidate.v` in a throw-away folder (the verdict's own compile: its diagnostics and holes),
then dumped by another process where none of its text runs (`backends.coq_dumps`: a warm
coqtop where one answers). Both libraries have the same name, so kernel names coincide: a
section, a functor application, a record or an inductive of the task is the same object on
both sides, and `checking.coq_compare` decides on the two dumps alone.

What the text still says: which declarations are the targets (the original's holes), which
of them lie in a section (the candidate's `Qed` may abstract fewer section variables than
the task's `Admitted`, `coq_compare.strengthened_match`), and the task's own last hole left
open gets its `Admitted` (`closed`). Nothing of the candidate's text is read here.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from formalbench.backends.base import Backend
from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_dumps import LIBRARY, Dumper, DumpFailed
from formalbench.backends.coq_kernel_dump_format import dumps_dump, loads_dump
from formalbench.backends.coq_output import parse_messages
from formalbench.backends.coq_session import pool_for, preload_sentences
from formalbench.backends.sandbox import work_dir
from formalbench.checking.coq_compare import compare, full
from formalbench.checking.coq_presets import allowed_names
from formalbench.checking.decls import COQ_CLOSERS, module_body_start
from formalbench.checking.holes import hole_decls
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import CheckResult, CheckStatus, Finding, Language, Reason, Severity

if TYPE_CHECKING:
    from formalbench.checking.coq_replay import ReplayBuild

# tasks' dumps kept parsed in memory: most are ~10 KB of JSON; a few MB where a statement
# holds a big unary numeral (`2^2014`); parsed, ~10x their text
PARSED_DUMPS, PARSED_DUMP_CHARS = 256, 32 << 20
_cache_guard = threading.Lock()
_cache_folder: list[Path] = []


def process_cache_dir() -> Path:
    """This process's folder of compiled originals and their dumps, shared by every verifier
    in it; named like the sandbox's throw-away folders, so it is removed at exit and swept
    by the next start after a SIGKILL."""
    with _cache_guard:
        if not _cache_folder:
            folder = Path(tempfile.mkdtemp(prefix=f"formalbench-coqcache-{os.getpid()}-"))
            atexit.register(shutil.rmtree, folder, ignore_errors=True)
            _cache_folder.append(folder)
        return _cache_folder[0]


@dataclass
class TaskBuild:
    """The task's original as compiled and dumped, or why it could not be."""

    dump: dict[str, Any] | None
    problem: str | None = None
    compiled: bool = True  # False: coqc refused the text (not a timeout, not the dump)


class KernelCheck:
    """The Coq verdict for one coqc backend: originals built and dumped once, candidates
    compiled and dumped per check, the two dumps compared."""

    def __init__(self, backend: CoqBackend, cache_dir: Path | None = None,
                 *, session: bool = True) -> None:  # fmt: skip
        self.backend = backend
        self.cache_dir = cache_dir or process_cache_dir()
        self.dumper = Dumper(backend, pool_for(backend) if session else None)
        self.kernel_checks = 0  # candidates whose dump was compared
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        # the tasks' dumps as read, by file: a steady stream of checks of the same tasks
        # parses each once (a statement with `2^2014` in `R` dumps 1.6 MB of nested JSON,
        # ~30 ms a parse); `coq_compare` never changes a dump
        self._read: OrderedDict[Path, tuple[int, dict[str, Any]]] = OrderedDict()

    def allowed(self, policy: VerifierPolicy) -> frozenset[str]:
        """The library axioms the policy allows (`coq_presets.allowed_names`): the names of
        its presets this backend's toolchain confirmed (checked once per toolchain), less
        those a project's load path could provide from its own files, and its explicit
        names (`--allow-axiom`, the task's `allowed_axioms`)."""
        explicit = policy.allowed_axioms or ()
        return allowed_names(
            policy.axiom_presets, explicit, self.backend.toolchain, self.backend.args
        )

    def _key(self, original: str) -> str:
        parts = [self.backend.version(), "\0".join(self.backend.args), original]
        return hashlib.sha256("\x01".join(parts).encode("utf-8")).hexdigest()[:32]

    def task(self, original: str, targets: Sequence[str], timeout: float) -> TaskBuild:
        """The original compiled as `Candidate` and dumped for `targets`, from the cache
        when an earlier check of the task built it."""
        key = self._key(original)
        folder = self.cache_dir / key
        names = sorted(full(t) for t in targets)
        dump_file = (
            folder / f"dump-{hashlib.sha256(' '.join(names).encode()).hexdigest()[:16]}.json"
        )
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if dump_file.is_file():
                return TaskBuild(self._parsed(dump_file))
            if (folder / "failed").is_file():
                return TaskBuild(None, (folder / "failed").read_text(encoding="utf-8"), False)
            started = time.monotonic()
            if not (folder / f"{LIBRARY}.vo").is_file():
                problem = self._build(original, folder, timeout)
                if problem is not None:
                    return TaskBuild(None, problem, not (folder / "failed").is_file())
            preload = preload_sentences(original, (LIBRARY,))
            try:
                found = self.dumper.dump(folder, names, _left(timeout, started), preload)
                more = sorted(set(found["postulates"]) - set(names))
                if more:
                    # asked again with its postulates, so that the closure holds what their
                    # types use too: a candidate may not change what an allowed postulate
                    # means (`Definition p := 0` under the task's `Axiom p_spec : p = 1`)
                    names = sorted({*names, *more})
                    found = self.dumper.dump(folder, names, _left(timeout, started), preload)
            except DumpFailed as why:
                return TaskBuild(None, f"the task's library cannot be dumped: {why}")
            tmp = dump_file.with_suffix(".tmp")
            text = dumps_dump(found)
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, dump_file)
            self._keep(dump_file, found, len(text))
            return TaskBuild(found)

    def _parsed(self, dump_file: Path) -> dict[str, Any]:
        """The task's dump in `dump_file` (written once, never changed), parsed once."""
        with self._guard:
            kept = self._read.get(dump_file)
            if kept is not None:
                self._read.move_to_end(dump_file)
                return kept[1]
        text = dump_file.read_text(encoding="utf-8")
        found: dict[str, Any] = loads_dump(text)
        self._keep(dump_file, found, len(text))
        return found

    def _keep(self, dump_file: Path, found: dict[str, Any], size: int) -> None:
        """Remember a parsed dump; the least recently used go past PARSED_DUMPS of them or
        PARSED_DUMP_CHARS of their text."""
        with self._guard:
            self._read[dump_file] = (size, found)
            total = sum(n for n, _ in self._read.values())
            while len(self._read) > 1 and (
                len(self._read) > PARSED_DUMPS or total > PARSED_DUMP_CHARS
            ):
                total -= self._read.popitem(last=False)[1][0]

    def _build(self, original: str, folder: Path, timeout: float) -> str | None:
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="build-", dir=self.cache_dir))
        try:
            # cold: an original is compiled once per task (a zygote would only hold a slot)
            outcome = self.backend.compile(work, LIBRARY, original, timeout, zygote=False)
            if outcome.status != CheckStatus.ok or outcome.returncode:
                problem = _failure(outcome.status, outcome.stderr)
                if outcome.status == CheckStatus.ok:  # a timeout may pass another time
                    folder.mkdir(parents=True, exist_ok=True)
                    (folder / "failed").write_text(problem, encoding="utf-8")
                return problem
            folder.mkdir(parents=True, exist_ok=True)
            os.replace(work / f"{LIBRARY}.vo", folder / f"{LIBRARY}.vo")
            return None
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def check(
        self,
        original: str,
        candidate: str,
        targets: Sequence[str],
        timeout: float | None,
        policy: VerifierPolicy,
        kept: ReplayBuild | None = None,
    ) -> tuple[CheckResult, list[Finding]]:
        """(the candidate's own compile, the findings of the comparison: changed
        statements, refused axioms and bypasses, or why nothing can be decided).
        `kept`: once the candidate compiled, its `Candidate.vo` is copied out of the
        throw-away work folder (`kept.library`: the coqchk replay's input, `coq_replay`),
        the very file this check compiled from the candidate's source and dumped.

        `timeout` twice over, apart: once for the trusted original's build and dump (the
        first check of a task only; later ones find it cached), once for the candidate's
        compile and dump, so that a slow original never shortens the candidate's limit
        (rocq-9.2 tensor.v `const_tK` timed out with 58 s of its 120 s left to it)."""
        started = time.monotonic()
        limit = float(timeout if timeout is not None else self.backend.timeout)
        original = closed(original)
        every = all_targets(original)
        build = self.task(original, every, limit)
        cut = through_last_target(original)
        if build.dump is None and not build.compiled and cut != original:
            # the whole task is its environment (a later lemma's universe constraints are
            # the candidate's too); where it does not compile with its holes admitted (a
            # section lemma admitted takes every section variable: `Check (t 1 eq_refl)`
            # after the section fails), the task through its last target
            original = cut
            build = self.task(original, every, _left(limit, started))
        started = time.monotonic()  # the candidate's own limit starts here
        with work_dir("coq") as tmp:
            work = Path(tmp)
            left = limit - (time.monotonic() - started)
            result = self.backend.check(candidate, timeout=left, workdir=work)
            if not result.compiled or result.status != CheckStatus.ok:
                return result, []
            if kept is not None:  # before the dump process runs in the folder
                kept.library = kept.keep(work)
            if build.dump is None:
                message = f"environment: the task's original cannot be compiled or dumped here: {build.problem}"
                return result, [Finding(reason=Reason.undecided, message=message[:500])]
            postulates = [
                p for p in build.dump.get("postulates", {}) if p not in set(map(full, every))
            ]
            names = sorted({*map(full, every), *postulates})
            left = max(limit - (time.monotonic() - started), 1.0)
            try:
                theirs = self.dumper.dump(
                    work, names, left, preload_sentences(original, (LIBRARY,))
                )
            except DumpFailed as why:
                message = f"undecided: the candidate's library cannot be dumped: {why}"
                return result, [Finding(reason=Reason.undecided, message=message[:500])]
        self.kernel_checks += 1
        outcome = compare(build.dump, theirs, every, policy, in_section=section_targets(original),
                          before=postulates_before(original), allowed=self.allowed(policy))  # fmt: skip
        axioms = {t: a for t, a in outcome.axioms.items() if t in targets}
        return result.model_copy(update={"axioms": axioms}), outcome.findings


def _left(timeout: float, started: float) -> float:
    return max(timeout - (time.monotonic() - started), 1.0)


def all_targets(original: str) -> list[str]:
    """The original's holes by name as its text qualifies them (`t`, `M.t`)."""
    decls, holes = hole_decls(original, Language.coq)
    return [d.name for d in decls if d.index in holes and d.name]


def section_targets(original: str) -> frozenset[str]:
    """The targets declared inside a `Section` (open around them in the original's text)."""
    decls, holes = hole_decls(original, Language.coq)
    scopes: list[bool] = []  # per open scope: is it a section
    found = set()
    for d in decls:
        if d.index in holes and d.name and any(scopes):
            found.add(d.name)
        if d.kind == "Section" or (d.kind == "Module" and _module_opens(d)):
            scopes.append(d.kind == "Section")
        elif d.kind == "End" and scopes:
            scopes.pop()
    return frozenset(found)


_POSTULATING = frozenset(
    [
        "Axiom",
        "Axioms",
        "Parameter",
        "Parameters",
        "Conjecture",
        "Variable",
        "Variables",
        "Hypothesis",
        "Hypotheses",
        "Context",
    ]
)
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_']*$")


def postulates_before(original: str) -> dict[str, tuple[frozenset[str], tuple[str, ...]]]:
    """For each target, the postulates the original declares before it, by full name, and
    the module prefixes (`Candidate.M.`) whose postulates come before it (`Declare Module M`,
    `Module M := F X`, whose fields a functor may postulate). A task's postulate may be used
    by a target only where the task declares it before that target: a candidate that moves a
    later `Parameter p : 1 = 2` above the target and uses it proves something the task does
    not let it assume. Read from the original's text (trusted); a postulate whose place the
    text does not show is available to no target."""
    decls, holes = hole_decls(original, Language.coq)
    names: set[str] = set()
    prefixes: list[str] = []
    scopes: list[str | None] = []  # module or module type name, or None for a section
    out: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {}
    for d in decls:
        texts = [t.text for t in d.tokens[d.head :]]
        path = [m for m in scopes if m]
        if d.index in holes and d.name:
            out[d.name] = (frozenset(names), tuple(prefixes))
        # a `Parameter` of a functor body or a module type too: the dump names it by its
        # path (`Candidate.F.p`, `Candidate.P.p`), and a target there may rest on it
        if d.kind in _POSTULATING and None not in scopes:
            for name in _declared(texts[1:]):
                names.add(".".join([LIBRARY, *path, name]))
        if d.kind == "Declare" and texts[1:2] == ["Module"] and len(texts) > 2:
            prefixes.append(".".join([LIBRARY, *path, texts[2]]) + ".")
        if d.kind == "Module" and len(texts) > 1:
            at = 2 if texts[1] in ("Import", "Export", "Type") else 1
            name = texts[at] if at < len(texts) else ""
            if texts[1] == "Type":
                if _module_opens(d):
                    scopes.append(name)
            elif _module_opens(d):
                scopes.append(name)
            else:
                prefixes.append(".".join([LIBRARY, *path, name]) + ".")
        elif d.kind == "Section":
            scopes.append(None)
        elif d.kind == "End" and scopes:
            scopes.pop()
    return out


def _declared(words: Sequence[str]) -> list[str]:
    """The names a postulate command declares: `p q : T`, `(p q : T) (r : U)`, `{A : Type}`."""
    found: list[str] = []
    depth = 0
    before_colon = True
    for w in words:
        if w in ("(", "{", "["):
            depth += 1
            before_colon = True
        elif w in (")", "}", "]"):
            depth -= 1
        elif w == ":" and depth <= 1:
            before_colon = False
        elif before_colon and depth <= 1 and _IDENT.match(w):
            found.append(w)
        if w == "." and depth == 0:
            break
    return found


def _module_opens(d: Any) -> bool:
    """`Module M.` or `Module F (X : T) <: S.` opens a scope; `Module M := F X.` does not
    (a `:=` inside a parameter's type or of a signature's `with Module E := X` does not
    count: `decls.module_body_start`)."""
    return module_body_start(d.tokens) is None


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
    what comes after cannot change a target's type or what it may rest on, and it may no
    longer compile once a section lemma is admitted (it then takes every section variable:
    `Check (t 1 eq_refl)` after the section). Not cut inside a module checked against a
    signature (`Module F (X : A) <: T.`): its `End` needs the fields after the target."""
    decls, holes = hole_decls(original, Language.coq)
    last = max((i for i in holes if decls[i].name), default=-1)
    if last < 0 or last == len(decls) - 1:
        return original
    scopes: list[str] = []
    signed: list[bool] = []
    for d in decls[:last]:
        texts = [t.text for t in d.tokens[d.head :]]
        opens = d.kind == "Section" or (d.kind == "Module" and _module_opens(d))
        if opens and len(texts) > 1:
            signed.append(d.kind == "Module" and _signed(texts))
            at = 2 if d.kind == "Module" and texts[1] in ("Import", "Export", "Type") else 1
            scopes.append(texts[min(at, len(texts) - 1)])
        elif d.kind == "End" and scopes:
            scopes.pop()
            signed.pop()
    if any(signed):
        return original
    closing = "".join(f"End {name}.\n" for name in reversed(scopes))
    return original[: decls[last].end] + "\n" + closing


def _signed(texts: Sequence[str]) -> bool:
    """A module header with a signature (`: T` or `<: T`) outside its parameters."""
    depth = 0
    for text in texts:
        depth += {"(": 1, ")": -1}.get(text, 0)
        if text == ":" and depth == 0:
            return True
    return False


def _failure(status: CheckStatus, stderr: str) -> str:
    if status != CheckStatus.ok:
        return f"{LIBRARY}.v: coqc ended with {status.value}"
    first = next(
        (m.text for m in parse_messages(stderr, [0]) if m.severity == Severity.error),
        stderr.strip()[-300:],
    )
    return f"{LIBRARY}.v: {' '.join(first.split())[:300]}"


def kernel_check_for(backend: Backend | None, language: Language) -> KernelCheck | None:
    """The kernel route where the backend is a real coqc backend, else None."""
    if language == Language.coq and isinstance(backend, CoqBackend):
        return KernelCheck(backend)
    return None
