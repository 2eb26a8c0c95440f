"""A warm coqtop session killed with SIGKILL *during a kernel dump*, under `formalbench serve`.

The service runs in this process (the app `formalbench serve` builds, under uvicorn on a free
loopback port, spoken to over real HTTP), so that the dump's coqtop is found through the
session itself, not by name or by timing: `CoqSession.run_check` (the one call that plays a
dump in a warm session) is wrapped to freeze the session's coqtop (SIGSTOP, waiting until it
is stopped for real) as the dump begins, and a killer thread then kills it with SIGKILL at
one of two points, each reached by waiting for a state, never for a time:

- "sent": the dump's request is in coqtop's input pipe, unread (FIONREAD): the service has
  sent it and waits for the answer;
- "dumped": the request is taken out of the pipe and only its part up to the `Reset` put
  back; coqtop is let run until it waits on its empty input again (`/proc/PID/syscall`): it
  has loaded the compiled `Candidate` and played the dump command, and the exchange is
  unfinished (the `Reset` and the end markers never come).

Asserted, for both: the killed item gets its right verdict (the session says `coqtop ended`
at once, and that dump is retried one-shot, once), the service carries on, the next items
are decided right, and by a fresh warm session. Both dumps a check can ask are killed: the
task's original's (its first check) and the candidate's. Runs on the suite's Coq toolchain
(`tests/suite_coq.py`): the process is taken from the session, so its name (Rocq 9 runs the
session's toplevel as `rocqworker`) does not matter.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import signal
import struct
import termios
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from formalbench.backends import coq_session
from formalbench.backends.coq_session import CoqSession
from formalbench.core.errors import ToolchainMissingError
from formalbench.toolchains.toolchain import resolve

TASK = "Theorem t : 2 + 3 = 5.\nProof.\nAdmitted.\n"
PROOF = "Theorem t : 2 + 3 = 5.\nProof. reflexivity. Qed.\n"
CHANGED = PROOF.replace("2 + 3 = 5", "5 = 5")  # compiles: only the dumps can refuse it


def _coqtops(session: CoqSession) -> list[int]:
    """The session's coqtop: the processes under its sandbox wrapper that run no child."""
    import psutil

    assert session.proc is not None
    top = psutil.Process(session.proc.pid)
    tree = [top, *top.children(recursive=True)]
    return [p.pid for p in tree if not p.children()]


def _unread(fd: int) -> int:
    """Bytes waiting in the pipe `fd` belongs to (FIONREAD, on either end)."""
    return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0])


class Killer:
    """Arms `CoqSession.run_check` to have the next dump's coqtop killed mid-dump, at `stage`:
    "sent" (the dump's request in coqtop's input, unread) or "dumped" (coqtop has played the
    exchange through the dump command and waits for the rest: `Reset`, `Print Libraries`)."""

    def __init__(self, stage: str) -> None:
        self.stage = stage
        self.armed = threading.Event()
        self.killed: list[int] = []
        self.libraries: list[Path] = []  # the `.vo` each armed dump was of
        self.outcomes: list[str] = []  # how each armed dump ended in the session
        self.original = CoqSession.run_check

    def run_check(
        self, session: CoqSession, files: Any, parts: Any, deadline: float
    ) -> list[coq_session.Segment]:
        if not self.armed.is_set():
            return self.original(session, files, parts, deadline)
        self.armed.clear()
        self.libraries.extend(Path(f) for f in files)
        import psutil

        (pid,) = _coqtops(session)
        os.kill(pid, signal.SIGSTOP)
        # stopped for real before the request is sent: a coqtop still on its way into the stop
        # from a blocking read would take the request with it; stopped, it reads nothing
        while psutil.Process(pid).status() != psutil.STATUS_STOPPED:
            threading.Event().wait(0.001)
        assert session.proc is not None and session.proc.stdin is not None
        stdin = session.proc.stdin.fileno()
        # the exchange's parts: the mark, `parts`, `Reset`, `Print Libraries`; a marker pair
        # precedes each, and one more ends the exchange (CoqSession.exchange)
        marks = (len(parts) + 1, len(parts) + 3)  # the `Reset`'s markers, the last ones
        thread = threading.Thread(target=self._kill, args=(pid, stdin, marks), daemon=True)
        thread.start()
        try:
            segments = self.original(session, files, parts, deadline)
        except coq_session.SessionBroken as why:
            self.outcomes.append(f"broken: {why}")
            raise
        finally:
            thread.join()
        self.outcomes.append("answered")
        return segments

    def _kill(self, pid: int, stdin: int, marks: tuple[int, int]) -> None:
        with contextlib.suppress(OSError):
            while _unread(stdin) == 0:  # the dump's request not sent yet
                threading.Event().wait(0.005)
            if self.stage == "dumped":
                self._play_through_the_dump(pid, stdin, *marks)
        os.kill(pid, signal.SIGKILL)
        self.killed.append(pid)

    def _play_through_the_dump(self, pid: int, stdin: int, reset: int, last: int) -> None:
        """Take the whole request out of coqtop's input pipe, put back its text up to the
        `Reset`'s markers, let coqtop run and wait until it has played all of it (blocked in
        `read` on its empty input): the candidate loaded and dumped, the exchange unfinished."""
        reader = os.open(f"/proc/{pid}/fd/0", os.O_RDONLY | os.O_NONBLOCK)
        try:
            taken = b""
            # the last stderr marker (`_Markers.err`: Rocq 9's `Set Fb_...`, Coq 8's `Check fb_...`)
            end = re.compile(rb"(?:Set Fb|Check fb)_([0-9a-f]+)_e%d\.\n" % last)
            given_up = time.monotonic() + 60  # a frame this test does not know: fail, not hang
            while (found := end.search(taken)) is None:  # the service wrote it all
                assert time.monotonic() < given_up, f"no last marker in {taken[-300:]!r}"
                with contextlib.suppress(BlockingIOError):
                    taken += os.read(reader, 1 << 16)
                threading.Event().wait(0.001)
        finally:
            os.close(reader)
        cut = taken.index(b"Locate fb_%s_o%d." % (found.group(1), reset))
        os.write(stdin, taken[:cut])
        os.kill(pid, signal.SIGCONT)
        syscall = Path(f"/proc/{pid}/syscall")
        while not (syscall.read_text().startswith("0 0x0 ") and _unread(stdin) == 0):
            threading.Event().wait(0.005)  # not yet waiting on stdin for more


