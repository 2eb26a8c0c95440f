"""A compile zygote for Rocq 9.2: coqc with the candidate's libraries already loaded, forked
once per candidate (opt-in: FORMALBENCH_COQ_ZYGOTE=1 or `CoqBackend(zygote=True)`).

Why: most of a miniF2F candidate's cold compile is loading what its header `Require`s
(Reals, Lia...): ~0.8 s of ~1 s on rocq-9.2. `fb_zygote` (ocaml/zygote92/fb_zygote.ml) is
coqc's own compile (`Ccompile.compile`, BuildVo) cut in two: its parent does everything coqc
does before it reads the file (arguments, runtime, `Stm.new_doc` with the injections: the
prelude and one `-require`/`-rfrom` per library the candidate's header requires, loaded
and not imported), then forks per request; the child alone reads the candidate's
`Candidate.v` in the request's folder and runs the rest of the compile (its `-time` lines,
messages and exit code are coqc's; its `Candidate.vo` is written there). The parent never
reads candidate text, so no candidate can affect the next one: each child starts from the
same memory image and its changes die with it.

Equivalence (docs/decisions.md, "A compile zygote"): the child's run is `coqc -require L1
... Candidate.v` in the same sandbox; that is `coqc Candidate.v` where the candidate's
libraries are exactly L1..Ln in that order and only scope openings come between its
`Require`s (`zygote_key`; anything else is compiled cold). Both facts are tested: the
`.vo`, stdout (less `-time` figures) and stderr are byte-identical to a cold coqc's.

Isolation: the zygote runs in the toolchain's bwrap like a cold coqc (same memory cap per
process, inherited by every child; no network), its own pid namespace (its children die
with it), tied to our life (parent-death signal, the sandbox's registry). Its one writable
folder is its spool; each candidate gets a fresh folder with a random name there (the
spool is not listable), and what the child wrote is moved into the caller's folder.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import logging
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path

from formalbench.backends import sandbox
from formalbench.backends.coq_prepare import sentences
from formalbench.core.errors import BackendError
from formalbench.core.records import CheckStatus
from formalbench.toolchains.toolchain import Toolchain

log = logging.getLogger(__name__)

SOURCES = Path(__file__).with_name("ocaml") / "zygote92"
# the executables: (sources, findlib packages)
PROGRAMS = {
    "fb_zygote": (("fb_serve.ml", "fb_zygote.ml"), "rocq-runtime.toplevel,findlib.dynload"),
    "fb_chk_zygote": (("fb_serve.ml", "fb_chk_zygote.ml"), "rocq-runtime.checklib"),
}
_LIB = re.compile(r"[A-Za-z_][\w']*(\.[A-Za-z_][\w']*)*\Z")
_SCOPE = (("Open", "Scope"), ("Local", "Open", "Scope"))
_OUTPUTS = (".zygote.out", ".zygote.err")
MAX_ZYGOTES = 16  # kept warm (LRU), compile and replay ones together (~170 and ~100 MB RSS)


def supported(chain: Toolchain) -> bool:
    """Whether the zygote is written for this toolchain's Coq API (Rocq 9.2, provisioned)."""
    return not chain.is_host and chain.version().startswith("9.2")


def zygote_key(text: str) -> tuple[tuple[str, str], ...] | None:
    """The libraries the text's header requires, in order, as ("", lib) or (root, lib)
    pairs (`-require lib`, `-rfrom root lib`); None when the text must be compiled cold: a
    `Require` after the header, a header sentence that is neither a plain `Require` nor a
    scope opening, a library name that is not a plain qualified identifier, no Require."""
    pairs: list[tuple[str, str]] = []
    header = True
    for sentence in sentences(text):
        words = tuple(t.text for t in sentence if t.kind != "end")
        if header and "Require" in words:
            root = ""
            rest = list(words)
            if rest[:1] == ["From"]:
                if len(rest) < 3 or not _LIB.match(rest[1]):
                    return None
                root, rest = rest[1], rest[2:]
            if rest[:1] != ["Require"]:
                return None
            rest = rest[1:]
            if rest[:1] in (["Import"], ["Export"]):
                rest = rest[1:]
            if not rest or not all(_LIB.match(w) for w in rest):
                return None
            pairs += [(root, lib) for lib in rest if (root, lib) not in pairs]
        elif header and len(words) in (3, 4) and words[:-1] in _SCOPE:
            continue
        else:
            header = False
            if "Require" in words:
                return None
    return tuple(pairs) or None


