"""`LeanBackend`: Lean 4 through the community REPL (pooled, the fast path) or `lean --json` per file.

Mode "auto" uses the REPL when the Lake project has a built REPL binary (its own, or that of
its `REPL` dependency) and per-file checks otherwise. No check runs inside the project: what
`lake env` sets (LEAN_PATH, the toolchain's folders) is read once here, and the REPL binary or
the toolchain's `lean` then runs in a throw-away folder with the allow-listed environment plus
those variables, so files written while elaborating never land in the user's project.
`repl_command` runs a REPL the user built (or a test stand-in) instead; it runs in a
throw-away folder too, so its arguments that name existing paths relative to `project_dir`
(else to the folder the backend was made in) are made absolute, and a `lake` command is
pointed at that folder with `--dir`; then no toolchain is needed. `version()` names the
toolchain and Mathlib revision of the project (part of every cache key), and `mismatch()`
says, in one sentence, when a task was made for other versions.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from formalbench.backends.base import Backend
from formalbench.backends.lean.axioms import validate_targets
from formalbench.backends.lean.filemode import check_file, lean_command
from formalbench.backends.lean.header import split_header
from formalbench.backends.lean.pool import ReplPool
from formalbench.backends.lean.repl_check import check_in_pool
from formalbench.backends.lean.toolchain import (
    INSTALL_HINT,
    Toolchain,
    check_project,
    discover,
    has_repl,
    lake_environment,
    mismatch_sentence,
    package_revision,
    repl_binary,
)
from formalbench.backends.sandbox import scrubbed_env
from formalbench.core.errors import InputError, ToolchainMissingError
from formalbench.core.records import CheckResult, Language

Mode = Literal["auto", "repl", "file"]


class LeanBackend(Backend):
    """Lean 4 checks; see the module docstring. Thread-safe; `workers` REPL processes at most."""

    name = "lean"
    # Lean commands appended to a checked text are elaborated and answered on their lines:
    # the verifier uses that to have Lean decide statement identity (checking/lean_identity).
    answers_queries = True
    language = Language.lean

    def __init__(
        self,
        *,
        project_dir: Path | None = None,
        mode: Mode = "auto",
        workers: int | None = None,
        timeout: float = 60.0,
        memory_mb: int | None = 8192,
        max_uses: int = 500,
        repl_command: Sequence[str] | None = None,
        header_timeout: float | None = None,
    ) -> None:
        super().__init__(workers=workers, timeout=timeout)
        if mode not in ("auto", "repl", "file"):
            raise InputError(f"Lean mode {mode!r} is not one of auto, repl, file")
        if timeout <= 0 or (header_timeout is not None and header_timeout <= 0):
            raise InputError("Lean timeouts must be positive numbers of seconds")
        if max_uses < 1:
            raise InputError(f"max_uses must be at least 1, not {max_uses}")
        self.memory_mb = memory_mb
        self.max_uses = max_uses
        self.header_timeout = header_timeout or max(300.0, timeout)
        self.repl_command = list(repl_command) if repl_command is not None else None
        self._repl_pool: ReplPool | None = None
        self._lean: str | None = None
        if self.repl_command is not None:
            if mode == "file":
                raise InputError(
                    "repl_command is for REPL mode; it cannot be used with mode='file'"
                )
            if not self.repl_command:
                raise InputError("repl_command is empty: give the program and its arguments")
            project = check_project(project_dir) if project_dir is not None else None
            self.toolchain = Toolchain(project, None, None)
            self.mode: Mode = "repl"
            argv = command_outside(self.repl_command, project or Path.cwd())
            self._env = scrubbed_env()
        else:
            self.toolchain = discover(project_dir, start=Path.cwd())
            project = self.toolchain.project_dir
            binary = repl_binary(project) if self.toolchain.lake else None
            if mode == "repl" and binary is None:
                raise ToolchainMissingError(_no_repl(project, bool(self.toolchain.lake)))
            self.mode = "repl" if binary is not None and mode != "file" else "file"
            lake_vars: dict[str, str] = {}
            if self.toolchain.lake and project is not None:
                lake_vars = lake_environment(self.toolchain.lake, project)
            self._env = scrubbed_env(lake_vars)
            if self.mode == "file":
                self._lean = lean_command(self.toolchain, lake_vars)  # fail now, not later
            argv = [str(binary)]
        if self.mode == "repl":
            self._repl_pool = ReplPool(
                argv, workers=self.workers, memory_mb=memory_mb, max_uses=max_uses, env=self._env
            )

    @property
    def lean_toolchain(self) -> str | None:
        """The project's `lean-toolchain` line, e.g. `leanprover/lean4:v4.24.0`."""
        return self.toolchain.toolchain

    @property
    def library_revision(self) -> str | None:
        """The Mathlib commit pinned in the project's `lake-manifest.json`."""
        return self.toolchain.library_revision

    def version(self) -> str:
        parts = [f"lean {self.lean_toolchain or 'unknown-toolchain'}"]
        if self.library_revision:
            parts.append(f"mathlib {self.library_revision}")
        if self.repl_command is not None:
            parts.append("repl " + " ".join(self.repl_command))
        return "; ".join(parts)

    def mismatch(self, toolchain: str | None, library_revision: str | None) -> str | None:
        """A sentence naming how a task's toolchain/Mathlib differ from this project's, or None."""
        found = package_revision(self.toolchain.project_dir)
        ours = (self.lean_toolchain, found[0] if found else None, found[1] if found else None)
        return mismatch_sentence(ours, toolchain, library_revision)

    def check(
        self, source: str, *, targets: Sequence[str] = (), timeout: float | None = None
    ) -> CheckResult:
        if not isinstance(source, str):
            raise InputError(f"Lean source must be text, not {type(source).__name__}")
        names = validate_targets(targets)
        limit = self.timeout if timeout is None else timeout
        if limit <= 0:
            raise InputError(f"timeout must be a positive number of seconds, not {limit}")
        if self._repl_pool is not None:
            return check_in_pool(
                self._repl_pool,
                split_header(source),
                names,
                timeout=limit,
                header_timeout=self.header_timeout,
                backend=self.name,
            )
        assert self._lean is not None
        return check_file(
            self._lean,
            source,
            names,
            env=self._env,
            timeout=limit,
            memory_mb=self.memory_mb,
            backend=self.name,
        )

    def pool_stats(self) -> dict[str, int]:
        """Process figures of the REPL pool (empty in per-file mode)."""
        return self._repl_pool.stats() if self._repl_pool is not None else {}

    def close(self) -> None:
        super().close()
        if self._repl_pool is not None:
            self._repl_pool.close()


