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

Fast path (no third file, see `same_statement`): one top-level target, and the candidate's
file is byte for byte the original's up to the end of the target's statement sentence as
coqc itself delimited it when it compiled the original (`-time` spans), followed by an
ASCII blank or the end of the file. coqc then ran the same sentences in the same state, so
the statement elaborated to the same type; the candidate's later text must hold no command
that abandons or renames that proof (`Abort`, `Reset`, `Save u`, `Defined u` ...) so that
its top-level `t` is the constant the statement opened.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_output import parse_messages, sentence_spans
from formalbench.backends.coq_queries import LOCAL_MODULE
from formalbench.backends.sandbox import ProcessOutcome, work_dir
from formalbench.core.records import CheckResult, CheckStatus, Diagnostic, Severity

ORIGINAL_MODULE = "Original"
CONTEXT_MODULE = "FbContext"
CHECK_MODULE = "FbIdentity"
_CONTEXT_IMPORT = f"Require Import {CONTEXT_MODULE}.\n"
SENTENCES = "sentences.json"  # coqc's sentence spans of Original.v, kept beside its .vo
_BLANKS = b" \t\n\r"
# Words that open a section or module: a target inside one gets its final type only at its
# `End` (section variables its proof uses are added), so the statement alone does not fix it.
_SCOPED = re.compile(rb"\b(Section|Module)\b")
# Commands that abandon a proof or close it under another name, letting a later `t` be a
# different statement: their mere word anywhere after the statement (comments included)
# turns the fast path off. Coq has no vernacular notations, so a command needs its keyword.
_UNDOING = re.compile(rb"\b(Abort|Reset|Restart|Undo|Back|BackTo|Save|Defined|Declare)\b")


@dataclass
class OriginalBuild:
    """The compiled original: the folder holding its `.vo` files, or why it failed."""

    folder: Path | None
    problem: str | None = None

    def sentences(self) -> list[tuple[int, int]] | None:
        """coqc's byte spans of the sentences of `Original.v` (None: not recorded)."""
        try:
            spans = json.loads((self.folder / SENTENCES).read_text())  # type: ignore[operator]
        except (OSError, ValueError, TypeError):
            return None
        return [(int(a), int(b)) for a, b in spans]


@dataclass
class IdentityReport:
    """The candidate's own check and, per target, why the kernel refused its identity."""

    candidate: CheckResult
    mismatches: dict[str, str] = field(default_factory=dict)  # target -> the kernel's reason
    checked: bool = False  # the third file ran (the candidate compiled)
    fast: bool = False  # identity shown by the byte-identical statement prefix (no third file)
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
        parts.append("sentences-1")  # the folder layout: Original.v and its sentence spans
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
                    outcome = self.backend.compile(work, module, text, timeout, ["-time"])
                    if outcome.status != CheckStatus.ok or outcome.returncode:
                        return OriginalBuild(None, _failure(module, outcome))
                size = len(steps[-1][1].encode("utf-8"))
                spans = sentence_spans(outcome.stdout, size)  # those of Original.v
                (work / SENTENCES).write_text(json.dumps(spans))
                for junk in work.glob("*.v*"):
                    if junk.suffix != ".vo" and junk.name != f"{ORIGINAL_MODULE}.v":
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
        starts: Mapping[str, int] | None = None,
    ) -> IdentityReport:
        """Compile the candidate (the backend's ordinary check, axioms included), then
        check with the kernel that each target's proof has the original's type. `starts`:
        where each target's declaration starts in `original` (a character index), which
        turns on the fast path (`same_statement`) for a single target."""
        started = time.perf_counter()
        limit = float(timeout if timeout is not None else self.backend.timeout)
        build = self.original(original, context, limit, replay)
        with work_dir("coq") as tmp:
            work = Path(tmp)
            if context is not None and build.folder is not None:
                shutil.copy(build.folder / f"{CONTEXT_MODULE}.vo", work)
            left = limit - (time.perf_counter() - started)
            compiled = prefix + split_source(candidate, context, replay)
            result = self.backend.check(
                compiled,
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
            start = _start_in_split(original, context, replay, targets, starts)
            if start is not None and same_statement(build, start, compiled, targets[0]):
                report.fast = True
                report.elapsed = time.perf_counter() - started
                return report
            shutil.copy(build.folder / f"{ORIGINAL_MODULE}.vo", work)
            text, lines = check_text(targets)
            left = limit - (time.perf_counter() - started)
            outcome = self.backend.compile(work, CHECK_MODULE, text, max(left, 0.1))
            report.checked = True
            report.mismatches = _mismatches(outcome, text, lines, targets)
        report.elapsed = time.perf_counter() - started
        return report


def _start_in_split(
    original: str,
    context: str | None,
    replay: str,
    targets: Sequence[str],
    starts: Mapping[str, int] | None,
) -> int | None:
    """Byte offset in `Original.v` of the single target's declaration (None: no fast path)."""
    if starts is None or len(targets) != 1 or "." in targets[0] or targets[0] not in starts:
        return None
    at = starts[targets[0]]
    if context is not None:
        if at < len(context):
            return None
        head = _CONTEXT_IMPORT + replay
        return len((head + original[len(context) : at]).encode("utf-8"))
    return len(original[:at].encode("utf-8"))


def same_statement(build: OriginalBuild, start: int, candidate: str, target: str) -> bool:
    """Whether the candidate's file provably states the target as `Original.v` does.

    `start` is where the target's declaration begins in `Original.v`; its statement sentence
    is the first sentence coqc ran that ends after it. The candidate's bytes must equal the
    original's up to that sentence's end, the next byte must be an ASCII blank or the end of
    the file (so coqc ended the sentence at the same place: `.` followed by anything else, a
    letter or U+00A0, reads on), no section or module may be open there (the final type
    would also depend on the proof), and nothing after it may abandon or rename the proof.
    """
    spans = build.sentences()
    if build.folder is None or spans is None:
        return False
    first, end = next(((a, b) for a, b in spans if b > start), (-1, -1))
    if first < start:  # no sentence, or `start` is not where a sentence begins
        return False
    try:
        theirs = (build.folder / f"{ORIGINAL_MODULE}.v").read_bytes()
    except OSError:
        return False
    ours = candidate.encode("utf-8")
    head = theirs[:end]
    if len(head) != end or not head.endswith(b".") or not ours.startswith(head):
        return False
    if not re.search(rb"(?<![\w'])" + re.escape(target.encode()) + rb"(?![\w'])", head[first:]):
        return False  # not the target's statement: the declaration was misplaced
    if len(ours) > end and ours[end] not in _BLANKS:
        return False
    return not _SCOPED.search(head) and not _UNDOING.search(ours[end:])


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
