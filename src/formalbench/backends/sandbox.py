"""Run an untrusted checker process with a time limit, a memory ceiling and a clean environment.

Generated proof text is untrusted (Lean can run programs at elaboration time), so behind the
gate (`core/gate.py`) every assistant process gets, as a second line of defence:

* a throw-away working directory (`work_dir`, named `formalbench-KIND-PID-*`), which is also
  its HOME and TMPDIR; folders left by a formalbench that was SIGKILLed are removed by the
  next one (`sweep_stale`);
* an environment reduced to an allow-list of names (no model/API credentials);
* an address-space limit (`prlimit`) and a wall-clock limit enforced by killing its group;
* where `bwrap` (bubblewrap) works: a read-only view of the whole file system except that
  folder, and no network (own network namespace); see `isolation()`. Folders a check reads
  from the user (a Coq project's compiled libraries) are bound read-only once more, after
  the writable ones, so they stay read-only even inside FORMALBENCH_SANDBOX_WRITABLE;
* a tie to formalbench: `setpriv --pdeathsig KILL` makes the kernel kill it when formalbench
  dies, even by SIGKILL (no orphan); every live process is registered, so `stop_all` (the
  SIGINT/SIGTERM handler) kills them all at once and refuses to start new ones;
* captured output capped at `max_output_bytes()` per stream (the first bytes are kept, then
  a marker), read incrementally, so a text printing megabytes per sentence cannot make
  formalbench itself use gigabytes.

FORMALBENCH_SANDBOX=none turns the bwrap layer off (e.g. where a container forbids user
namespaces and the probe is slow); FORMALBENCH_SANDBOX_WRITABLE (`:`-separated folders)
leaves more folders writable (a tool that must write a cache; the tests' stand-ins);
FORMALBENCH_MAX_OUTPUT_BYTES sets the cap.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import functools
import os
import re
import resource
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from formalbench.core.records import CheckStatus

# Names a checker child may see: what locates programs, libraries and the user's locale, and
# the proof assistants' own settings. Everything else (model keys, tokens, cloud settings,
# personal variables such as MY_PASSWD) stays out; an allow-list cannot miss a credential
# under a name nobody thought of, as a deny-list does.
_ALLOWED_NAMES = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TERM",
        "TMPDIR", "TMP", "TEMP", "LEAN", "LAKE", "ELAN",
        "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH", "CAML_LD_LIBRARY_PATH",
    }
)  # fmt: skip
_ALLOWED_PREFIXES = ("LC_", "LEAN_", "LAKE_", "ELAN_", "COQ", "OCAML")
# Even an allowed family can hold a secret (Lake's LAKE_CACHE_KEY uploads to a cache).
_SECRET = re.compile(r"(KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH)", re.IGNORECASE)


def allowed_name(name: str) -> bool:
    """Whether a variable of this name may reach a checker process (see `scrubbed_env`)."""
    listed = name in _ALLOWED_NAMES or name.startswith(_ALLOWED_PREFIXES)
    return listed and not _SECRET.search(name)


def scrubbed_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allow-listed part of the current environment, then `extra` (trusted, taken as is)."""
    env = {k: v for k, v in os.environ.items() if allowed_name(k)}
    if extra:
        env.update(extra)
    return env


def memory_limiter(memory_mb: int | None) -> Callable[[], None] | None:
    """A preexec function that caps the child's address space (None: no cap)."""
    if not memory_mb:
        return None
    limit = memory_mb * 1024 * 1024

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def limited_argv(
    argv: Sequence[str], memory_mb: int | None
) -> tuple[list[str], Callable[[], None] | None]:
    """`argv` under an address-space cap, and the preexec function still needed (or None).

    util-linux's `prlimit` sets the limit in the child itself, which avoids `preexec_fn`:
    Python documents it as unsafe in a program with threads (the backend pools are threads),
    where a child can deadlock between fork and exec. Without `prlimit`, fall back to it.
    """
    if not memory_mb:
        return list(argv), None
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        return list(argv), memory_limiter(memory_mb)
    return [prlimit, f"--as={memory_mb * 1024 * 1024}", "--", *argv], None


DEFAULT_MAX_OUTPUT_BYTES = 8 * 1024 * 1024
TRUNCATED = "\n[formalbench: output cut here, over {limit} bytes]\n"


