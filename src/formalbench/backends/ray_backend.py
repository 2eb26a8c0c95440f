"""Run a backend's checks on a Ray cluster (`--executor ray`).

Ray is the existing engine for spreading work over machines; nothing here schedules by hand.
Each Ray actor owns one backend instance (so a Lean REPL stays warm inside it) and serves one
check at a time. `RayBackend.check` hands each request to an idle actor, and waits for one
when all are busy: a slow check holds only its own actor, never the checks queued behind it
(handing requests out in turn, as this module once did, queued a request on a busy actor
while another stood idle). The idle actors sit in a thread-safe queue rather than in
`ray.util.ActorPool`, because the callers are threads (check_many, the evaluation's
workers) that each wait for their own result, and ActorPool's `get_next` is neither
thread-safe nor tied to a caller.
The same code runs on a laptop (a local Ray started on demand) and on a cluster (`address`).

A backend that cannot start on a worker (no Lean toolchain there, a bad option) would kill
its actor, and Ray would report that as its own error with the cause's traceback in the
text, at the first check. So each actor keeps such an error instead of dying, and the
constructor asks every actor once (`ping`) and raises the first one it gets back: the user
sees the same one-line error, with the same exit code, as without Ray, before a run starts.

Joining a cluster is bounded in time and never deaf to signals. Left to itself, `ray.init`
on an address where no Ray answers retries for over ten minutes inside Ray's C++ client,
where neither SIGINT nor SIGTERM reaches Python. So `init_ray` first opens a plain TCP
connection to the address (a closed port or an unknown host is one line at once), bounds
Ray's own connect and cluster-id waits through its `RAY_*` settings (a value the user set
is kept), and joins from a helper thread while the main thread waits, so a signal stops the
command at once (a local Ray starts in the main thread: its head installs signal handlers,
which only the main thread may do, and its start is bounded by Ray itself). Starting the actors (`ping`) is bounded too: a cluster without a free CPU
would otherwise queue them for ever.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from formalbench.backends.base import Backend, WorkerLost
from formalbench.core.errors import BackendError, FormalbenchError, InputError
from formalbench.core.records import CheckResult, CheckStatus, Language


def _ray(joining: bool = False) -> Any:
    """The `ray` module; `joining` a cluster bounds its connect waits first (they are read
    from the environment when Ray is imported)."""
    if joining and "ray" not in sys.modules:
        _bound_ray_waits(CONNECT_STEP_S)
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise InputError(
            "Ray is not installed (--executor ray, serve --ray): install it with "
            "`pip install 'formalbench[ray]'`"
        ) from exc
    return ray


class RayWorkerError(WorkerLost):
    """Ray could not run a call on a worker (it died, or Ray itself failed)."""


class RayConnectError(BackendError):
    """The Ray cluster named by `--ray-address` cannot be reached or does not answer."""


CONNECT_STEP_S = 5  # each of Ray's connect waits (socket, GCS connect, cluster id)
WORKER_START_S = 300.0  # every actor answers its first `ping` within this


def check_executor(executor: str, address: str | None) -> None:
    """Refuse an unknown executor, and an address given without `--executor ray` (it would
    be silently ignored)."""
    if executor not in ("local", "ray"):
        raise InputError(f"--executor must be local or ray, not {executor!r}")
    if address is not None and executor != "ray":
        raise InputError(f"--ray-address {address}: it is read only with --executor ray")


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of `host:port` or `ray://host:port`; None for `auto` and other forms
    that Ray resolves itself."""
    bare = address.removeprefix("ray://").rstrip("/")
    host, sep, port = bare.rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def check_reachable(
    address: str, timeout: float = CONNECT_STEP_S, flag: str = "--ray-address"
) -> None:
    """Open (and close) a TCP connection to `address`: a RayConnectError at once when
    nothing listens there, the host is unknown, or it does not answer within `timeout`.
    `flag` is the option that named the address, for the message."""
    target = _host_port(address)
    if target is None:
        return
    try:
        with socket.create_connection(target, timeout=timeout):
            pass
    except TimeoutError:
        raise RayConnectError(
            f"{flag} {address}: no answer within {timeout:g} s; is the head node up?"
        ) from None
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        local = f", or leave out {flag} for a local Ray" if flag == "--ray-address" else ""
        raise RayConnectError(
            f"{flag} {address}: cannot connect ({why.lower()}); start a cluster with "
            f"`ray start --head` and pass the address it prints{local}"
        ) from None


