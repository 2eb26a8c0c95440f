"""The coqchk replay: a passing Coq candidate's compiled library checked once more by coqchk.

Why: coqc's kernel has bugs that let a file prove `False` with no axiom
(`backends/coq_known_bugs.py`). `coqchk` of the same release re-checks a library from its
`.vo` with its own checker, which has no bytecode VM and (partly) its own module code, so a
proof that rests on a VM bug or on some module-subtyping bugs is refused there. It is run
after every other check has passed, never before: it only ever turns a pass into a failure.

What it reads, and what it trusts:
- the `.vo` the verifier itself compiled from the candidate's source (never a file the
  candidate's text produced another way: the folder is the verifier's work folder, written
  only by that coqc run and the verifier's copies);
- only the candidate's library is checked (`-norec`); what it requires is loaded unchecked
  from trusted places only: Coq's own standard library, the shipped AMBER library, a Coq
  project's folders (the `-R`/`-Q` of `backends/coq_project.py`, bound read-only). The
  kernel route (`checking/coq_kernel.py`) compiles the candidate alone, so its
  `Candidate.vo` is the only file of the folder;
- it runs sandboxed like every assistant process (`sandbox.run_limited`: time and memory
  limits, no network, read-only file system but its own folder), and like the backend's
  coqc: in its provisioned toolchain's root through bwrap where it has one.

A refusal is one finding, `replay_failed`, with coqchk's own reason; a replay that does not
finish in its time is `timeout`, so a pass is never claimed without it. The caller decides
whether to run it (`VerifierPolicy.replay`): on by default for `check` and `eval`.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_library import library_args
from formalbench.backends.coq_queries import LOCAL_MODULE
from formalbench.backends.sandbox import run_limited, scrubbed_env
from formalbench.core.records import CheckStatus, Finding, Reason

# The coqc load-path flags coqchk understands (`-I` names OCaml plugins: coqchk loads none)
_LOAD_PATH = frozenset({"-R", "-Q"})
# A project's `-arg` flags that change the logic itself: coqchk must check under the same
# ones (it refuses a library compiled with `-impredicative-set` without it). coqchk's own
# `-bytecode-compiler yes` is never passed: without the VM is what makes it catch VM bugs.
_LOGIC = frozenset({"-impredicative-set", "-indices-matter"})


@dataclass
class ReplayBuild:
    """Where the verifier keeps the candidate's compiled library for the replay: `root` is
    a throw-away folder of the caller's; `library`, set by the route that compiled the
    candidate (`KernelCheck.check`), is the folder (under `root`) holding its
    `Candidate.vo`; None when no compile was kept (nothing to replay)."""

    root: Path
    library: Path | None = None
    kept: list[Path] = field(default_factory=list)

    def keep(self, work: Path) -> Path:
        """Copy the candidate's `.vo` the verifier compiled in `work` (nothing else) into a
        fresh folder under `root`; return it."""
        folder = Path(tempfile.mkdtemp(prefix="replay-", dir=self.root))
        if (work / f"{LOCAL_MODULE}.vo").is_file():
            shutil.copyfile(work / f"{LOCAL_MODULE}.vo", folder / f"{LOCAL_MODULE}.vo")
        self.kept.append(folder)
        return folder


def coqchk_for(backend: CoqBackend) -> str | None:
    """The coqchk of the backend's Coq: the one beside its coqc (same installation: the
    host's, or a provisioned toolchain's root), else None (never another Coq's checker
    found on PATH)."""
    sibling = Path(backend.coqc).with_name("coqchk")
    return str(sibling) if sibling.is_file() else None


def trusted_load_path(backend: CoqBackend) -> list[str]:
    """coqchk's flags from the backend's: the shipped library and the project's `-R`/`-Q`
    folders (the standard library is coqchk's own default), and the project's logic flags
    (`_LOGIC`); nothing else of coqc's reaches coqchk."""
    flags = list(library_args(backend.toolchain))
    args = list(backend.args)
    i = 0
    while i < len(args):
        if args[i] in _LOAD_PATH and i + 2 < len(args):
            flags += args[i : i + 3]
            i += 3
        else:
            if args[i] in _LOGIC and args[i] not in flags:
                flags.append(args[i])
            i += 1
    return flags


def replay_findings(
    backend: CoqBackend,
    folder: Path,
    timeout: float,
    library: str = LOCAL_MODULE,
    source: str | None = None,
) -> list[Finding]:
    """Check `library` (compiled by the verifier into `folder`) with coqchk: no finding when
    coqchk accepts it, else one finding that says why (see the module doc). `source`: the
    candidate's text, read only for its `Require`s: with the backend's zygotes on, a replay
    zygote of those libraries is asked first (`_zygote_accepts`)."""
    coqchk = coqchk_for(backend)
    if coqchk is None:
        return [
            Finding(
                reason=Reason.replay_failed,
                subject=library,
                message=f"no coqchk beside {backend.coqc}: the replay cannot run, so the pass "
                "is not confirmed (turn the replay off to accept coqc's kernel alone)",
            )
        ]
    if not (folder / f"{library}.vo").is_file():
        return [
            Finding(
                reason=Reason.replay_failed,
                subject=library,
                message="the verifier kept no compiled library of the candidate to replay",
            )
        ]
    flags = trusted_load_path(backend)
    if source is not None and _zygote_accepts(backend, folder, library, flags, source, timeout):
        return []
    argv = [coqchk, "-silent", "-norec", library, *flags, "-R", ".", ""]
    outcome = run_limited(  # as the backend runs coqc: its toolchain's root, if provisioned
        argv,
        cwd=folder,
        timeout=timeout,
        memory_mb=backend.memory_mb,
        env=backend.toolchain.env(scrubbed_env()),
        read_only=backend.read_only(flags[:3] if flags[:1] == ["-Q"] else ()),
        root=backend.toolchain.sandbox_root,
    )
    if outcome.status == CheckStatus.timeout:
        return [
            Finding(
                reason=Reason.timeout,
                subject=library,
                message=f"the coqchk replay did not finish in {timeout:.0f}s, so the pass is "
                "not confirmed",
            )
        ]
    if outcome.status == CheckStatus.ok and outcome.returncode == 0 and not outcome.truncated:
        return []  # `-silent`: coqchk prints nothing on success, and exits 0
    why = _why(outcome.stdout, outcome.stderr, outcome.returncode)
    message = f"coqchk refuses the candidate's compiled library: {why}"
    return [Finding(reason=Reason.replay_failed, subject=library, message=message[:500])]


def _zygote_accepts(
    backend: CoqBackend, folder: Path, library: str, flags: list[str], source: str,
    timeout: float,
) -> bool:  # fmt: skip
    """Whether a replay zygote (`coq_zygote`, fb_chk_zygote: coqchk's own `recheck_library`
    with the candidate's dependencies loaded at its start, admitted as `-norec` admits
    them) accepts the library. Only an acceptance is taken from it: a refusal, a timeout or
    a zygote that cannot serve runs the cold coqchk, whose verdict and message then stand."""
    from formalbench.backends import coq_zygote

    if not backend.zygote or library != LOCAL_MODULE:
        return False
    key = coq_zygote.zygote_key(backend.prepare(source)[0])
    if key is None or not coq_zygote.supported(backend.toolchain):
        return False
    stub_text = coq_zygote.stub_text(key)
    stub = "FbStub" + hashlib.sha256(stub_text.encode()).hexdigest()[:16]

    def setup(spool: Path) -> None:  # the stub compiled cold from our own text
        out = backend.compile(spool, stub, stub_text, 120)
        if out.status != CheckStatus.ok or out.returncode != 0:
            raise coq_zygote.ZygoteUnavailable(f"the replay stub did not compile: {out.stderr}")

    try:
        zygote = coq_zygote.POOL.get(
            backend.toolchain, "fb_chk_zygote", ["-silent", *flags, "-R", ".", "", "-stub", stub],
            backend.memory_mb, backend.read_only(flags[:3] if flags[:1] == ["-Q"] else ()), setup,
        )  # fmt: skip
        data = (folder / f"{library}.vo").read_bytes()
        outcome = zygote.run({f"{library}.vo": data}, timeout)
    except (coq_zygote.ZygoteUnavailable, OSError):
        return False
    return outcome.status == CheckStatus.ok and outcome.returncode == 0


_FATAL = re.compile(r"(Fatal Error|Error|Anomaly)\b.*", re.S)


def _why(stdout: str, stderr: str, returncode: int | None) -> str:
    """coqchk's own reason, on one line."""
    for text in (stderr, stdout):
        found = _FATAL.search(text)
        if found:
            return " ".join(found.group(0).split())[:400]
    tail = " ".join((stderr or stdout).split())[-300:]
    return f"exit code {returncode}: {tail}" if tail else f"exit code {returncode}"
