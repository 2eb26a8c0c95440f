"""Which Coq a check runs on: the host's `coqc` on PATH, or a provisioned root run through bwrap.

A `Toolchain` knows the host path of each program (`program`), how to run a trusted command
in it (`run`: compiling formalbench's own library or plugin; outside the sandbox for the host,
in the root through bwrap for a provisioned one), which root the sandbox must show as `/`
(`sandbox_root`), and what a verdict records about it (`info`: name, Coq version, library
package versions, and `known_unsound`, the kernel soundness bugs that version has not fixed:
`known_bugs.py`, a view of the table in `backends/coq_known_bugs.py`).

Which one is used (`resolve`): the name given (`--toolchain`, a task's `toolchain` field),
else FORMALBENCH_TOOLCHAIN, else the newest installed toolchain (by Coq version), else
`host`. The test suite runs on that same default (tests/conftest.py exports it once, so every
test and subprocess agrees); tests marked `host` run on the host's coqc.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from formalbench.core.errors import InputError, ToolchainMissingError
from formalbench.core.records import Language, Task, ToolchainInfo
from formalbench.toolchains import manifest as manifests
from formalbench.toolchains import provision
from formalbench.toolchains.known_bugs import known_unsound_for
from formalbench.toolchains.rootfs import ENV_IN_ROOT, root_argv

ENV_VAR = "FORMALBENCH_TOOLCHAIN"
HOST = manifests.HOST
INSTALL_HINT = "install it with `apt-get install coq libcoq-coquelicot`"


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version)[:3])


def default_name() -> str:
    """The toolchain used when none is named (see the module doc)."""
    chosen = os.environ.get(ENV_VAR, "").strip()
    if chosen:
        return chosen
    found = [(provision.record_of(n) or {}, n) for n in provision.installed()]
    if found:
        return max(found, key=lambda item: _version_key(item[0].get("coq_version", "")))[1]
    return HOST


def host_version(coqc: str = "coqc") -> str | None:
    """The version of the host's `coqc` (a name on PATH or a path), None without one."""
    found = shutil.which(coqc)
    return None if found is None else _version_at(found)


