"""A warm `coqtop` that answers the verifier's kernel dumps, so a check does not pay a second
coqc start.

Why: the dump of a compiled `Candidate` (`coq_dumps`, `coq_kernel_dump`) needs a second Coq
process that loads again every library the candidate loads; on small real files that costs as
much as the candidate's own compile. Here one `coqtop -q -emacs` per worker thread keeps the
task's own libraries loaded, and each dump is played between a mark and a `Reset` to it:

    <the original's `Require`s, loaded once, below the mark (the *preloaded* libraries)>
    Definition fb_mark := 0.
    <the check's text: `Require Candidate.` and the plugin's dump command, with markers>
    Reset fb_mark.
    Print Libraries.

`Reset` is the document's backtrack: coqtop restores the whole state recorded before
`fb_mark` (kernel environment, universes, name tables, loaded libraries, options, the load
path), so `Candidate` is unloaded and the next check `Require`s its own file from disk again
(a library of the same name, other content, is read anew; its opaque proofs, which the
assumptions walk reads, are fetched again from the new file). What survives a `Reset` is
process state outside the document: plugins' compiled code (their registration is undone)
and caches keyed by file; `Print Libraries` after each `Reset` must list exactly the
libraries loaded at the mark, or the session is discarded.

What may differ from a one-shot dump process is only which *trusted* libraries (files on the
load path, never a file of a check: the session's folder holds no `.vo` between checks) are
loaded beside the check's own; a candidate can `Require` any of them itself, so they give
nothing a candidate could not get. The candidate's text never runs here (it ran when the
verifier compiled it, in another sandboxed process): the session only loads the kernel
objects of a `.vo` the verifier compiled itself. The plugin (`coq_assumptions_plugin`,
loaded at start by absolute path, hash checked) remembers the assumptions walk of the
preloaded libraries from one check to the next: they are frozen right after they load,
below the mark, never a library a check copied in (`Candidate` is another file at every
check), and the plugin trusts a frozen library only while the very body it froze is loaded
(fb_memo.ml).

Framing: each part of the text is preceded by `Locate fb_<nonce>_o<k>.` (stdout: `No object of
basename ...`) and a sentence whose only effect is a message on stderr, with a fresh nonce per
check; the exchange ends at the last pair (`_Markers`). On Rocq 9 the stderr marker is the
warning of `#[warning="unknown-option"] Set Fb_<nonce>_e<k>.` (the attribute makes it a
warning whatever a loaded library's `Global Set Warnings` says); on older Coqs, which lack
the attribute, the error of `Check fb_<nonce>_e<k>.` (`The reference ... was not found`, or
`The variable ...` while a proof is open). An error costs coqtop ~3 ms (it restores its
state), a warning ~0.3 ms, and an exchange has a pair per part. The stdout marker is read as
a line of its own with any whitespace inside (a library may set a narrow `Printing Width`).
Output that does not fit this frame, a timeout, an output over `max_output_bytes()`, or a
dead process: the session is killed (`SessionBroken`) and the caller asks the dump of a
one-shot process instead.

The process runs like every checker process (`sandbox.confined_argv`: bwrap, address-space
cap, parent-death signal) in a folder named like a throw-away work folder; it is registered
with the sandbox while it runs a check (so `stop_all` kills it and `live_count` counts it as
a check in flight) and killed by `close_all` at exit or by the parent-death signal.
FORMALBENCH_COQ_SESSION=0 turns sessions off (every dump is then a one-shot process).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import secrets
import selectors
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from formalbench.backends import coq_assumptions_plugin as assumptions_plugin
from formalbench.backends.base import gate
from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_library import library_args
from formalbench.backends.coq_queries import QUALID
from formalbench.backends.coq_source import blank_comments_and_strings
from formalbench.backends.sandbox import (
    abandoned,
    confined_argv,
    kill_group,
    max_output_bytes,
    private_env,
    register,
    scrubbed_env,
    stopping,
    unregister,
)
from formalbench.core.errors import ToolchainMissingError

log = logging.getLogger(__name__)

SWITCH = "FORMALBENCH_COQ_SESSION"
MAX_CHECKS = 200  # a session is replaced after this many checks (memory of a long run)
MAX_PRELOADS = 60  # ... or once it holds this many preload sentences
MAX_MEMORY_SHARE = 0.6  # ... or once it uses this share of the memory cap (next load may OOM)
IDLE_SECONDS = 120.0  # an idle session older than this is closed at the next acquire
MAX_FAILURES = 3  # consecutive broken sessions before sessions are off for this process

_PROMPT = re.compile(r"<prompt>[^\n]*?</prompt>")
# Rocq 9's coqtop -emacs wraps each warning as `<warning>\nWarning: ...</warning>`
_WARNING_TAGS = re.compile(r"<warning>\n?|</warning>")
_FETCHING = re.compile(
    rf"<infomsg>\s*Fetching\s+opaque\s+proofs\s+from\s+disk\s+for\s+{QUALID}\s*</infomsg>\n?"
)
_REQUIRE = re.compile(
    rf"(?<![\w'.])(?:From\s+(?P<root>{QUALID})\s+)?Require\s+(?:(?:Import|Export)\s+)?"
    rf"(?P<libs>(?:{QUALID}\s+)*{QUALID})\s*\.(?=\s|$)"
)
_BLOCK = re.compile(r"^(?:Toplevel input, characters \d+-\d+:|File \"[^\"\n]*\", line \d+)")


def enabled() -> bool:
    """Whether kernel dumps may go to a warm session (FORMALBENCH_COQ_SESSION, default on)."""
    value = os.environ.get(SWITCH, "1").strip().lower()
    return value not in ("0", "off", "no", "false")


def preload_sentences(original: str, skip: Sequence[str]) -> list[str]:
    """The `Require` sentences of a task's text without `Import`/`Export` (`From X Require
    A B.`), the libraries a session keeps loaded for it; none naming a library in `skip`
    (the check's own files). Only a speed hint: a sentence coqtop refuses is dropped."""
    clean = blank_comments_and_strings(original.encode("utf-8")).decode("utf-8", "replace")
    found: list[str] = []
    for match in _REQUIRE.finditer(clean):
        libs = match["libs"].split()
        if any(lib.split(".", 1)[0] in skip for lib in libs):
            continue
        head = f"From {match['root']} " if match["root"] else ""
        sentence = f"{head}Require {' '.join(libs)}."
        if sentence not in found:
            found.append(sentence)
    return found


class SessionBroken(RuntimeError):
    """The session cannot be trusted any more (it is killed); the caller falls back.
    `fault`: False when the session only ran out of time (a slow check, an abandoned one),
    which does not count towards turning sessions off."""

    def __init__(self, message: str, *, fault: bool = True) -> None:
        super().__init__(message)
        self.fault = fault


@dataclass
class Segment:
    """What one part of an exchange printed: stdout, and the error messages on stderr."""

    stdout: str
    errors: list[str]


def _blocks(text: str) -> list[tuple[str, str]]:
    """A stderr segment as (kind, message) blocks: `Toplevel input ...` (or `File ...`)
    headers, echo lines `> ...`, then `Error:`/`Warning:` and its message. Anything else
    is not the frame coqtop prints: SessionBroken."""
    blocks: list[tuple[str, str]] = []
    lines = text.strip("\n").splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        if not _BLOCK.match(lines[i]):
            raise SessionBroken(f"unexpected line on stderr: {lines[i][:120]!r}")
        i += 1
        while i < len(lines) and lines[i].startswith(">"):
            i += 1
        if i >= len(lines) or not lines[i].startswith(("Error:", "Warning:")):
            raise SessionBroken("a message without `Error:` or `Warning:`")
        kind = lines[i].split(":", 1)[0]
        said = [lines[i].split(":", 1)[1]]
        i += 1
        while i < len(lines) and lines[i].strip() and not _BLOCK.match(lines[i]):
            said.append(lines[i])
            i += 1
        blocks.append((kind, " ".join(" ".join(said).split())))
    return blocks


@dataclass(eq=False)
class CoqSession:
    """One coqtop process and the libraries it keeps loaded below its mark."""

    backend: CoqBackend
    coqtop: str
    folder: Path = field(init=False)
    proc: subprocess.Popen | None = field(default=None, init=False)
    preloaded: list[str] = field(default_factory=list, init=False)
    refused: set[str] = field(default_factory=set, init=False)  # preloads coqtop refused
    libraries: frozenset[str] | None = field(default=None, init=False)  # loaded at the mark
    brought: set[str] = field(default_factory=set, init=False)  # libraries checks copied in
    checks: int = field(default=0, init=False)
    last_used: float = field(default_factory=time.monotonic, init=False)
    plugin: Path | None = field(default=None, init=False)  # the assumptions plugin loaded

    def __post_init__(self) -> None:
        self.folder = Path(
            tempfile.mkdtemp(prefix=f"formalbench-coqsession-{os.getpid()}-")
        ).resolve()

    # --- process -------------------------------------------------------------------------
    def start(self) -> None:
        chain = self.backend.toolchain
        library = library_args(chain)
        self.plugin = assumptions_plugin.plugin_folder(chain)
        loads: list[str] = []
        if self.plugin is not None:
            try:  # its hash is checked again before every process that loads it
                loads = assumptions_plugin.coqtop_args(self.plugin)
            except assumptions_plugin.PluginTampered as exc:
                raise SessionBroken(str(exc)) from exc
        # the plugin's arguments first: on Rocq 9 its `-I` must precede any project's
        argv = [self.coqtop, *loads, "-q", "-emacs", *library, *self.backend.args]
        read_only = self.backend.read_only(library)
        if self.plugin is not None and not chain.is_host:  # its root shows no host file
            read_only.append(str(self.plugin))
        if stopping():
            raise SessionBroken("formalbench is stopping", fault=False)
        try:
            command, preexec = confined_argv(
                argv,
                str(self.folder),
                self.backend.memory_mb,
                read_only=read_only,
                root=chain.sandbox_root,
            )
            self.proc = subprocess.Popen(
                command,
                cwd=self.folder,
                env=private_env(chain.env(scrubbed_env()), str(self.folder)),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=preexec,
            )
        except OSError as exc:
            raise SessionBroken(f"coqtop could not start: {exc}") from exc
        register(self.proc)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            assert stream is not None
            os.set_blocking(stream.fileno(), False)

    @property
    def assumptions_verb(self) -> str:
        """`Print Assumptions`, or the plugin's memoizing twin where it loaded at start."""
        return "Print Assumptions" if self.plugin is None else assumptions_plugin.QUERY_VERB

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def cpu_seconds(self) -> float:
        """CPU (user + system) the session's processes have used so far (bwrap, coqtop)."""
        return 0.0 if self.proc is None else _tree_cpu(self.proc)

    def rss_bytes(self) -> int:
        if self.proc is None:
            return 0
        import psutil

        with contextlib.suppress(psutil.Error):
            top = psutil.Process(self.proc.pid)
            return sum(p.memory_info().rss for p in [top, *top.children(recursive=True)])
        return 0

    def close(self) -> None:
        """Kill the process group (counting its CPU first) and remove the folder."""
        proc, self.proc = self.proc, None
        if proc is not None:
            cpu = _tree_cpu(proc)
            kill_group(proc)
            _closed_cpu.add(max(cpu - _reap(proc), 0.0))
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            unregister(proc)
        shutil.rmtree(self.folder, ignore_errors=True)

    # --- the protocol --------------------------------------------------------------------
    def exchange(self, parts: Sequence[str], deadline: float) -> list[Segment]:
        """Send `parts` (each one or more sentences), each after a fresh pair of markers,
        and return what each printed; SessionBroken (session killed) on anything unexpected."""
        marks = _Markers(secrets.token_hex(6), _warning_attribute(self.backend))
        text = []
        for k, part in enumerate([*parts, ""]):
            text.append(f"{marks.out(k)}\n{marks.err(k)}\n")
            if part:
                text.append(part if part.endswith("\n") else part + "\n")
        data = self.backend.prepare("".join(text))[0]  # library names for this toolchain
        if gate(self.backend, data) is not None:
            raise SessionBroken("the gate refused the session's text")
        try:
            out, err = self._talk(data.encode("utf-8"), marks, len(parts), deadline)
            return _segments(out, err, marks, len(parts))
        except SessionBroken:
            self.close()
            raise

    def _talk(self, data: bytes, marks: _Markers, last: int, deadline: float) -> tuple[str, str]:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            raise SessionBroken("coqtop is not running")
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        end_out = re.compile(marks.out_answer(last).pattern.encode())
        end_err = marks.end(last)
        limit = max_output_bytes()
        kept = {"out": bytearray(), "err": bytearray()}
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ, "out")
        sel.register(proc.stderr, selectors.EVENT_READ, "err")
        if data:
            sel.register(proc.stdin, selectors.EVENT_WRITE, "in")
        try:
            while True:
                # stderr first: it is short (stdout may hold a megabyte dump)
                if end_err.search(kept["err"]) and end_out.search(kept["out"]):
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SessionBroken("coqtop did not answer in time", fault=False)
                if abandoned():  # a speculative check no longer needed (sandbox.abandon_on)
                    raise SessionBroken("the check was abandoned", fault=False)
                for key, _ in sel.select(timeout=min(left, 0.5)):
                    if key.data == "in":
                        try:
                            sent = os.write(key.fd, data)
                        except BrokenPipeError as exc:
                            raise SessionBroken("coqtop closed its input") from exc
                        data = data[sent:]
                        if not data:
                            sel.unregister(key.fileobj)
                        continue
                    chunk = os.read(key.fd, 1 << 16)
                    if not chunk:
                        raise SessionBroken("coqtop ended")
                    kept[key.data] += chunk
                    if len(kept[key.data]) > limit:
                        raise SessionBroken(f"coqtop printed more than {limit} bytes")
        finally:
            sel.close()
        self.last_used = time.monotonic()
        return kept["out"].decode("utf-8", "replace"), kept["err"].decode("utf-8", "replace")

    def prepare(self, wanted: Sequence[str], deadline: float) -> None:
        """Before a check: load the wanted preloads not yet loaded (each on its own, so one
        that coqtop refuses is only dropped), record the libraries loaded at the mark, and
        have the plugin freeze exactly those (its walk of them is remembered across checks)."""
        new = [s for s in wanted if s not in self.preloaded and s not in self.refused]
        if self.libraries is not None and not new:
            return
        parts = ["Set Printing Width 1000.", *new, "Print Libraries."]
        segments = self.exchange(parts, deadline)
        try:
            for sentence, segment in zip(new, segments[1 : len(new) + 1], strict=True):
                if segment.stdout.strip() and not _only_info(segment.stdout):
                    raise SessionBroken(f"`{sentence}` printed {segment.stdout[:120]!r}")
                if segment.errors:
                    self.refused.add(sentence)
                else:
                    self.preloaded.append(sentence)
            if segments[0].errors or segments[-1].errors:
                raise SessionBroken("the session could not be set up")
            self.libraries = _libraries(segments[-1].stdout)
            if self.plugin is not None:
                self._freeze(self.libraries, deadline)
        except SessionBroken:
            self.close()
            raise

    def _freeze(self, libraries: frozenset[str], deadline: float) -> None:
        """Freeze `libraries` (those loaded at the mark) in the plugin, by name. None may be
        a library a check brought (a file copied into the folder, `Candidate` above all):
        that one is replaced at the next check, and the plugin must never remember it."""
        brought = sorted(libraries & self.brought)
        if brought:
            raise SessionBroken(f"a check's library is loaded at the mark: {brought[0]}")
        if not libraries:
            return
        sentence = assumptions_plugin.freeze_sentence(libraries)
        segment = self.exchange([sentence], deadline)[0]
        if segment.errors or segment.stdout.strip():
            raise SessionBroken(f"`Fb_Freeze_Assumptions` failed: {segment.errors[:1]}")

    def run_check(
        self, files: Sequence[Path], parts: Sequence[str], deadline: float
    ) -> list[Segment]:
        """Copy `files` (the check's `.vo`) into the session's folder, play `parts` between
        the mark and the `Reset`, remove the files, and check that the state is the mark's."""
        for path in files:
            if path.suffix == ".vo":  # a library of this check: never frozen (`_freeze`)
                self.brought.add(path.stem)
            shutil.copyfile(path, self.folder / path.name)
        try:
            segments = self.exchange(
                ["Definition fb_mark := 0.", *parts, "Reset fb_mark.", "Print Libraries."],
                deadline,
            )
        finally:
            for path in files:
                with contextlib.suppress(OSError):
                    (self.folder / path.name).unlink()
        self.checks += 1
        if segments[0].errors:
            self.close()
            raise SessionBroken(f"the mark could not be set: {segments[0].errors[0]}")
        try:
            same = not segments[-2].errors and _libraries(segments[-1].stdout) == self.libraries
        except SessionBroken:
            same = False
        if not same:
            self.close()  # the check's answer stands; this session's state does not
            log.info("coq session discarded: its state after Reset is not the mark's")
        return segments[1:-2]


def _only_info(stdout: str) -> bool:
    """Whether stdout holds nothing but `<infomsg>` blocks (e.g. a plugin being loaded)."""
    return not re.sub(r"<infomsg>.*?</infomsg>", "", stdout, flags=re.DOTALL).strip()


def _libraries(stdout: str) -> frozenset[str]:
    lines = [line.strip() for line in stdout.strip().splitlines()]
    if not lines or lines[0] != "Loaded library files:":
        raise SessionBroken("`Print Libraries` printed something else")
    names = frozenset(line for line in lines[1:] if line)
    if not all(re.fullmatch(QUALID, n) for n in names):
        raise SessionBroken("`Print Libraries` printed something else")
    return names


@dataclass(frozen=True)
class _Markers:
    """The sentences that frame the parts of one exchange, and how their output reads.
    `warning`: the stderr marker is an unknown option's warning (Rocq 9), else an unknown
    reference's error (see the module doc)."""

    nonce: str
    warning: bool

    def out(self, k: int) -> str:
        return f"Locate fb_{self.nonce}_o{k}."

    def out_answer(self, k: int | None = None) -> re.Pattern[str]:
        """Marker k's answer on stdout, or any marker's with its number captured (cut into
        several lines where a loaded library set a narrow `Printing Width`). Not anchored
        with `^`/`$`: a pattern that begins with a literal is searched for as one, ~10x
        faster on a megabyte dump."""
        number = r"(\d+)" if k is None else rf"{k}(?!\d)"
        return re.compile(rf"No\s+object\s+of\s+basename\s+fb_{self.nonce}_o{number}")

    def out_answers(self, out: str) -> dict[int, list[tuple[int, int]]]:
        """Where each marker's answer stands in `out`, by marker number: only answers on
        lines of their own count."""
        found: dict[int, list[tuple[int, int]]] = {}
        for m in self.out_answer().finditer(out):
            start, end = m.span()
            if out[start - 1 : start] in ("", "\n") and out[end : end + 1] in ("", "\n"):
                found.setdefault(int(m[1]), []).append((start, end))
        return found

    def err(self, k: int) -> str:
        if self.warning:
            return f'#[warning="unknown-option"] Set Fb_{self.nonce}_e{k}.'
        return f"Check fb_{self.nonce}_e{k}."

    def block(self, k: int) -> re.Pattern[str]:
        """Marker k's whole block on stderr, prompts and warning tags removed."""
        echo = re.escape(self.err(k))
        if self.warning:
            said = (
                rf'Warning:\s+There\s+is\s+no\s+flag\s+or\s+option\s+with\s+this\s+name:\s+"Fb_'
                rf'{self.nonce}_e{k}"\.\s*\[unknown-option,[\w-]+\]\n'
            )
        else:
            said = (
                rf"Error:\s+The\s+(?:reference|variable)\s+fb_{self.nonce}_e{k}\s+was\s+not\s+"
                r"found\s+in\s+the\s+current\s+environment\.\n"
            )
        return re.compile(
            rf"^Toplevel input, characters \d+-\d+:\n> {echo}\n>[ ^]*\n{said}", re.MULTILINE
        )

    def end(self, last: int) -> re.Pattern[bytes]:
        """The last marker's message then the prompt coqtop prints before it waits for
        input, in the raw stderr: nothing of the exchange is still on its way in a pipe."""
        if self.warning:
            said = rf'name:\s+"Fb_{self.nonce}_e{last}"\.[^<]*</warning>[^<]*'
        else:
            said = rf"(?:reference|variable)\s+fb_{self.nonce}_e{last}\s+was\s+not\s+found[^<]*"
        return re.compile(rf"{said}<prompt>[^\n]*?</prompt>".encode())


def _warning_attribute(backend: CoqBackend) -> bool:
    """Whether this Coq takes `#[warning=...]` on a command (Rocq 9; checked on 9.2)."""
    try:
        return int(backend.toolchain.version().split(".")[0]) >= 9
    except ValueError:
        return False


