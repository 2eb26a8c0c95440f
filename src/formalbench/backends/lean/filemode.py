"""Per-file mode: `lean --json FILE` with the environment `lake env` gives the project.

Simple and slow: every call pays the import of its header. The source, with the
`#print axioms` queries appended, is written to a throw-away folder, which is also where Lean
runs (never the user's project: code run while elaborating may write relative paths), with
the allow-listed environment plus Lake's variables (LEAN_PATH ...). The run has a wall-clock
limit and a private-resident-memory ceiling sampled with psutil (an address-space limit would
trip on Lean's large mappings of .olean files). A death by signal is a crash (Lean aborts on
a stack overflow), and an exit with a non-zero code but no error message becomes an error
diagnostic, so that a broken run can never look like a clean compile. `lean --json` reports
no goals, so each "declaration uses sorry" warning becomes a goal-less `Hole`.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from formalbench.backends.lean.axioms import append_axiom_queries, settle_messages
from formalbench.backends.lean.messages import holes_from_sorry_warnings, parse_json_output
from formalbench.backends.lean.process import OOM_WORDS, process_tree, tree_private_mb
from formalbench.backends.lean.toolchain import Toolchain, lean_binary
from formalbench.backends.sandbox import (
    ProcessOutcome,
    confined_argv,
    kill_group,
    max_output_bytes,
    private_env,
    real_returncode,
    register,
    scrubbed_env,
    unregister,
    work_dir,
)
from formalbench.core.errors import ToolchainMissingError
from formalbench.core.records import CheckResult, CheckStatus, Diagnostic, Severity


def run_watched(
    argv: Sequence[str],
    *,
    cwd: str | Path,
    timeout: float,
    memory_mb: int | None = None,
    poll_interval: float = 0.1,
    env: Mapping[str, str] | None = None,
) -> ProcessOutcome:
    """Run to completion, or kill the process group at `timeout` or past `memory_mb`."""
    start = time.perf_counter()
    command, _ = confined_argv(argv, str(cwd))  # memory is watched here, not capped by rlimit
    base_env = dict(env) if env is not None else scrubbed_env()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            command,
            cwd=cwd,
            env=private_env(base_env, str(cwd)),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        register(proc)
        try:
            status = _watch(proc, start, timeout, memory_mb, poll_interval)
        finally:
            kill_group(proc)
            unregister(proc)
        limit = max_output_bytes()  # the files are on disk; only this much comes into memory
        out.seek(0)
        err.seek(0)
        stdout = out.read(limit).decode("utf-8", errors="replace")
        stderr = err.read(limit).decode("utf-8", errors="replace")
    code = real_returncode(proc.returncode, command)
    if status == CheckStatus.ok and code is not None and code < 0:
        status = CheckStatus.crash
    if status == CheckStatus.crash and any(w in (stdout + stderr).lower() for w in OOM_WORDS):
        status = CheckStatus.out_of_memory
    return ProcessOutcome(status, code, stdout, stderr, time.perf_counter() - start)


def _watch(
    proc: subprocess.Popen, start: float, timeout: float, memory_mb: int | None, poll: float
) -> CheckStatus:
    """Wait for `proc`, killing its group past the deadline or the memory ceiling."""
    status = CheckStatus.ok
    while True:
        try:
            proc.wait(timeout=poll)
            break
        except subprocess.TimeoutExpired:
            pass
        if time.perf_counter() - start >= timeout:
            status = CheckStatus.timeout
        elif memory_mb and tree_private_mb(process_tree(proc.pid)) > memory_mb:
            status = CheckStatus.out_of_memory
        if status != CheckStatus.ok:
            kill_group(proc)
            proc.wait()
            break
    return status


def lean_command(toolchain: Toolchain, lake_vars: Mapping[str, str]) -> str:
    """The `lean` to run per file: the project's toolchain binary where Lake named one."""
    lean = lean_binary(dict(lake_vars), toolchain.lean)
    if lean is None:
        raise ToolchainMissingError(
            "per-file Lean checks need `lean` on PATH, or `lake` with a Lake project "
            "(give project_dir)"
        )
    return lean


def check_file(
    lean: str,
    source: str,
    targets: Sequence[str],
    *,
    env: Mapping[str, str],
    timeout: float,
    memory_mb: int | None,
    backend: str = "lean",
) -> CheckResult:
    """Compile one source with `lean --json` in a throw-away folder; see the module docstring."""
    queries = append_axiom_queries(source, targets)
    with work_dir("lean") as tmp:
        path = Path(tmp) / "Check.lean"
        path.write_text(queries.text, encoding="utf-8")
        outcome = run_watched(
            [lean, "--json", str(path)], cwd=tmp, timeout=timeout, memory_mb=memory_mb, env=env
        )
    parsed, other = parse_json_output(outcome.stdout)
    parsed = [d.model_copy(update={"file": None}) for d in parsed]
    diagnostics, axioms, notes = settle_messages(parsed, queries)
    stray = "\n".join([*other, outcome.stderr.strip()]).strip()
    if outcome.status != CheckStatus.ok:
        why = {
            CheckStatus.timeout: f"no result within {timeout:g} s",
            CheckStatus.out_of_memory: f"private resident memory over {memory_mb} MiB",
        }.get(outcome.status, f"lean died (code {outcome.returncode})")
        return CheckResult(
            backend=backend,
            status=outcome.status,
            diagnostics=diagnostics,
            elapsed=outcome.elapsed,
            detail=f"{why}: {stray[-2000:]}" if stray else why,
        )
    if outcome.returncode and not any(d.severity == Severity.error for d in diagnostics):
        message = f"lean exited with code {outcome.returncode}" + (
            f": {stray[-2000:]}" if stray else ""
        )
        diagnostics.append(Diagnostic(severity=Severity.error, message=message))
    return CheckResult(
        backend=backend,
        diagnostics=diagnostics,
        holes=holes_from_sorry_warnings(diagnostics),
        axioms=axioms,
        elapsed=outcome.elapsed,
        detail="; ".join(notes) or None,
    )