def _bound_ray_waits(step: float) -> None:
    """Ray's settings for joining a cluster, read from the environment when `ray` is
    imported: one connection attempt, each wait `step` seconds (Ray's defaults: 20 attempts
    of 5 + 5 + 30 s), and its C++ log quiet below errors (else each failed try prints lines
    of its own before our one). A value already set by the user wins. (Where Ray was
    imported before, only the thread's limit in `init_ray` bounds the wait.)"""
    for key, value in (
        ("RAY_gcs_server_port_wait_time_s", "1"),
        ("RAY_gcs_rpc_server_connect_timeout_s", f"{step:g}"),
        ("RAY_py_gcs_connect_timeout_s", f"{step:g}"),
        ("RAY_BACKEND_LOG_LEVEL", "error"),
    ):
        os.environ.setdefault(key, value)


def _in_thread(work: Callable[[], None], limit: float, what: str) -> None:
    """Run `work` in a daemon thread and wait at most `limit` seconds for it. The waiting
    happens here, in Python, so SIGINT (KeyboardInterrupt) and SIGTERM (its default action)
    stop the command at once even while `work` sits in C++; a daemon thread left behind
    does not keep the process alive."""
    done = threading.Event()
    failure: list[BaseException] = []

    def body() -> None:
        try:
            work()
        except BaseException as exc:  # handed to the waiting thread
            failure.append(exc)
        finally:
            done.set()

    threading.Thread(target=body, name="formalbench-ray-init", daemon=True).start()
    if not done.wait(limit):
        raise RayConnectError(f"{what}: no answer within {limit:g} s")
    if failure:
        raise failure[0]