@functools.cache
def _version_at(coqc: str) -> str | None:
    from formalbench.backends.sandbox import run_probe  # the sandbox, as for every coqc start

    try:
        done = run_probe([coqc, "--print-version"], timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    words = done.stdout.split()
    return words[0] if done.status.value == "ok" and done.returncode == 0 and words else None


@functools.cache
def _host_libraries() -> dict[str, str]:
    """Versions of the host's Debian Coq library packages (empty where dpkg is absent)."""
    if shutil.which("dpkg-query") is None:
        return {}
    try:
        done = subprocess.run(
            ["dpkg-query", "-W", "-f", "${db:Status-Abbrev} ${Package} ${Version}\n", "libcoq-*"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return {}
    rows = (line.split() for line in done.stdout.splitlines())
    return {row[1]: row[2] for row in rows if len(row) == 3 and row[0].startswith("ii")}


@dataclass
class Toolchain:
    """One Coq installation (see the module doc)."""

    name: str
    root: Path | None = None  # None: the host
    coqc_name: str = "coqc"  # the host's coqc (a path or a name on PATH)
    _version: str | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def is_host(self) -> bool:
        return self.root is None

    @property
    def sandbox_root(self) -> str | None:
        """The folder the sandbox shows as `/` (None: the host's own file system)."""
        return None if self.root is None else str(self.root)

    def program(self, tool: str) -> str:
        """The host path of program `tool` (`coqc`, `coqtop`, `coqchk`, `rocq`, `ocamlfind`)."""
        if self.root is None:
            name = self.coqc_name if tool == "coqc" else tool
            if tool != "coqc" and os.sep in self.coqc_name:  # beside the coqc given
                sibling = Path(self.coqc_name).with_name(tool)
                if sibling.exists():
                    return str(sibling)
            found = shutil.which(name)
            if found is None:
                raise ToolchainMissingError(f"`{name}` not found on PATH; {INSTALL_HINT}")
            return found
        path = self.root / "usr" / "bin" / tool
        if not path.exists():
            raise ToolchainMissingError(f"toolchain {self.name} has no program {tool}")
        return str(path)

    def env(self, env: dict[str, str]) -> dict[str, str]:
        """`env` fit for a program of this toolchain: a root gets its own PATH, and none of
        the host's COQ*/OCAML* settings (they name host folders)."""
        if self.root is None:
            return env
        kept = {k: v for k, v in env.items() if not k.startswith(("COQ", "OCAML", "CAML", "LD_"))}
        return {**kept, **ENV_IN_ROOT}

    def argv(
        self,
        argv: Sequence[str],
        *,
        work: str | os.PathLike[str],
        read_only: Sequence[str] = (),
    ) -> list[str]:
        """A trusted command line (formalbench's own files, not model output): as is on the
        host, through bwrap in the root, `work` writable."""
        if self.root is None:
            return list(argv)
        return root_argv(self.root, argv, work=work, read_only=read_only)

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str],
        timeout: float,
        read_only: Sequence[str] = (),
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run a command of this toolchain (building formalbench's library or plugin, asking
        `coqc -where`) to completion, text output captured; `subprocess.TimeoutExpired` past
        `timeout`. It runs in the sandbox like every start of a proof assistant (issue 29
        item 1): `cwd` is its one writable folder, the environment is allow-listed (no API
        keys), bwrap where it works (a provisioned root: always), tied to formalbench's
        life. The sandbox's HOME and TMPDIR folders made in `cwd` are removed afterwards."""
        from formalbench.backends.sandbox import run_limited, scrubbed_env

        folder = Path(cwd)
        made = [folder / n for n in (".home", ".tmp") if not (folder / n).exists()]
        try:
            done = run_limited(
                list(argv),
                cwd=folder,
                timeout=timeout,
                env=self.env(scrubbed_env()),
                read_only=read_only,
                root=self.sandbox_root,
                stdin_text=input,
            )
        finally:
            for path in made:
                shutil.rmtree(path, ignore_errors=True)
        if done.status.value == "timeout":
            raise subprocess.TimeoutExpired(list(argv), timeout, done.stdout, done.stderr)
        code = done.returncode if done.returncode is not None else -9
        return subprocess.CompletedProcess(list(argv), code, done.stdout, done.stderr)

    def version(self) -> str:
        """The Coq/Rocq version (`9.2.0`, `8.16.1`)."""
        with self._lock:
            if self._version is None:
                if self.root is None:
                    self._version = host_version(self.coqc_name) or "unknown"
                else:
                    record = provision.record_of(self.name) or {}
                    self._version = str(record.get("coq_version", "unknown"))
            return self._version

    def libraries(self) -> dict[str, str]:
        """The library packages (Debian names) and their versions."""
        if self.root is None:
            return dict(_host_libraries())
        record = provision.record_of(self.name) or {}
        return {k: v for k, v in (record.get("libraries") or {}).items() if v}

    def key(self) -> str:
        """What a cached verdict depends on: the name, the version and the library versions."""
        libs = ",".join(f"{k}={v}" for k, v in sorted(self.libraries().items()))
        return f"toolchain {self.name} coq {self.version()} [{libs}]"

    def info(self) -> ToolchainInfo:
        """What a verdict, a run and a report say about the toolchain (core/records)."""
        version = self.version()
        return ToolchainInfo(
            name=self.name,
            version=version,
            libraries=self.libraries(),
            known_unsound=list(known_unsound_for(version)),
        )


_cache: dict[tuple[str, str], Toolchain] = {}
_cache_lock = threading.Lock()


def resolve(name: str | None = None, *, coqc: str = "coqc") -> Toolchain:
    """The toolchain called `name` (None: the default, see the module doc); a
    ToolchainMissingError in one line when it is not installed. `coqc` (host only): the
    host compiler to use, a name on PATH or a path."""
    chosen = (name or "").strip() or (HOST if coqc != "coqc" else default_name())
    # a provisioned toolchain by its root: a changed cache folder (FORMALBENCH_CACHE) is
    # another installation, looked up again rather than answered from this memo
    key = (chosen, shutil.which(coqc) or coqc if chosen == HOST else str(provision.root_of(chosen)))
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    if chosen == HOST:
        if shutil.which(coqc) is None:
            raise ToolchainMissingError(f"Coq compiler `{coqc}` not found on PATH; {INSTALL_HINT}")
        found = Toolchain(HOST, None, coqc)
    else:
        manifests.load(chosen)  # an unknown name: the known ones, in one line
        if provision.record_of(chosen) is None:
            raise ToolchainMissingError(
                f"toolchain {chosen} is not installed: run `formalbench toolchain install "
                f"{chosen}` (or pass --toolchain host)"
            )
        found = Toolchain(chosen, provision.root_of(chosen))
    with _cache_lock:
        return _cache.setdefault(key, found)


def tasks_toolchain(tasks: Sequence[Task]) -> str | None:
    """The one toolchain the Coq tasks of a run name in their `toolchain` field, or None.

    Only a name formalbench knows (`toolchain list`) counts: the field is free text for other
    datasets ("coq 8.16"), which stays a note. One run has one backend, so tasks naming two
    toolchains are refused in one line (evaluate them apart, or give --toolchain)."""
    known = {*manifests.names(), HOST}
    coq = [t for t in tasks if t.language == Language.coq and t.toolchain]
    named = sorted({str(t.toolchain).strip() for t in coq} & known)
    if len(named) > 1:
        raise InputError(
            f"the tasks name {len(named)} toolchains ({', '.join(named)}); one run uses one: "
            "evaluate them apart, or give --toolchain"
        )
    return named[0] if named else None
