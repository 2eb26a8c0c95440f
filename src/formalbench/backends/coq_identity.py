"""Statement identity decided by Coq's kernel, not by a text comparison.

The original (holes as they are, `Admitted`) is compiled once as the library `Original` and
its `.vo` kept in a cache folder keyed by a hash of the assistant's version, its arguments
and the text, so that every later attempt at the task reuses it. The candidate is compiled
as `Candidate` (the ordinary check of `CoqBackend`, in a folder that does not hold
`Original.vo`, so the candidate cannot reach the original's admitted theorems), and then a
third file, with nothing but `Require Original Candidate.` (no `Import`: no notation, scope,
tactic notation, coercion or hint of either side is active there), asks for each target `t`

    Definition fb_identity_1 : ltac:(let T := type of @Original.t in exact T).
    Proof. exact_no_check (@Candidate.t). Defined.

The type is the original's *elaborated* type, taken from the kernel's term (no text of it is
parsed again), and `exact_no_check` puts exactly `@Candidate.t` as the body (no coercion or
implicit argument can be inserted), so the check at `Defined` is the kernel's conversion of
the two types, unfolding the preceding (transparent) definitions of each side. If it passes,
`fb_identity_1` is a proof of the original statement whose only dependencies are those of
`Candidate.t` (read by the ordinary check's `Print Assumptions`, which is why the third file
does not ask again: that query costs more than the rest of the check) and the original's own
statement.

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
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_output import parse_messages
from formalbench.backends.coq_queries import LOCAL_MODULE
from formalbench.backends.sandbox import ProcessOutcome, work_dir
from formalbench.core.records import CheckResult, CheckStatus, Diagnostic, Severity

ORIGINAL_MODULE = "Original"
CONTEXT_MODULE = "FbContext"
CHECK_MODULE = "FbIdentity"
_CONTEXT_IMPORT = f"Require Import {CONTEXT_MODULE}.\n"


@dataclass
class OriginalBuild:
    """The compiled original: the folder holding its `.vo` files, or why it failed."""

    folder: Path | None
    problem: str | None = None


@dataclass
class IdentityReport:
    """The candidate's own check and, per target, why the kernel refused its identity."""

    candidate: CheckResult
    mismatches: dict[str, str] = field(default_factory=dict)  # target -> the kernel's reason
    checked: bool = False  # the third file ran (the candidate compiled)
    elapsed: float = 0.0


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

    def __init__(self, backend: CoqBackend, cache_dir: Path | None = None) -> None:
        self.backend = backend
        self.cache_dir = cache_dir or process_cache_dir()
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
        targets: Sequence[str],
        *,
        context: str | None = None,
        replay: str = "",
        prefix: str = "",
        timeout: float | None = None,
    ) -> IdentityReport:
        """Compile the candidate (the backend's ordinary check, axioms included), then
        check with the kernel that each target's proof has the original's type."""
        started = time.perf_counter()
        limit = float(timeout if timeout is not None else self.backend.timeout)
        build = self.original(original, context, limit, replay)
        with work_dir("coq") as tmp:
            work = Path(tmp)
            if context is not None and build.folder is not None:
                shutil.copy(build.folder / f"{CONTEXT_MODULE}.vo", work)
            left = limit - (time.perf_counter() - started)
            result = self.backend.check(
                prefix + split_source(candidate, context, replay),
                targets=targets,
                timeout=left,
                workdir=work,
            )
            report = IdentityReport(result)
            if not result.compiled:
                return report
            if build.folder is None:
                problem = f"the original could not be compiled here: {build.problem}"
                report.mismatches = {t: problem for t in targets}
                return report
            shutil.copy(build.folder / f"{ORIGINAL_MODULE}.vo", work)
            text, lines = check_text(targets)
            left = limit - (time.perf_counter() - started)
            outcome = self.backend.compile(work, CHECK_MODULE, text, max(left, 0.1))
            report.checked = True
            report.mismatches = _mismatches(outcome, text, lines, targets)
        report.elapsed = time.perf_counter() - started
        return report


def check_text(targets: Sequence[str]) -> tuple[str, dict[int, str]]:
    """The third file, and the target each of its lines checks (1-based lines)."""
    out = [f"Require {ORIGINAL_MODULE} {LOCAL_MODULE}."]
    lines: dict[int, str] = {}
    for i, target in enumerate(targets, 1):
        out.append(
            f"Definition fb_identity_{i} : "
            f"ltac:(let T := type of @{ORIGINAL_MODULE}.{target} in exact T)."
        )
        lines[len(out)] = target
        out.append(f"Proof. exact_no_check (@{LOCAL_MODULE}.{target}). Defined.")
        lines[len(out)] = target
    return "\n".join(out) + "\n", lines


def _mismatches(
    outcome: ProcessOutcome, text: str, lines: dict[int, str], targets: Sequence[str]
) -> dict[str, str]:
    if outcome.status != CheckStatus.ok:
        why = f"the identity check ended with {outcome.status.value}"
        return {t: why for t in targets}
    starts = [0] + [i + 1 for i, ch in enumerate(text.encode("utf-8")) if ch == 0x0A]
    found: dict[str, str] = {}
    for message in parse_messages(outcome.stderr, starts):
        if message.severity != Severity.error:
            continue
        target = lines.get(message.line or 0)
        text_ = " ".join(message.text.split())[:400]
        if target is None:  # e.g. `Require` failed: nothing was checked
            return {t: f"the identity check failed: {text_}" for t in targets}
        found.setdefault(target, text_)
    if outcome.returncode and not found:
        return {t: "the identity check failed without a message" for t in targets}
    return found


def _failure(module: str, outcome: ProcessOutcome) -> str:
    if outcome.status != CheckStatus.ok:
        return f"{module}.v: coqc ended with {outcome.status.value}"
    first = next(
        (m.text for m in parse_messages(outcome.stderr, [0]) if m.severity == Severity.error),
        outcome.stderr.strip()[-300:],
    )
    return f"{module}.v: {' '.join(first.split())[:300]}"


def as_diagnostic(target: str, why: str) -> Diagnostic:
    return Diagnostic(
        severity=Severity.error,
        message=f"`{target}` does not prove the original statement: {why}",
        kind="statement_changed",
    )