@contextlib.contextmanager
def _sigint_raises() -> Iterator[None]:
    """Python's own SIGINT handler (KeyboardInterrupt at once) in the main thread: the
    caller may be a coroutine under asyncio.run, whose handler only cancels the task at its
    next await, which a blocking start never reaches."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def init_ray(
    address: str | None,
    num_cpus: int,
    *,
    step: float = CONNECT_STEP_S,
    flag: str = "--ray-address",
) -> None:
    """Join the cluster at `address`, or start a local Ray with `num_cpus` (once per process),
    within a time limit (see the module doc); a RayConnectError, naming the option `flag`
    that gave the address, when that fails."""
    with _sigint_raises():
        _init_ray(address, num_cpus, step, flag)


def _init_ray(address: str | None, num_cpus: int, step: float, flag: str) -> None:
    if "ray" in sys.modules and sys.modules["ray"].is_initialized():
        return
    if address:
        check_reachable(address, step, flag)
    ray = _ray(joining=bool(address))

    def start() -> None:
        import logging

        ray.init(
            address=address,
            num_cpus=None if address else num_cpus,
            include_dashboard=False,
            log_to_driver=False,
            ignore_reinit_error=True,
            logging_level=logging.ERROR,  # not its notes (e.g. "SIGTERM handler is not set")
        )

    try:
        if address:  # a network peer: waited for from a thread, within a limit
            _in_thread(start, 6.0 * step + 10, f"{flag} {address}")
        else:  # a local head registers signal handlers, which only the main thread may do
            start()
    except (ConnectionError, RuntimeError, ValueError) as exc:  # Ray's own failures to join
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if address:
            raise RayConnectError(
                f"{flag} {address}: no Ray cluster answered there ({first})"
            ) from None
        raise RayConnectError(f"cannot start a local Ray: {first}") from None


def ray_get(fetch: Callable[[], Any], what: str) -> Any:
    """`fetch()` (a `ray.get`), with Ray's errors turned into this project's errors: the
    FormalbenchError raised on the worker when there is one, else a RayWorkerError."""
    ray = _ray()
    try:
        return fetch()
    except ray.exceptions.RayError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, FormalbenchError):
            raise cause from None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RayWorkerError(f"a Ray worker of {what} failed: {first}") from None


T = TypeVar("T")


class RayTasks:
    """Module-level functions run as Ray tasks of one CPU each, for work that is not a
    backend check (e.g. `ape mine --validate`, whose compiles need per-project flags).

    As with `RayBackend`, the callers are threads that each wait for their own result; Ray
    schedules the tasks on whichever worker is free. Arguments and results are pickled, so
    paths in them must be visible to the workers (always so on a local Ray)."""

    def __init__(self, workers: int, address: str | None = None) -> None:
        init_ray(address, max(1, workers))
        self._remote: dict[Callable[..., Any], Any] = {}

    def run(self, func: Callable[..., T], *args: Any) -> T:
        ray = _ray()
        remote = self._remote.get(func)
        if remote is None:
            remote = self._remote[func] = ray.remote(num_cpus=1)(func)
        result: T = ray_get(lambda: ray.get(remote.remote(*args)), func.__name__)
        return result


class _CheckWorker:
    """The body of one Ray actor: a backend built on the worker from its name and options."""

    def __init__(self, name: str, options: dict[str, Any]) -> None:
        from formalbench.backends.registry import make_backend

        self.error: FormalbenchError | None = None
        try:
            self.backend = make_backend(name, **{**options, "workers": 1})
        except FormalbenchError as exc:  # kept for `ping`: the actor stays alive to say why
            self.error = exc

    def ping(self) -> FormalbenchError | None:
        """The error that kept this worker's backend from starting, or None."""
        return self.error

    def preflight(self, timeout: float) -> None:
        self.backend.preflight(timeout)

    def check(self, source: str, targets: list[str], timeout: float | None) -> CheckResult:
        return self.backend.check(source, targets=targets, timeout=timeout)

    def on_assistant(self, work: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        """`work(backend, *args)` here, where this worker's backend and its files are."""
        return work(self.backend, *args)

    def version(self) -> str:
        return self.backend.version()


class RayBackend(Backend):
    """A backend whose checks run as Ray actor calls; `workers` actors are started."""

    def __init__(
        self,
        name: str,
        options: dict[str, Any] | None = None,
        *,
        language: Language,
        workers: int | None = None,
        address: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        super().__init__(workers=workers, timeout=timeout)
        init_ray(address, self.workers)  # first: it may set Ray's settings before its import
        ray = _ray()
        self.name = f"ray:{name}"
        self.language = language
        actor = ray.remote(num_cpus=1)(_CheckWorker)
        options = dict(options or {})
        if language == Language.coq and options.get("toolchain") is None:
            # the driver's toolchain by name: a worker's own environment (a cluster started
            # by another process, FORMALBENCH_TOOLCHAIN set otherwise) must not pick its Coq
            from formalbench.toolchains.toolchain import default_name

            options["toolchain"] = default_name()
        self._actors = [actor.remote(name, dict(options)) for _ in range(self.workers)]
        self._idle: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for handle in self._actors:
            self._idle.put(handle)
        self._version: str | None = None
        try:
            pings = [a.ping.remote() for a in self._actors]
            errors = self._call(lambda: self._started(ray, pings))
            failed = next((e for e in errors if e is not None), None)
            if failed is not None:
                raise failed
        except BaseException:
            self.close()
            raise

    def _started(self, ray: Any, pings: list[Any]) -> list[FormalbenchError | None]:
        """The answers to the first `ping`s, waited for at most WORKER_START_S."""
        try:
            return list(ray.get(pings, timeout=WORKER_START_S))
        except ray.exceptions.GetTimeoutError:
            raise RayConnectError(
                f"backend {self.name}: {self.workers} Ray worker(s) did not start within "
                f"{WORKER_START_S:g} s; does the cluster have {self.workers} free CPU(s)?"
            ) from None

    def _call(self, fetch: Any) -> Any:
        """`fetch()` (a `ray.get`), with Ray's errors turned into this project's errors."""
        return ray_get(fetch, f"backend {self.name}")

    def preflight(self, timeout: float = 10.0) -> None:
        """The backend's own preflight, run on one worker (where the checks will run)."""
        if self._actors:
            self._call(lambda: _ray().get(self._actors[0].preflight.remote(timeout)))

    def _take(self) -> Any:
        """An idle actor; blocks while every actor is busy."""
        actor = self._idle.get()
        if actor is None:  # closed: pass the mark on to the next waiting caller
            self._idle.put(None)
            raise RayWorkerError(f"backend {self.name} is closed")
        return actor

    def check(
        self, source: str, *, targets: Sequence[str] = (), timeout: float | None = None
    ) -> CheckResult:
        actor = self._take()
        try:
            return self._call(
                lambda: _ray().get(actor.check.remote(source, list(targets), timeout))
            )
        except RayWorkerError as exc:  # the worker died under this check: a result, not a stop
            return CheckResult(backend=self.name, status=CheckStatus.crash, detail=str(exc))
        finally:
            self._idle.put(actor)

    def on_assistant(self, work: Callable[..., T], *args: Any) -> T:
        """`work(backend, *args)` on an idle actor, with the backend that actor owns (see
        `Backend.on_assistant`): the Coq verifier's kernel route runs there whole, since
        its compiles and dumps share files (the original's cached `Candidate.vo`, the
        candidate's) that must be on one machine. A worker that dies under it raises RayWorkerError (a `WorkerLost`)."""
        actor = self._take()
        try:
            result: T = self._call(lambda: _ray().get(actor.on_assistant.remote(work, args)))
            return result
        finally:
            self._idle.put(actor)

    def version(self) -> str:
        if self._version is None:
            self._version = self._call(lambda: _ray().get(self._actors[0].version.remote()))
        return self._version

    def close(self) -> None:
        """Kill the actors (and with them any check they run), then wait for the pool's
        threads: each one's `ray.get` now returns at once. The other order waited for every
        check in flight to end first, so a run stopped by a signal hung until its slowest
        check finished."""
        ray = _ray()
        for actor in self._actors:
            ray.kill(actor)
        self._actors = []
        self._idle.put(None)  # wakes a caller still waiting for an actor
        super().close()