def _segments(out: str, err: str, marks: _Markers, last: int) -> list[Segment]:
    """Cut both streams at their markers: segment k is what part k printed."""
    out = _FETCHING.sub("", out)
    err = _WARNING_TAGS.sub("", _PROMPT.sub("", err))
    marked: list[tuple[int, int]] = []
    answers = marks.out_answers(out)
    for k in range(last + 1):
        seen = answers.get(k, [])
        if len(seen) != 1:
            raise SessionBroken(f"stdout marker {k} seen {len(seen)} times")
        marked += seen
    if marked != sorted(marked):
        raise SessionBroken("stdout markers out of order")
    spans: list[tuple[int, int]] = []
    for k in range(last + 1):
        found = list(marks.block(k).finditer(err))
        if len(found) != 1:
            raise SessionBroken(f"stderr marker {k} seen {len(found)} times")
        spans.append(found[0].span())
    if [s for s, _ in spans] != sorted(s for s, _ in spans) or err[: spans[0][0]].strip():
        raise SessionBroken("stderr markers out of order, or text before the first")
    if err[spans[-1][1] :].strip():
        raise SessionBroken("text on stderr after the last marker")
    segments = []
    for k in range(last):
        stdout = out[marked[k][1] : marked[k + 1][0]].removeprefix("\n").removesuffix("\n")
        blocks = _blocks(err[spans[k][1] : spans[k + 1][0]])
        segments.append(Segment(stdout, [said for kind, said in blocks if kind == "Error"]))
    return segments