@pytest.fixture(params=["sent", "dumped"])
def service(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, Any]]:
    """The app `formalbench serve` runs (one worker, no replay: the dumps decide here), with
    the killer in front of the sessions' dumps."""
    import uvicorn

    from formalbench.checking.verifier import kernel_of
    from formalbench.core.config import VerifierPolicy
    from formalbench.dashboard.server import bind
    from formalbench.service.app import create_app
    from formalbench.service.backend import open_backend
    from formalbench.service.engine import Engine
    from formalbench.store.service_tasks import TaskStore

    try:
        resolve().program("coqtop")
    except ToolchainMissingError:
        pytest.skip("the suite's Coq has no coqtop")
    monkeypatch.setenv(coq_session.SWITCH, "1")
    killer = Killer(request.param)

    def run_check(session: CoqSession, *args: Any) -> list[coq_session.Segment]:
        return killer.run_check(session, *args)

    monkeypatch.setattr(CoqSession, "run_check", run_check)
    backend = open_backend("coq", workers=1, timeout=120)
    engine = Engine(
        backend, TaskStore(":memory:"), cache=None, policy=VerifierPolicy(replay=False), workers=1
    )
    sock = bind("127.0.0.1", 0)
    config = uvicorn.Config(create_app(engine, api_key=None), log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    while True:  # started when it answers
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(url + "/health", timeout=5).status_code == 200:
                break
        threading.Event().wait(0.05)
    kernel = kernel_of(backend)
    assert kernel is not None
    try:
        yield {"url": url, "killer": killer, "dumper": kernel.dumper, "kernel": kernel}
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        sock.close()
        coq_session.close_all()  # not `sandbox.stop_all`: that stops this process's checks for good
        engine.close()


def verdict(url: str, proof: str, original: str) -> dict[str, Any]:
    body = {"codes": [{"custom_id": "k", "proof": proof, "original": original}], "timeout": 120}
    answer = httpx.post(url + "/verify", json=body, timeout=600)
    assert answer.status_code == 200, answer.text
    (result,) = answer.json()["results"]
    return dict(result)


def test_coqtop_killed_during_a_dump_costs_nothing_but_the_session(
    service: dict[str, Any],
) -> None:
    url, killer, dumper = service["url"], service["killer"], service["dumper"]
    task = f"(* killed when {killer.stage} *)\n{TASK}"  # a task no earlier check built
    cache = service["kernel"].cache_dir

    # 1. the task's first check: its original's dump is the first dump a session plays
    killer.armed.set()
    first = verdict(url, CHANGED, task)
    assert killer.outcomes == ["broken: coqtop ended"]  # no answer, and none waited for
    assert killer.libraries[0].is_relative_to(cache)  # the task's build: the original's dump
    assert first["verdict"]["reasons"] == ["statement_changed"], first
    assert first["error"].startswith("strict verdict: statement_changed")
    assert dumper.session_fallbacks == 1  # that dump retried one-shot, once

    # 2. the task now built: the candidate's dump is the next one a session plays
    killer.armed.set()
    second = verdict(url, PROOF, task)
    assert killer.outcomes == ["broken: coqtop ended"] * 2
    assert not killer.libraries[1].is_relative_to(cache)  # the candidate's compile
    assert second["verdict"]["passed"] is True and second["error"] is None, second
    assert dumper.session_fallbacks == 2

    # 3. the service carries on: right verdicts, from a fresh warm session
    warm = dumper.session_dumps
    assert verdict(url, CHANGED, task)["verdict"]["reasons"] == ["statement_changed"]
    assert verdict(url, PROOF, task)["verdict"]["passed"] is True
    assert dumper.session_dumps == warm + 2 and dumper.session_fallbacks == 2
    live = {pid for pool in coq_session._pools.values() for s in pool.idle for pid in _coqtops(s)}
    assert live and not live & set(killer.killed)
    assert httpx.get(url + "/health").json()["status"] == "ok"