def max_output_bytes() -> int:
    """Bytes kept of each output stream; FORMALBENCH_MAX_OUTPUT_BYTES overrides the default."""
    raw = os.environ.get("FORMALBENCH_MAX_OUTPUT_BYTES", "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_MAX_OUTPUT_BYTES


@dataclass
class ProcessOutcome:
    status: CheckStatus  # ok (exited, any code), timeout, out_of_memory, crash (killed by signal)
    returncode: int | None
    stdout: str
    stderr: str
    elapsed: float
    truncated: bool = False  # an output stream went over max_output_bytes() and was cut


def kill_group(proc: subprocess.Popen) -> None:
    """Kill a child started with start_new_session=True together with its descendants."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


# --- every live assistant process, so that a stop kills them all -----------------------------
_live: set[subprocess.Popen] = set()
_live_lock = threading.Lock()
_stopping = threading.Event()


class Stopped(RuntimeError):
    """Raised by `register` once `stop_all` ran: no new assistant process may start."""


def register(proc: subprocess.Popen) -> None:
    """Track a started assistant process (killed by `stop_all` and at interpreter exit)."""
    with _live_lock:
        _live.add(proc)
    if _stopping.is_set():
        kill_group(proc)


def unregister(proc: subprocess.Popen) -> None:
    with _live_lock:
        _live.discard(proc)


def live_count() -> int:
    with _live_lock:
        return len(_live)


def stop_all() -> int:
    """Kill every live assistant process group and refuse new ones; returns how many."""
    _stopping.set()
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        kill_group(proc)
    return len(procs)


def stopping() -> bool:
    return _stopping.is_set()


def resume_starting() -> None:
    """Allow new processes again (a new run in the same interpreter)."""
    _stopping.clear()


atexit.register(stop_all)


# --- throw-away folders ---------------------------------------------------------------------
_PREFIX = "formalbench-"
_OWNED = re.compile(r"^formalbench-[a-z]+-(\d+)-")
_swept: set[str] = set()


def sweep_stale(folder: str | os.PathLike[str] | None = None) -> int:
    """Remove `formalbench-KIND-PID-*` folders whose process is gone; returns how many."""
    import psutil

    base = Path(folder if folder is not None else tempfile.gettempdir())
    removed = 0
    with contextlib.suppress(OSError):
        for entry in base.iterdir():
            m = _OWNED.match(entry.name)
            if m is None or not entry.is_dir() or int(m.group(1)) == os.getpid():
                continue
            if psutil.pid_exists(int(m.group(1))):
                continue
            shutil.rmtree(entry, ignore_errors=True)
            removed += 1
    return removed


@contextlib.contextmanager
def work_dir(kind: str) -> Iterator[str]:
    """A throw-away folder for one assistant run, removed afterwards (see the module doc)."""
    base = tempfile.gettempdir()
    if base not in _swept:
        _swept.add(base)
        sweep_stale(base)
    with tempfile.TemporaryDirectory(
        prefix=f"{_PREFIX}{kind}-{os.getpid()}-", ignore_cleanup_errors=True
    ) as folder:
        yield folder


def private_env(env: Mapping[str, str], folder: str) -> dict[str, str]:
    """`env` with HOME and the temporary-folder variables pointing into `folder`.

    elan finds its toolchains under HOME, so a real `~/.elan` is named as ELAN_HOME first."""
    home = os.path.join(os.path.abspath(folder), ".home")  # a child changes folder: absolute
    tmp = os.path.join(os.path.abspath(folder), ".tmp")
    for path in (home, tmp):
        os.makedirs(path, exist_ok=True)
    extra = {"HOME": home, "TMPDIR": tmp, "TMP": tmp, "TEMP": tmp}
    elan = os.path.join(os.path.expanduser("~"), ".elan")
    if "ELAN_HOME" not in env and os.path.isdir(elan):
        extra["ELAN_HOME"] = elan
    return {**env, **extra}


# --- isolation: bubblewrap and the parent-death signal -------------------------------------
@functools.cache
def _bwrap() -> str | None:
    """The `bwrap` program when a trial sandbox starts here, else None (probed once)."""
    if os.environ.get("FORMALBENCH_SANDBOX", "auto").strip().lower() == "none":
        return None
    found = shutil.which("bwrap")
    if found is None:
        return None
    with tempfile.TemporaryDirectory(prefix=f"{_PREFIX}probe-{os.getpid()}-") as folder:
        try:
            done = subprocess.run(
                [*_bwrap_args(found, folder), "true"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=30,
            )
        except (OSError, subprocess.SubprocessError):
            return None
    return found if done.returncode == 0 else None


def _writable() -> list[str]:
    """Extra folders left writable (FORMALBENCH_SANDBOX_WRITABLE, `:`-separated)."""
    raw = os.environ.get("FORMALBENCH_SANDBOX_WRITABLE", "")
    return [os.path.abspath(p) for p in raw.split(os.pathsep) if p and os.path.isdir(p)]


def _bwrap_args(bwrap: str, folder: str, read_only: Sequence[str] = ()) -> list[str]:
    extra = [arg for path in _writable() for arg in ("--bind", path, path)]
    kept = [arg for path in read_only for arg in ("--ro-bind", path, path)]
    return [
        bwrap,
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        *extra,
        *kept,
        "--bind", folder, folder,
        "--unshare-net",
        "--unshare-ipc",
        "--die-with-parent",
        "--chdir", folder,
        "--",
    ]  # fmt: skip


def isolation() -> str:
    """What confines an assistant process here: `bwrap` (read-only file system outside its
    folder, no network) or `none` (its own folder, HOME and TMPDIR only)."""
    return "bwrap" if _bwrap() is not None else "none"


def confined_argv(
    argv: Sequence[str],
    folder: str,
    memory_mb: int | None = None,
    *,
    isolate: bool = True,
    read_only: Sequence[str] = (),
    root: str | None = None,
) -> tuple[list[str], Callable[[], None] | None]:
    """`argv` tied to formalbench's life, memory-capped and, where possible, in bwrap (with
    the absolute folders `read_only` bound read-only); and the preexec function still needed
    (only without `prlimit`). `root`: a provisioned toolchain's folder, shown as `/` (always
    through bwrap, whatever FORMALBENCH_SANDBOX says: its programs cannot run otherwise;
    `toolchains/rootfs.py`), `argv[0]` a program of that root."""
    if root is not None:
        from formalbench.toolchains.rootfs import root_argv

        inside = root_argv(Path(root), argv, work=folder, writable=_writable(), read_only=read_only)
        command, preexec = limited_argv(inside, memory_mb)
        setpriv = shutil.which("setpriv")
        if setpriv is not None:
            command = [setpriv, "--pdeathsig", "KILL", "--", *command]
        return command, preexec
    inner = list(argv)
    program = shutil.which(inner[0]) if inner else None
    if program is None:  # as Popen would say, not a wrapper's exit code later
        raise FileNotFoundError(errno.ENOENT, "no such program", inner[0] if inner else "")
    inner[0] = program
    folder = os.path.abspath(folder)  # bwrap binds and enters absolute paths only
    bwrap = _bwrap() if isolate else None
    if bwrap is not None:
        inner = [*_bwrap_args(bwrap, str(folder), read_only), *inner]
    command, preexec = limited_argv(inner, memory_mb)
    setpriv = shutil.which("setpriv")
    if setpriv is not None:
        command = [setpriv, "--pdeathsig", "KILL", "--", *command]
    return command, preexec


def real_returncode(returncode: int | None, command: Sequence[str]) -> int | None:
    """The assistant's own return code: bwrap reports a child killed by signal N as exit
    128 + N, which must stay a death by signal (status `crash`), never a plain exit."""
    if returncode is None or returncode <= 128 or "--die-with-parent" not in command:
        return returncode
    return -(returncode - 128)


_abandon = threading.local()  # the event that, once set, ends this thread's process early


@contextlib.contextmanager
def abandon_on(event: threading.Event) -> Iterator[None]:
    """Within this block, a process `run_limited` starts in this thread is killed (within
    half a second) once `event` is set: a speculative check whose answer is no longer
    needed gives its slot back instead of running to its end."""
    _abandon.event = event
    try:
        yield
    finally:
        _abandon.event = None


def abandoned() -> bool:
    """Whether this thread's check was abandoned (`abandon_on`): its process was killed."""
    event = getattr(_abandon, "event", None)
    return event is not None and event.is_set()