def key_args(key: Sequence[tuple[str, str]]) -> list[str]:
    """coqc's injection flags for `key` (loaded, not imported)."""
    out: list[str] = []
    for root, lib in key:
        out += ["-rfrom", root, lib] if root else ["-require", lib]
    return out


class ZygoteUnavailable(BackendError):
    """The zygote cannot serve (it did not build or start, or died): compile cold."""


_built: dict[str, Path] = {}
_build_lock = threading.Lock()


def binary(chain: Toolchain, name: str) -> Path:
    """The zygote program `name` (PROGRAMS) built for `chain` with its own ocamlfind, once
    per process, in a private folder removed at exit (never a file another process could
    have changed)."""
    with _build_lock:
        if chain.name in _built:
            return _built[chain.name] / name
        folder = Path(tempfile.mkdtemp(prefix=f"formalbench-zygote-{os.getpid()}-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        for program, (sources, packages) in PROGRAMS.items():
            for source in sources:
                shutil.copyfile(SOURCES / source, folder / source)
            argv = [
                chain.program("ocamlfind"), "ocamlopt", "-rectypes", "-thread", "-linkpkg",
                "-linkall", "-package", packages, "-o", program, *sources,
            ]  # fmt: skip
            try:
                done = chain.run(argv, cwd=folder, timeout=600)
            except subprocess.TimeoutExpired as exc:
                raise ZygoteUnavailable(f"building {program} took too long") from exc
            if done.returncode != 0 or not (folder / program).is_file():
                said = " ".join(done.stderr.split())[:300]
                raise ZygoteUnavailable(f"{program} did not build: {said}")
        for junk in folder.iterdir():
            if junk.name not in PROGRAMS:
                shutil.rmtree(junk) if junk.is_dir() else junk.unlink()
        os.chmod(folder, 0o500)
        _built[chain.name] = folder
        return folder / name


class Zygote:
    """One zygote process (`program`: fb_zygote or fb_chk_zygote) for one (toolchain,
    arguments): serves candidates, each in a forked child. `setup(spool)` writes the files
    the program reads at start into its folder (fb_zygote: the empty placeholder
    `Candidate.v`; fb_chk_zygote: the stub library)."""

    def __init__(
        self, chain: Toolchain, program_name: str, args: Sequence[str],
        memory_mb: int | None, read_only: Sequence[str], setup: Callable[[Path], None],
    ) -> None:  # fmt: skip
        self.spool = Path(tempfile.mkdtemp(prefix=f"{sandbox._PREFIX}zygote-{os.getpid()}-"))
        setup(self.spool)
        program = binary(chain, program_name)
        argv = ["sh", "-c", 'exec "$0" "$@"', str(program), *args]
        command, preexec = sandbox.confined_argv(
            argv, str(self.spool), memory_mb,
            read_only=[*read_only, str(program.parent)], root=chain.sandbox_root,
        )  # fmt: skip
        if "--chdir" in command:  # bwrap's: its own pid namespace, its children die with it
            command.insert(command.index("--chdir"), "--unshare-pid")
        env = sandbox.private_env(chain.env(sandbox.scrubbed_env()), str(self.spool))
        os.chmod(self.spool, 0o300)  # not listable: a child cannot find another's folder
        self.proc = subprocess.Popen(
            command, cwd=self.spool, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, start_new_session=True, preexec_fn=preexec,
        )  # fmt: skip
        sandbox.register(self.proc)
        self._write = threading.Lock()
        self._waiting: dict[str, tuple[threading.Event, list[str]]] = {}
        self._guard = threading.Lock()
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline()
        if first.strip() != "ready":
            self.close()
            raise ZygoteUnavailable(
                f"{program_name} did not start ({first.strip() or 'no answer'})"
            )
        self.pids_alive = True
        self.served = 0  # requests answered (tests: the zygote, not a cold coqc, compiled)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            words = line.split()
            if len(words) >= 2 and words[0] in ("exit", "killed"):
                with self._guard:
                    slot = self._waiting.get(words[1])
                if slot is not None:
                    slot[1].extend(words)
                    slot[0].set()
        with self._guard:  # the zygote died: nobody waits for ever
            self.pids_alive = False
            for event, _ in self._waiting.values():
                event.set()

    def alive(self) -> bool:
        return self.pids_alive and self.proc.poll() is None

    def run(
        self, inputs: dict[str, bytes], timeout: float, work: Path | None = None
    ) -> sandbox.ProcessOutcome:
        """One request: `inputs` written into a fresh folder, the child run there; what it
        wrote moved into `work` (when given); the outcome as a cold process's (`status`
        timeout past `timeout`, crash when killed otherwise)."""
        token = secrets.token_hex(16)
        folder = Path(os.path.join(self.spool, token))  # the spool is not listable
        folder.mkdir(mode=0o700)
        started = time.monotonic()
        try:
            for name, data in inputs.items():
                (folder / name).write_bytes(data)
            event, said = threading.Event(), list[str]()
            with self._guard:
                self._waiting[token] = (event, said)
            with self._write:
                assert self.proc.stdin is not None
                try:
                    self.proc.stdin.write(f"{token}\t{timeout:.3f}\t{folder}\n")
                    self.proc.stdin.flush()
                except (BrokenPipeError, ValueError) as exc:
                    raise ZygoteUnavailable("the zygote is not running") from exc
            if not event.wait(timeout + 10):  # the parent kills it at `timeout`
                self.close()
                raise ZygoteUnavailable("the zygote did not answer")
            elapsed = time.monotonic() - started
            self.served += 1
            if not said:
                raise ZygoteUnavailable("the zygote died")
            out, err = (_text(folder / name) for name in _OUTPUTS)
            if work is not None:
                for path in folder.iterdir():
                    if path.name not in _OUTPUTS and path.name not in inputs:
                        shutil.move(str(path), str(work / path.name))
            if said[0] == "killed":
                status = CheckStatus.timeout if elapsed >= timeout else CheckStatus.crash
                return sandbox.ProcessOutcome(status, None, out, err, elapsed)
            return sandbox.ProcessOutcome(CheckStatus.ok, int(said[2]), out, err, elapsed)
        finally:
            with self._guard:
                self._waiting.pop(token, None)
            shutil.rmtree(folder, ignore_errors=True)

    def close(self) -> None:
        """Kill the zygote and every child it has (its pid namespace, its process group)."""
        sandbox.kill_group(self.proc)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        sandbox.unregister(self.proc)
        with contextlib.suppress(OSError):
            os.chmod(self.spool, 0o700)
        shutil.rmtree(self.spool, ignore_errors=True)


def _text(path: Path) -> str:
    limit = sandbox.max_output_bytes()
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


class ZygotePool:
    """Zygotes by key, least recently used closed past MAX_ZYGOTES; dead ones replaced."""

    def __init__(self) -> None:
        self._zygotes: OrderedDict[str, Zygote] = OrderedDict()
        self._lock = threading.Lock()
        atexit.register(self.close)

    def get(
        self, chain: Toolchain, program: str, args: Sequence[str], memory_mb: int | None,
        read_only: Sequence[str], setup: Callable[[Path], None] = lambda spool: None,
    ) -> Zygote:  # fmt: skip
        """The zygote of `program` with `args` (`setup` decided by them: part of the key)."""
        name = hashlib.sha256(
            "\0".join([chain.name, program, str(memory_mb), *args, "\1", *read_only]).encode()
        ).hexdigest()
        with self._lock:
            found = self._zygotes.get(name)
            if found is not None and found.alive():
                self._zygotes.move_to_end(name)
                return found
            if found is not None:
                found.close()
            zygote = Zygote(chain, program, args, memory_mb, read_only, setup)
            self._zygotes[name] = zygote
            while len(self._zygotes) > MAX_ZYGOTES:
                self._zygotes.popitem(last=False)[1].close()
            return zygote

    def close(self) -> None:
        with self._lock:
            while self._zygotes:
                self._zygotes.popitem()[1].close()


POOL = ZygotePool()


def placeholder(spool: Path) -> None:
    """fb_zygote's start file: the empty `Candidate.v` its parent's document is made for."""
    (spool / "Candidate.v").write_bytes(b"")


def stub_text(key: Sequence[tuple[str, str]]) -> str:
    """The replay zygote's stub library: the key's libraries required, nothing else."""
    return "".join(f"From {r} Require {lib}.\n" if r else f"Require {lib}.\n" for r, lib in key)


def enabled_by_default() -> bool:
    """FORMALBENCH_COQ_ZYGOTE=1: coqc backends compile through zygotes where they can."""
    return os.environ.get("FORMALBENCH_COQ_ZYGOTE", "").strip() in ("1", "true", "yes")