def _no_repl(project: Path | None, lake: bool) -> str:
    """Why REPL mode cannot start, and what to do about it."""
    if lake and has_repl(project):
        return (
            f"the Lean project {project} depends on the REPL but its binary is not built: "
            "run `lake build repl` there (from Python, mode='file' checks without it)"
        )
    return (
        "Lean REPL mode needs `lake` and a Lake project that depends on "
        "leanprover-community/repl (add `require REPL from git "
        '"https://github.com/leanprover-community/repl"` and run `lake build repl`), '
        f"(from Python, repl_command= runs a REPL of your own); {INSTALL_HINT}"
    )


def command_outside(command: Sequence[str], base: Path) -> list[str]:
    """`command` made to run in a throw-away folder as it would have run in `base`.

    Arguments with a `/` that name an existing path under `base` (and a relative program
    path) become absolute; names without a `/` (programs on PATH, options, targets) stay.
    A `lake` program gets `--dir base`, since it looks for its lakefile where it runs.
    """
    argv = list(command)
    for i, arg in enumerate(argv):
        if os.sep not in arg or os.path.isabs(arg) or arg.startswith("-"):
            continue
        if i == 0 or (base / arg).exists():
            argv[i] = str(base / arg)
    rest = argv[1:]
    if Path(argv[0]).name == "lake" and not any(
        a in ("-d", "--dir") or a.startswith("--dir=") for a in rest
    ):
        argv[1:1] = ["--dir", str(base)]
    return argv
