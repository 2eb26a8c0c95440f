"""SIGINT and SIGTERM during a run: stop at once, keep what is done, say so, resume later.

While a run's attempts are in flight, both signals are caught on the event loop: one line
goes to stderr ("stopping: N checks in flight…"), every live assistant process is killed and
no new one starts (`backends.sandbox.stop_all`), and the attempts in flight are cancelled, so
none of them is recorded with a made-up crash. The pipeline then marks the run `interrupted`
and raises `Interrupted`, which the command line turns into exit 130 (SIGINT) or 143
(SIGTERM), as a shell reports a process killed by that signal. Rerunning the same command
resumes the run: finished attempts are in the store, the cancelled ones are made again.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from formalbench.backends import sandbox


class Interrupted(KeyboardInterrupt):
    """The run stopped on a signal; `exit_code` is 128 + the signal's number."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.exit_code = 128 + signum
        super().__init__(f"interrupted by {signal.Signals(signum).name}")


@dataclass
class Caught:
    signum: int | None = None


@contextlib.contextmanager
def stop_on_signals(work: asyncio.Future, in_flight: Callable[[], int]) -> Iterator[Caught]:
    """Catch SIGINT/SIGTERM while `work` runs (see the module doc); main thread only."""
    caught = Caught()
    sandbox.resume_starting()
    loop = asyncio.get_running_loop()

    def handle(signum: int) -> None:
        if caught.signum is not None:
            return
        caught.signum = signum
        print(f"stopping: {in_flight()} checks in flight…", file=sys.stderr, flush=True)
        sandbox.stop_all()
        work.cancel()

    installed: list[int] = []
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signum, handle, signum)
                installed.append(signum)
    try:
        yield caught
    finally:
        for installed_signum in installed:
            loop.remove_signal_handler(installed_signum)


@contextlib.contextmanager
def stop_threads_on_signals(what: str, in_flight: Callable[[], int]) -> Iterator[Caught]:
    """`stop_on_signals` for work that runs in threads, not on an event loop (`ape mine
    --validate`): on SIGINT/SIGTERM one line ("stopping: N `what` in flight…"), every live
    assistant process killed and no new one started; the caller sees `caught.signum`, stops
    waiting, records nothing its killed work returns and raises `Interrupted`. Main thread
    only (elsewhere the signals keep their handlers); the old handlers come back after."""
    caught = Caught()
    sandbox.resume_starting()

    def handle(signum: int, _frame: object) -> None:
        if caught.signum is not None:
            return
        caught.signum = signum
        print(f"stopping: {in_flight()} {what} in flight…", file=sys.stderr, flush=True)
        sandbox.stop_all()

    with _handling_signals(handle):
        yield caught


@contextlib.contextmanager
def interrupt_on_signals() -> Iterator[None]:
    """For work in the main thread that is safe to stop between two Python steps (each of
    its writes one transaction, e.g. `ape mine`'s walk): SIGINT and SIGTERM raise
    `Interrupted` there, so SIGTERM too ends with 143 and the rerun resumes. Elsewhere
    than the main thread the signals keep their handlers."""

    def handle(signum: int, _frame: object) -> None:
        raise Interrupted(signum)

    with _handling_signals(handle):
        yield


@contextlib.contextmanager
def _handling_signals(handle: Callable[[int, object], None]) -> Iterator[None]:
    """`handle` for SIGINT and SIGTERM in the main thread (elsewhere the signals keep their
    handlers), the old handlers back after."""
    previous: dict[int, object] = {}
    if threading.current_thread() is threading.main_thread():
        for wanted in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(ValueError, OSError):
                previous[wanted] = signal.signal(wanted, handle)
    try:
        yield
    finally:
        for number, old in previous.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(number, old)  # type: ignore[arg-type]