def _read_capped(
    proc: subprocess.Popen, deadline: float, limit: int
) -> tuple[bytes, bytes, bool, bool]:
    """Read both pipes until they close or `deadline`: (stdout, stderr, truncated, timed out).

    Each stream keeps its first `limit` bytes; the rest is read and dropped, so the child
    never blocks on a full pipe and formalbench's memory stays bounded."""
    kept = {"out": bytearray(), "err": bytearray()}
    cut = False
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    sel.register(proc.stdout, selectors.EVENT_READ, "out")
    sel.register(proc.stderr, selectors.EVENT_READ, "err")
    timed_out = False
    try:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0 or abandoned():
                timed_out = True
                break
            for key, _ in sel.select(timeout=min(left, 0.5)):
                data = os.read(key.fd, 1 << 16)
                if not data:
                    sel.unregister(key.fileobj)
                    continue
                buf = kept[key.data]
                room = limit - len(buf)
                if room > 0:
                    buf += data[:room]
                if len(data) > max(room, 0):
                    cut = True
    finally:
        sel.close()
    return bytes(kept["out"]), bytes(kept["err"]), cut, timed_out


def _text(data: bytes, cut: bool, limit: int) -> str:
    text = data.decode("utf-8", errors="replace")
    return text + TRUNCATED.format(limit=limit) if cut and len(data) >= limit else text