def _reap(proc: subprocess.Popen, patience: float = 5.0) -> float:
    """Wait for a killed session's first process; the CPU its exit adds to this process's
    RUSAGE_CHILDREN (all of coqtop's without bwrap; bwrap's own with it, whose child was
    killed with it and is reaped elsewhere), so that `sessions_cpu` does not count it twice."""
    end = time.monotonic() + patience
    while time.monotonic() < end:
        try:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        except ChildProcessError:  # already reaped
            return 0.0
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return usage.ru_utime + usage.ru_stime
        time.sleep(0.01)
    return 0.0


def _tree_cpu(proc: subprocess.Popen) -> float:
    import psutil

    total = 0.0
    with contextlib.suppress(psutil.Error):
        top = psutil.Process(proc.pid)
        for p in [top, *top.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                t = p.cpu_times()
                total += t.user + t.system
    return total


class _Counter:
    def __init__(self) -> None:
        self.value = 0.0
        self.lock = threading.Lock()

    def add(self, amount: float) -> None:
        with self.lock:
            self.value += amount


_closed_cpu = _Counter()  # CPU of sessions already closed (killed: never in RUSAGE_CHILDREN)


class SessionPool:
    """Idle sessions for one backend; a check takes one for itself and gives it back."""

    def __init__(self, backend: CoqBackend) -> None:
        self.backend = backend
        try:
            self.coqtop: str | None = backend.toolchain.program("coqtop")
        except ToolchainMissingError:
            self.coqtop = None
        self.idle: list[CoqSession] = []
        self.busy: set[CoqSession] = set()
        self.failures = 0
        self.lock = threading.Lock()

    @property
    def usable(self) -> bool:
        return self.coqtop is not None and self.failures < MAX_FAILURES and enabled()

    @contextlib.contextmanager
    def session(self, wanted: Sequence[str]) -> Iterator[CoqSession]:
        """A running session for this thread alone (the idle one holding the most of
        `wanted` already, or a new one); given back to the pool unless it was closed."""
        chosen = self._take(wanted)
        try:
            if chosen.proc is None:
                chosen.start()
            else:  # in flight again: `stop_all` kills it (killed at once if stopping)
                register(chosen.proc)
            yield chosen
        except SessionBroken as why:
            with self.lock:
                self.failures += why.fault
            raise
        finally:
            keep = chosen.alive() and chosen.checks < MAX_CHECKS
            keep = keep and len(chosen.preloaded) < MAX_PRELOADS
            cap = self.backend.memory_mb
            keep = keep and not (cap and chosen.rss_bytes() > int(MAX_MEMORY_SHARE * cap) << 20)
            if keep and chosen.proc is not None:
                # idle: not a check in flight (`sandbox.live_count`); killed at exit
                unregister(chosen.proc)
            with self.lock:
                self.busy.discard(chosen)
                if keep:
                    self.idle.append(chosen)
            if not keep:
                chosen.close()

    def succeeded(self) -> None:
        with self.lock:
            self.failures = 0

    def _take(self, wanted: Sequence[str]) -> CoqSession:
        now = time.monotonic()
        with self.lock:
            stale = [s for s in self.idle if now - s.last_used > IDLE_SECONDS]
            self.idle = [s for s in self.idle if s not in stale]
            best = max(self.idle, key=lambda s: len(set(wanted) & set(s.preloaded)), default=None)
            if best is not None:
                self.idle.remove(best)
            else:
                best = CoqSession(self.backend, str(self.coqtop))
            self.busy.add(best)
        for session in stale:
            session.close()
        return best

    def close(self) -> None:
        with self.lock:
            sessions, self.idle = self.idle, []
        for session in sessions:
            session.close()

    def cpu_seconds(self) -> float:
        with self.lock:
            live = [*self.idle, *self.busy]
        return sum(s.cpu_seconds() for s in live)


_pools: dict[tuple[object, ...], SessionPool] = {}
_pools_lock = threading.Lock()


def pool_for(backend: CoqBackend) -> SessionPool:
    """The process's pool of sessions for backends that run coqc the same way."""
    project = backend.project.root if backend.project is not None else None
    key = (
        backend.toolchain.name,
        backend.coqc,
        tuple(backend.args),
        backend.memory_mb,
        str(project),
    )
    with _pools_lock:
        if key not in _pools:
            _pools[key] = SessionPool(backend)
        return _pools[key]


def close_all() -> None:
    """Close every session of this process (their CPU stays counted in `sessions_cpu`)."""
    with _pools_lock:
        pools = list(_pools.values())
    for pool in pools:
        pool.close()


def sessions_cpu() -> float:
    """CPU used by every session of this process so far, live or closed: a live session is
    not yet in RUSAGE_CHILDREN, and a killed one never will be (benches add this)."""
    with _pools_lock:
        pools = list(_pools.values())
    return _closed_cpu.value + sum(p.cpu_seconds() for p in pools)


atexit.register(close_all)


def live_sessions() -> int:
    with _pools_lock:
        pools = list(_pools.values())
    return sum(len(p.idle) + len(p.busy) for p in pools)
