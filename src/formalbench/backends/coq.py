"""Coq backend: each check is one `coqc` run on the source written as `Candidate.v`.

Why per-file coqc and not a warm session: coqc is the reference compiler, its positions
are exact, and a fresh process per check makes timeouts, memory caps and crashes simple and
isolated (one thread = one process = one throw-away directory, so checks are thread-safe).

The backend appends queries after the source (see `coq_queries`): `Print Assumptions` for
each target and `Locate` for the names it prints, so axioms come back fully qualified
(`Candidate.foo` for anything the file itself assumes). If a name was not guessed in
advance, or a target does not exist, coqc is run again with the queries still owed (rare).

Status: `timeout` when the time limit hit; `out_of_memory` when coqc reports `out of
memory` (under RLIMIT_AS the OCaml runtime aborts with "Fatal error: out of memory") or
`Stack overflow` (both are resource exhaustion, not a fault of the proof text; the located
message is kept as a diagnostic); `crash` on any other death by signal.

A Coq project (`project_dir`, the `--coq-project` of the commands; `backends/coq_project.py`)
adds its `-R`/`-Q`/`-I`/`-arg` flags to every coqc run, its folders bound read-only in the
sandbox; the project is never built here, and the verdict cache key (`version`) names it and
a digest of its compiled files.

Holes: coqc is run with `-time`, which lists the byte span of every sentence it executed;
a sentence `Admitted.` / `Admit Obligations.` is one hole, and each `admit` / `give_up`
tactic inside an executed sentence is one. Goals are not available from coqc.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from formalbench.backends.base import Backend, gate
from formalbench.backends.coq_library import library_args, library_hash
from formalbench.backends.coq_output import (
    CoqMessage,
    is_exhaustion,
    parse_messages,
    sentence_spans,
)
from formalbench.backends.coq_project import CoqProject, read_coq_project
from formalbench.backends.coq_queries import (
    LIBRARY_AXIOMS,
    LOCAL_MODULE,
    Pending,
    Query,
    QueryScript,
    basename,
)
from formalbench.backends.coq_source import (
    SourceMap,
    blank_comments_and_strings,
    declared_names,
    hole_spans,
    is_qualid,
    word_occurs,
)
from formalbench.backends.sandbox import (
    ProcessOutcome,
    max_output_bytes,
    run_limited,
    scrubbed_env,
    work_dir,
)
from formalbench.core.errors import InputError, ToolchainMissingError
from formalbench.core.records import CheckResult, CheckStatus, Diagnostic, Hole, Language, Severity

# coqc's words when a `Require` cannot be met here: the library is not on the load path, or its
# `.vo` files were compiled by another coqc or against other dependencies.
_ENVIRONMENT = re.compile(
    r"Cannot find a physical path bound to logical path|Cannot find library|"
    r"Unable to locate library|makes inconsistent assumptions over library|"
    r"contains library \S+ and not library|has bad magic number|incompatible version",
)
ENVIRONMENT_HINT = (
    " (a library the file requires is not on coqc's load path here, or was compiled by "
    "another coqc: give its Coq project with --coq-project DIR, the folder of its _CoqProject, "
    "or the task's `coq_project` field)"
)

MAX_RUNS = 3  # first run + at most two for queries that could not be answered in it

INSTALL_HINT = "install it with `apt-get install coq libcoq-coquelicot`"


class CoqBackend(Backend):
    name = "coq"
    language = Language.coq

    def __init__(
        self,
        *,
        workers: int | None = None,
        timeout: float = 60.0,
        memory_mb: int | None = 4096,
        coqc: str = "coqc",
        args: Sequence[str] = (),
        project_dir: str | Path | None = None,
    ) -> None:
        super().__init__(workers=workers, timeout=timeout)
        found = shutil.which(coqc)
        if found is None:
            raise ToolchainMissingError(f"Coq compiler `{coqc}` not found on PATH; {INSTALL_HINT}")
        self.coqc = found
        self.memory_mb = memory_mb
        self.project: CoqProject | None = (
            read_coq_project(project_dir) if project_dir is not None else None
        )
        project_args = list(self.project.args) if self.project is not None else []
        self.args = [*project_args, *(str(a) for a in args)]
        self._version: str | None = None
        self._lock = threading.Lock()

    def version(self) -> str:
        with self._lock:
            if self._version is None:
                done = subprocess.run(
                    [self.coqc, "--print-version"], capture_output=True, text=True, timeout=60
                )
                words = done.stdout.split()
                self._version = f"coq {words[0]}" if words else "coq unknown"
                self._version += f" amber-{library_hash()[:8]}"  # verdicts depend on it
                if self.project is not None:  # verdicts depend on its build too
                    self._version += f" project {self.project.root} {self.project.digest()}"
                if self.args:
                    self._version += " " + " ".join(self.args)
            return self._version

    def check(
        self,
        source: str,
        *,
        targets: Sequence[str] = (),
        timeout: float | None = None,
        workdir: Path | None = None,
    ) -> CheckResult:
        """`workdir` (used by `coq_identity`): compile there, next to the `.vo` files it
        holds, and leave `Candidate.vo` behind; by default a throw-away directory."""
        if not isinstance(source, str):
            raise InputError(f"Coq source must be text, got {type(source).__name__}")
        for target in targets:
            if not isinstance(target, str) or not is_qualid(target):
                raise InputError(
                    f"target {target!r} is not a Coq identifier such as `foo` or `M.foo`"
                )
        limit = float(timeout if timeout is not None else self.timeout)
        started = time.perf_counter()
        body = source if not source or source.endswith("\n") else source + "\n"
        source_map = SourceMap(source)
        wanted = list(dict.fromkeys(targets))
        guesses = [*LIBRARY_AXIOMS, *declared_names(source), *(basename(t) for t in wanted)]
        pending = Pending(list(wanted), list(dict.fromkeys(guesses)) if wanted else [])
        pending.late = {t for t in wanted if not word_occurs(source, basename(t))}

        result = CheckResult(backend=self.name)
        asked: list[Query] | None = None
        for _ in range(MAX_RUNS):
            queries = pending.queries()
            if queries == asked:  # the last run answered nothing: do not repeat it
                break
            asked = queries
            script = QueryScript(queries, first_line=body.count("\n") + 1)
            text = body + script.text if queries else body
            outcome = self._run(text, limit - (time.perf_counter() - started), workdir)
            result = self._read(outcome, source_map, SourceMap(text), script, pending)
            if result.status != CheckStatus.ok or result.errors or not pending.queries():
                break
        result.elapsed = time.perf_counter() - started
        if result.status == CheckStatus.ok and not result.errors:
            result.axioms, problems = pending.qualified(wanted)
            result.diagnostics.extend(problems)
        result.diagnostics.extend(pending.failed)
        return result

    def run(self, text: str, timeout: float) -> ProcessOutcome:
        """coqc's raw outcome on `text` (stdout included), for callers that read what Coq
        prints (BEq's probes, operator trees); gated and sandboxed like every check."""
        return self._run(text, timeout)

    def _run(self, text: str, timeout: float, workdir: Path | None = None) -> ProcessOutcome:
        if timeout <= 0:  # the check's time went on earlier runs: nothing to start
            return ProcessOutcome(CheckStatus.timeout, None, "", "", 0.0)
        if workdir is not None:
            return self.compile(workdir, LOCAL_MODULE, text, timeout, ["-time"])
        with work_dir("coq") as work:
            return self.compile(Path(work), LOCAL_MODULE, text, timeout, ["-time"])

    def compile(
        self, work: Path, module: str, text: str, timeout: float, extra: Sequence[str] = ()
    ) -> ProcessOutcome:
        """Write `text` as `<module>.v` in `work` and compile it there with coqc (limits on).

        Every coqc start passes here, so the gate is asked again: callers that compile their
        own files (the kernel identity check, BEq, preflight) cannot reach coqc around it."""
        refused = gate(self, text)
        if refused is not None:
            said = "; ".join(d.message for d in refused.diagnostics) or "refused by the gate"
            return ProcessOutcome(CheckStatus.refused, None, "", said, 0.0)
        path = work / f"{module}.v"
        path.write_bytes(text.encode("utf-8"))
        # The shipped library (backends/coq_library.py), compiled on first use.
        argv = [self.coqc, "-q", *extra, *library_args(self.coqc, text), *self.args, path.name]
        return run_limited(
            argv,
            cwd=work,
            timeout=timeout,
            memory_mb=self.memory_mb,
            env=scrubbed_env(),
            read_only=[str(p) for p in self.project.read_only] if self.project else (),
        )

    def _read(
        self,
        outcome: ProcessOutcome,
        source_map: SourceMap,
        file_map: SourceMap,
        script: QueryScript,
        pending: Pending,
    ) -> CheckResult:
        """Turn one run into a result, and record in `pending` what its queries answered."""
        messages = parse_messages(outcome.stderr, file_map.line_starts)
        status = outcome.status
        if status != CheckStatus.timeout and any(map(is_exhaustion, messages)):
            status = CheckStatus.out_of_memory
        result = CheckResult(backend=self.name, status=status, detail=_detail(outcome, status))
        begun, outputs = script.split(outcome.stdout)
        for message in messages:
            diagnostic = self._place(message, source_map, script, begun, pending)
            if diagnostic is not None:
                result.diagnostics.append(_tag_environment(diagnostic))
        result.holes = _holes(outcome.stdout, source_map)
        pending.answer(script.queries, outputs)
        if outcome.truncated:  # what was cut may hold an error or a hole: never a pass
            result.diagnostics.append(
                Diagnostic(
                    severity=Severity.error,
                    message=f"coqc printed more than {max_output_bytes()} bytes on one stream; "
                    "the rest was not read, so the check cannot be trusted",
                )
            )
        return result

    def _place(
        self,
        message: CoqMessage,
        source_map: SourceMap,
        script: QueryScript,
        begun: bool,
        pending: Pending,
    ) -> Diagnostic | None:
        """A diagnostic positioned in the source, or None for a failed query (recorded)."""
        if (
            message.start is None
            or message.line is None
            or not message.file
            or not message.file.endswith(f"{LOCAL_MODULE}.v")
        ):
            return Diagnostic(
                severity=message.severity, message=message.text, file=message.file, kind=message.tag
            )
        if message.start < source_map.size:
            line, column = source_map.position(message.start)
            end_line, end_column = source_map.position(
                max(message.start, message.end or message.start)
            )
            return Diagnostic(
                severity=message.severity,
                message=message.text,
                line=line,
                column=column,
                end_line=end_line,
                end_column=end_column,
                kind=message.tag,
            )
        index = script.query_lines.get(message.line)
        if begun and index is not None and message.severity == Severity.error:
            pending.fail(script.queries[index], message.text)
            return None
        if begun and message.severity == Severity.warning:
            return None
        line, column = source_map.last_position()
        text = message.text
        if message.line == script.guard_line and "has not failed" in text:
            text = "the source ends inside an unfinished proof (no Qed, Defined or Admitted)"
        return Diagnostic(
            severity=message.severity,
            message=text,
            line=line,
            column=column,
            end_line=line,
            end_column=column,
            kind=message.tag,
        )


def _tag_environment(diagnostic: Diagnostic) -> Diagnostic:
    """An error about a library that cannot be loaded here, tagged `environment` (the
    verifier's reason) with a hint at the fix; any other diagnostic unchanged."""
    if diagnostic.severity != Severity.error or not _ENVIRONMENT.search(diagnostic.message):
        return diagnostic
    return diagnostic.model_copy(
        update={"kind": "environment", "message": diagnostic.message.rstrip() + ENVIRONMENT_HINT}
    )


def _holes(stdout: str, source_map: SourceMap) -> list[Hole]:
    clean = blank_comments_and_strings(source_map.data)
    holes = []
    for start, end in sentence_spans(stdout, source_map.size):
        for a, b in hole_spans(clean, start, end):
            line, column = source_map.position(a)
            end_line, end_column = source_map.position(b)
            holes.append(Hole(line=line, column=column, end_line=end_line, end_column=end_column))
    return holes


def _detail(outcome: ProcessOutcome, status: CheckStatus) -> str | None:
    if status == CheckStatus.ok:
        return None
    tail = (outcome.stderr or outcome.stdout)[-2000:].strip()
    if status == CheckStatus.timeout:
        return f"coqc stopped after {outcome.elapsed:.1f}s (time limit)"
    if status == CheckStatus.crash:
        return f"coqc died with signal {-(outcome.returncode or 0)}: {tail}"
    return tail or None