_MAX_STDIN = 60_000  # under Linux's 64 KiB pipe buffer: written whole before reading


def run_probe(argv: Sequence[str], *, timeout: float = 60.0) -> ProcessOutcome:
    """A short question to a proof assistant (`coqc --print-version`, `coqc -where`), asked
    in the sandbox like every other start of it: a throw-away folder, the allow-listed
    environment, bwrap where it works, tied to formalbench's life (issue 29 item 1: a
    `coqc` a run folder named was once asked its version outside all of this)."""
    with work_dir("probe") as folder:
        return run_limited(argv, cwd=folder, timeout=timeout)


def run_limited(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    timeout: float,
    memory_mb: int | None = None,
    env: Mapping[str, str] | None = None,
    confine: bool = True,
    read_only: Sequence[str] = (),
    root: str | None = None,
    stdin_text: str | None = None,
) -> ProcessOutcome:
    """Run `argv` in the throw-away folder `cwd` to completion or until `timeout` seconds pass.

    The caller interprets an out-of-memory death from the tool's own output (allocators
    report it differently); a death by signal is reported as `crash`. The process group is
    killed on every way out of here (an exception or a stop included). `confine=False` is
    for a trusted command run in a folder of the user's (`lake env` in the Lean project): no
    bwrap and the user's own HOME, but still the parent-death tie, the registry and the cap.
    `read_only`: absolute folders the process reads and must not change (see the module doc).
    `root`: the provisioned toolchain whose program `argv[0]` is (see `confined_argv`).
    `stdin_text`: a short text given on standard input (at most one pipe buffer: it is written
    before the output is read), e.g. a build's smoke-test script for coqtop.
    """
    data = stdin_text.encode("utf-8") if stdin_text is not None else None
    if data is not None and len(data) > _MAX_STDIN:
        raise ValueError(f"stdin_text of {len(data)} bytes; at most {_MAX_STDIN}")
    start = time.perf_counter()
    if _stopping.is_set():
        return ProcessOutcome(CheckStatus.crash, None, "", "formalbench is stopping", 0.0)
    folder = str(cwd)
    command, preexec = confined_argv(
        argv, folder, memory_mb, isolate=confine, read_only=read_only, root=root
    )
    base_env = dict(env) if env is not None else scrubbed_env()
    limit = max_output_bytes()
    proc = subprocess.Popen(
        command,
        cwd=folder,
        env=private_env(base_env, folder) if confine else base_env,
        stdin=subprocess.DEVNULL if data is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=preexec,
    )
    register(proc)
    try:
        if data is not None and proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.write(data)
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.close()
        out, err, cut, timed_out = _read_capped(proc, time.monotonic() + timeout, limit)
        if timed_out:
            kill_group(proc)
        proc.wait()
    finally:
        kill_group(proc)  # descendants too, and the process itself on an exception
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        unregister(proc)
    elapsed = time.perf_counter() - start
    stdout, stderr = _text(out, cut, limit), _text(err, cut, limit)
    if timed_out:
        return ProcessOutcome(CheckStatus.timeout, None, stdout, stderr, elapsed, cut)
    status = CheckStatus.ok
    code = real_returncode(proc.returncode, command)
    if code is not None and code < 0:
        status = CheckStatus.crash
    return ProcessOutcome(status, code, stdout, stderr, elapsed, cut)
