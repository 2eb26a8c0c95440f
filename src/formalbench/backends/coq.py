"""Coq backend: each check is one `coqc` run on the source written as `Candidate.v`.

Why per-file coqc and not a warm session: coqc is the reference compiler, its positions
are exact, and a fresh process per check makes timeouts, memory caps and crashes simple and
isolated (one thread = one process = one throw-away directory, so checks are thread-safe).

Nothing is appended to the source, and `targets` are refused: the axioms of a Coq target
are never read in the candidate's own scope, where a notation, an abbreviation or an
unterminated last sentence can make a query answer for something else. They are read in a
process of ours that only `Require`s the compiled candidate (the verifier's kernel dump,
`checking/coq_kernel.py`; `coq_assumptions.library_assumptions` for other pipelines).

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

import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from formalbench.backends import coq_zygote
from formalbench.backends.base import Backend, gate
from formalbench.backends.coq_environment import ENVIRONMENT, environment_message
from formalbench.backends.coq_library import library_args, library_hash
from formalbench.backends.coq_output import (
    CoqMessage,
    is_exhaustion,
    parse_messages,
    sentence_spans,
)
from formalbench.backends.coq_project import BUILD_WORD, CoqProject, read_coq_project
from formalbench.backends.coq_queries import LOCAL_MODULE
from formalbench.backends.coq_source import (
    SourceMap,
    blank_comments_and_strings,
    hole_spans,
)
from formalbench.backends.sandbox import (
    ProcessOutcome,
    max_output_bytes,
    run_limited,
    scrubbed_env,
    work_dir,
)
from formalbench.core.errors import InputError
from formalbench.core.records import (
    CheckResult,
    CheckStatus,
    Diagnostic,
    Hole,
    Language,
    Severity,
    ToolchainInfo,
)
from formalbench.toolchains.prepare import prepare_for
from formalbench.toolchains.toolchain import INSTALL_HINT as INSTALL_HINT  # re-exported
from formalbench.toolchains.toolchain import Toolchain
from formalbench.toolchains.toolchain import resolve as resolve_toolchain

log = logging.getLogger(__name__)


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
        toolchain: str | Toolchain | None = None,
        zygote: bool | None = None,
    ) -> None:
        super().__init__(workers=workers, timeout=timeout)
        # `zygote`: compile through a warm fork server where the text allows it
        # (`coq_zygote.py`); None: FORMALBENCH_COQ_ZYGOTE decides (off by default)
        self.zygote = coq_zygote.enabled_by_default() if zygote is None else zygote
        # `toolchain`: a name (`rocq-9.2`, `host`) or a Toolchain; None, the default one
        # (`toolchains/toolchain.py`). `coqc` names the host's compiler (a stand-in in tests).
        self.toolchain = (
            toolchain
            if isinstance(toolchain, Toolchain)
            else resolve_toolchain(toolchain, coqc=coqc)
        )
        self.coqc = self.toolchain.program("coqc")
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
                # the toolchain's name and library versions too: a verdict cached on one
                # toolchain is never served for another
                self._version = f"coq {self.toolchain.version()} ({self.toolchain.key()})"
                self._version += f" amber-{library_hash()[:8]}"  # verdicts depend on it
                if self.project is not None:  # verdicts depend on its build too
                    self._version += (
                        f" project {self.project.root} {BUILD_WORD} {self.project.digest()}"
                    )
                if self.args:
                    self._version += " " + " ".join(self.args)
            return self._version

    def toolchain_info(self) -> ToolchainInfo:
        return self.toolchain.info()

    def prepare(self, text: str) -> tuple[str, list[str]]:
        """`text` as this toolchain's Coq must read it, and what was changed
        (`toolchains/prepare.py`, the one place that maps library names)."""
        return prepare_for(self.toolchain, text)

    def check(
        self,
        source: str,
        *,
        targets: Sequence[str] = (),
        timeout: float | None = None,
        workdir: Path | None = None,
    ) -> CheckResult:
        """`workdir` (used by `coq_kernel`): compile there, next to the `.vo` files it
        holds, and leave `Candidate.vo` behind; by default a throw-away directory."""
        if not isinstance(source, str):
            raise InputError(f"Coq source must be text, got {type(source).__name__}")
        if targets:
            raise InputError(
                "the Coq backend reports no axioms: a target's axioms are read by the "
                "kernel route (checking/coq_kernel.py), never in the candidate's scope"
            )
        limit = float(timeout if timeout is not None else self.timeout)
        started = time.perf_counter()
        body = source if not source or source.endswith("\n") else source + "\n"
        outcome = self._run(body, limit, workdir)
        result = self._read(outcome, SourceMap(source), SourceMap(body))
        result.prepared = self.prepare(body)[1]
        result.elapsed = time.perf_counter() - started
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
        self,
        work: Path,
        module: str,
        text: str,
        timeout: float,
        extra: Sequence[str] = (),
        *,
        zygote: bool | None = None,
    ) -> ProcessOutcome:
        """Write `text` as `<module>.v` in `work` and compile it there with coqc (limits on).

        Every coqc start passes here, so the gate is asked again: callers that compile their
        own files (the kernel route, BEq, preflight) cannot reach coqc around it. `zygote`
        (default: the backend's setting) False: cold, for a text compiled once (a task's
        original), which would only take a slot of the zygote pool."""
        text = self.prepare(text)[0]  # the same length: every offset coqc reports stands
        refused = gate(self, text)
        if refused is not None:
            said = "; ".join(d.message for d in refused.diagnostics) or "refused by the gate"
            return ProcessOutcome(CheckStatus.refused, None, "", said, 0.0)
        path = work / f"{module}.v"
        path.write_bytes(text.encode("utf-8"))
        # The shipped library (backends/coq_library.py), compiled on first use.
        library = library_args(self.toolchain, text)
        argv = [self.coqc, "-q", *extra, *library, *self.args, path.name]
        if (self.zygote if zygote is None else zygote) and module == LOCAL_MODULE:
            outcome = self._zygote_compile(work, text, timeout, argv[1:-1], library)
            if outcome is not None:
                return outcome
        return run_limited(
            argv,
            cwd=work,
            timeout=timeout,
            memory_mb=self.memory_mb,
            env=self.toolchain.env(scrubbed_env()),
            read_only=self.read_only(library),
            root=self.toolchain.sandbox_root,
        )

    def _zygote_compile(
        self, work: Path, text: str, timeout: float, args: list[str], library: Sequence[str]
    ) -> ProcessOutcome | None:
        """`text` compiled by a zygote of its libraries (`coq_zygote.py`), the outcome a
        cold coqc with `args` would give; None where it must be compiled cold."""
        key = coq_zygote.zygote_key(text)
        if key is None or not coq_zygote.supported(self.toolchain):
            return None
        try:
            zygote = coq_zygote.POOL.get(
                self.toolchain, "fb_zygote", [*args, *coq_zygote.key_args(key), "Candidate.v"],
                self.memory_mb, self.read_only(library), coq_zygote.placeholder,
            )  # fmt: skip
            return zygote.run({"Candidate.v": text.encode("utf-8")}, timeout, work)
        except coq_zygote.ZygoteUnavailable as why:
            log.info("compiled cold: %s", why)
            return None

    def read_only(self, library: Sequence[str] = ()) -> list[str]:
        """Folders a coqc/coqtop run reads and must not change: the project's, and for a
        provisioned toolchain (whose sandbox shows only its root, not the host's files)
        the compiled library folder in `library` (`-Q <folder> Formalbench`)."""
        folders = [str(p) for p in self.project.read_only] if self.project else []
        if not self.toolchain.is_host and len(library) >= 2:
            folders.append(library[1])
        if not self.toolchain.is_host:  # and the folders of the caller's own `-Q`/`-R`/`-I`
            # (BEq's statement libraries): the root shows no host folder unless bound
            for flag, value in zip(self.args, self.args[1:], strict=False):
                if flag in ("-Q", "-R", "-I") and Path(value).is_dir():
                    folders.append(str(Path(value).resolve()))
        return list(dict.fromkeys(folders))

    def _read(
        self, outcome: ProcessOutcome, source_map: SourceMap, file_map: SourceMap
    ) -> CheckResult:
        """Turn one run into a result (`file_map`: the text coqc read, a newline added)."""
        messages = parse_messages(outcome.stderr, file_map.line_starts)
        status = outcome.status
        if status != CheckStatus.timeout and any(map(is_exhaustion, messages)):
            status = CheckStatus.out_of_memory
        result = CheckResult(backend=self.name, status=status, detail=_detail(outcome, status))
        for message in messages:
            result.diagnostics.append(self._tag_environment(self._place(message, source_map)))
        result.holes = _holes(outcome.stdout, source_map)
        if status == CheckStatus.ok and outcome.returncode and not result.errors:
            # coqc failed without a message we parse (a wrapper or sandbox that could not
            # start it, an uncaught exception): a failure all the same, never a compile
            tail = " ".join((outcome.stderr or outcome.stdout).split())[-300:]
            result.diagnostics.append(
                Diagnostic(
                    severity=Severity.error,
                    message=f"coqc exited with code {outcome.returncode}: {tail or 'no message'}",
                )
            )
        if outcome.truncated:  # what was cut may hold an error or a hole: never a pass
            result.diagnostics.append(
                Diagnostic(
                    severity=Severity.error,
                    message=f"coqc printed more than {max_output_bytes()} bytes on one stream; "
                    "the rest was not read, so the check cannot be trusted",
                )
            )
        return result

    def _tag_environment(self, diagnostic: Diagnostic) -> Diagnostic:
        """An error about a library that cannot be loaded here, tagged `environment` (the
        verifier's reason) and said as what is missing and how to fix it
        (`coq_environment`); any other diagnostic unchanged."""
        if diagnostic.severity != Severity.error or not ENVIRONMENT.search(diagnostic.message):
            return diagnostic
        message = environment_message(diagnostic.message, self.project, self.toolchain)
        return diagnostic.model_copy(update={"kind": "environment", "message": message})

    def _place(self, message: CoqMessage, source_map: SourceMap) -> Diagnostic:
        """A diagnostic positioned in the source (at its end for a message past it, such as
        coqc's end-of-file checks)."""
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
        else:
            line, column = source_map.last_position()
            end_line, end_column = line, column
        return Diagnostic(
            severity=message.severity,
            message=message.text,
            line=line,
            column=column,
            end_line=end_line,
            end_column=end_column,
            kind=message.tag,
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
