"""`formalbench serve --ray ADDRESS`: the same service as Ray Serve replicas across a cluster.

Each replica is the single-process service whole: it builds its own backend and `Engine`
(so its own worker threads, warm coqtop sessions and task builds) and serves `create_app`'s
FastAPI app through Ray Serve's ingress, so the routes, request and answer shapes, the key,
the limits and the verdicts are those of `formalbench serve` without Ray. What the replicas
must agree on lives in one `Shared` actor on the driver's machine: the registered tasks (a
`task_id` registered through one replica is used through another) and the verdict cache,
both in `--store` as without Ray.

Ray Serve's HTTP proxy runs on the head node only (one address, as Kimina's clients expect)
on `--host`/`--port`; the key rule is checked before anything starts. A replica takes at
most `--workers` requests at once; the rest wait at the proxy (at most `--queue`, then 503)
for the first free replica. Replicas are autoscaled on the service's queue of items (each
replica reports the items it holds; `items_policy`), from `--replicas` up to
`--max-replicas`; each takes `--workers` CPUs, so Ray places them where CPUs are free,
across the cluster's machines. Joining the cluster follows the Ray executor's
rules (`backends/ray_backend.init_ray`: a closed port is one line at once, every wait is
bounded and hears signals). Ctrl-C or SIGTERM deletes the application (each replica closes
its engine and kills its checkers in `__del__`), shuts Serve down when no other application
is left on the cluster, and kills the shared actor.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from formalbench.core.config import VerifierPolicy
from formalbench.core.errors import FormalbenchError, InputError
from formalbench.core.records import Verdict

APP_NAME = "formalbench-serve"
DEPLOYMENT = "Verifier"
START_S = 300.0  # the replicas must be up within this (a cluster without free CPUs waits)
STOP_S = 60.0  # undeploying and shutting Serve down, at most
GRACE_SECONDS = 5  # requests in flight at a stop get this long, as without Ray
# Autoscaling (Ray Serve's default policy on ongoing requests): a check takes seconds, so
# the service reacts within seconds to a queue and gives replicas back after two minutes.
UPSCALE_DELAY_S = 5.0
DOWNSCALE_DELAY_S = 120.0
METRICS_INTERVAL_S = 2.0
LOOK_BACK_S = 10.0
ITEMS_METRIC = "items_held"  # what each replica reports to the autoscaler
WATCH_S = 5.0  # how often the driver checks that its application is still deployed


@dataclass
class RayPlan:
    """What the driver deploys: the replicas' backend and service settings, and the scale."""

    address: str
    host: str
    port: int
    api_key: str | None
    backend: str  # coq or lean (`service.backend.served`)
    toolchain: str | None  # Coq's toolchain, by name (the driver's)
    coq_project: str | None
    lean_project: str | None
    timeout: float
    policy: VerifierPolicy
    store: str
    workers: int = 1
    zygote: bool | None = None  # None: as FORMALBENCH_COQ_ZYGOTE says (open_backend)
    replicas: int = 1
    max_replicas: int = 1
    capacity: int = 64
    max_body_bytes: int = 16 << 20
    max_timeout: float = 300.0
    request_timeout: float = 900.0

    def autoscaling(self) -> dict[str, Any]:
        """Ray Serve's autoscaling config: scale on ongoing requests per replica, one
        replica's worth (`workers` checks at once) being the target."""
        return {
            "min_replicas": self.replicas,
            "initial_replicas": self.replicas,
            "max_replicas": max(self.replicas, self.max_replicas),
            "target_ongoing_requests": self.workers,
            "upscale_delay_s": UPSCALE_DELAY_S,
            "downscale_delay_s": DOWNSCALE_DELAY_S,
            "metrics_interval_s": METRICS_INTERVAL_S,
            "look_back_period_s": LOOK_BACK_S,
            "policy": {"policy_function": items_policy},
        }


def items_policy(ctx: Any) -> tuple[float, dict[str, Any]]:
    """Ray Serve autoscaling policy on the service's queue of *items*: the replicas each
    report the items they hold (`Verifier.record_autoscaling_stats`: waiting or running, the
    count the app's admission keeps), requests still waiting at the proxy add one each, and
    the replicas wanted are that total over one replica's `workers` (Serve's
    `target_ongoing_requests` here). Serve applies the bounds and the up/down delays. Until
    the replicas have reported, Serve's own measure (ongoing requests) stands in."""
    running = ctx.current_num_replicas
    if running == 0:
        return ctx.target_num_replicas, {}
    per_replica = ctx.config.get_target_ongoing_requests()
    reported = (ctx.aggregated_metrics or {}).get(ITEMS_METRIC)
    if not reported:
        return ctx.total_num_requests / per_replica, {}
    held = sum(reported.values()) + (ctx.total_queued_requests or 0.0)
    return held / per_replica, {}


class Shared:
    """The body of the one actor every replica asks: registered tasks and the verdict cache
    (SQLite in `store`, on the driver's machine, where `--store` names a file)."""

    def __init__(self, store: str) -> None:
        from formalbench.store.service_tasks import TaskStore
        from formalbench.store.verdict_cache import VerdictCache

        self.tasks, self.cache = TaskStore(store), VerdictCache(store)

    def register(self, original: str) -> str:
        return self.tasks.register(original)

    def task(self, task_id: str) -> str | None:
        return self.tasks.get(task_id)

    def cached(self, key: str) -> str | None:
        verdict = self.cache.get(key)
        return None if verdict is None else verdict.model_dump_json()

    def keep(self, key: str, verdict: str) -> bool:
        return self.cache.put(key, Verdict.model_validate_json(verdict))

    def close(self) -> None:
        self.cache.close()
        self.tasks.close()


class RemoteTasks:
    """`TaskStore`'s interface over the shared actor (called from a replica's threads)."""

    def __init__(self, shared: Any) -> None:
        self.shared = shared

    def register(self, original: str) -> str:
        return cast(str, _get(self.shared.register.remote(original)))

    def get(self, task_id: str) -> str | None:
        return cast("str | None", _get(self.shared.task.remote(task_id)))

    def close(self) -> None:
        """The shared store is the driver's to close."""


class RemoteCache:
    """`VerdictCache`'s interface over the shared actor; `hits`/`misses` count this replica's
    lookups, as a VerdictCache counts its own."""

    def __init__(self, shared: Any) -> None:
        self.shared = shared
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> Verdict | None:
        found = _get(self.shared.cached.remote(key))
        if found is None:
            self.misses += 1
            return None
        self.hits += 1
        return Verdict.model_validate_json(found)

    def put(self, key: str, verdict: Verdict) -> bool:
        return cast(bool, _get(self.shared.keep.remote(key, verdict.model_dump_json())))

    def close(self) -> None:
        """The shared store is the driver's to close."""


def _get(ref: Any) -> Any:
    import ray

    return ray.get(ref)


class Verifier:
    """The body of one replica: an Engine of its own and the service's FastAPI app over it."""

    def __init__(self, plan: RayPlan, shared: Any) -> None:
        from formalbench.service.backend import open_backend
        from formalbench.service.engine import Engine
        from formalbench.store.service_tasks import TaskStore
        from formalbench.store.verdict_cache import VerdictCache

        _log_to_stderr()
        self.plan = plan
        if plan.toolchain is not None:  # this process serves this replica only
            from formalbench.toolchains.toolchain import ENV_VAR

            os.environ[ENV_VAR] = plan.toolchain
        backend = open_backend(
            plan.backend,
            workers=plan.workers,
            timeout=plan.timeout,
            coq_project=plan.coq_project,
            lean_project=plan.lean_project,
            zygote=plan.zygote,
        )
        self.engine = Engine(
            backend,
            cast(TaskStore, RemoteTasks(shared)),
            cache=cast(VerdictCache, RemoteCache(shared)),
            policy=plan.policy,
            workers=plan.workers,
        )

    def __serve_build_asgi_app__(self) -> Any:  # noqa: N807 - Ray Serve's hook name
        from formalbench.service.app import create_app

        plan = self.plan
        self.service_app = create_app(
            self.engine,
            api_key=plan.api_key,
            capacity=plan.capacity,
            max_body_bytes=plan.max_body_bytes,
            max_timeout=plan.max_timeout,
            request_timeout=plan.request_timeout,
        )
        return self.service_app

    def record_autoscaling_stats(self) -> dict[str, float]:
        """Ray Serve's hook: the items this replica holds (waiting or running), for
        `items_policy`."""
        app = getattr(self, "service_app", None)
        return {ITEMS_METRIC: float(app.state.admission.held if app is not None else 0)}

    def version(self) -> str:
        return self.engine.backend.version()

    def __del__(self) -> None:
        """Ray Serve calls this when it stops the replica: kill every checker it started."""
        from formalbench.backends import coq_session
        from formalbench.backends.sandbox import stop_all

        with contextlib.suppress(Exception):
            stop_all()
            coq_session.close_all()
            self.engine.close()


def _log_to_stderr() -> None:
    """The service's JSON log lines on the replica's stderr (Ray keeps it in its log folder)."""
    logger = logging.getLogger("formalbench.serve")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


class _Stop(Exception):
    """SIGTERM, raised in the main thread so that the stop below runs."""


@contextlib.contextmanager
def _signals_stop() -> Iterator[None]:
    """SIGINT and SIGTERM raise in the main thread while the service runs."""

    def stop(_signum: int, _frame: object) -> None:
        raise _Stop

    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def _bounded(work: Callable[[], Any], limit: float, what: str) -> Any:
    """`work()` in a daemon thread, waited for here at most `limit` seconds (signals still
    reach the main thread); its exception is raised here."""
    done = threading.Event()
    out: list[Any] = []
    failure: list[BaseException] = []

    def body() -> None:
        try:
            out.append(work())
        except BaseException as exc:  # handed to the waiting thread
            failure.append(exc)
        finally:
            done.set()

    threading.Thread(target=body, name="formalbench-serve-ray", daemon=True).start()
    deadline = time.monotonic() + limit
    while not done.wait(0.2):
        if time.monotonic() > deadline:
            raise FormalbenchError(f"{what}: not done within {limit:g} s")
    if failure:
        raise failure[0]
    return out[0] if out else None


def _first_line(exc: BaseException) -> str:
    """The last meaningful line of a Ray error (its text carries the replica's traceback)."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    for line in reversed(lines):
        if "Error" in line.split(":", 1)[0]:
            return line
    return lines[-1] if lines else type(exc).__name__


def _still_deployed(serve: Any) -> bool:
    """Whether our application is still on the cluster: False only when Serve answers
    without it (a controller that does not answer may be restarting: keep serving)."""
    try:
        return APP_NAME in serve.status().applications
    except Exception:
        return True


def _why_not_started(serve: Any) -> str | None:
    """The error that kept the replicas from starting, from the deployment's status (its
    last line is the constructor's exception: our own errors are shown by their text)."""
    with contextlib.suppress(Exception):
        app = serve.status().applications.get(APP_NAME)
        message = app.deployments[DEPLOYMENT].message if app is not None else ""
        lines = [line.strip() for line in message.splitlines() if line.strip()]
        if lines:
            own = re.fullmatch(r"formalbench\.[\w.]+\.\w+Error: (.+)", lines[-1])
            return own.group(1) if own else lines[-1][:300]
    return None


def _head_is_here(ray: Any) -> bool:
    """Whether this process runs on the cluster's head node (where the proxy listens)."""
    here = ray.get_runtime_context().get_node_id()
    for node in ray.nodes():
        if node.get("Alive") and "node:__internal_head__" in node.get("Resources", {}):
            return bool(node.get("NodeID") == here)
    return False


def _wait_for_proxy(url: str, limit: float = 60.0) -> None:
    """The proxy answers `/health` through a replica (a port taken by something else on the
    head is an error here, not a silent service that is not there)."""
    import httpx

    deadline = time.monotonic() + limit
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            answer = httpx.get(url + "/health", timeout=5)
            if answer.status_code == 200 and answer.json().get("status") == "ok":
                return
            last = f"HTTP {answer.status_code}"
        except (httpx.HTTPError, ValueError) as exc:
            last = type(exc).__name__
        time.sleep(0.5)
    raise FormalbenchError(
        f"--port: Ray Serve's proxy at {url} does not answer ({last}); is the port free on the "
        "head node?"
    )


def serve_on_ray(plan: RayPlan, announce: Callable[[str], None] = print) -> None:
    """Deploy the service on the cluster at `plan.address`, serve until Ctrl-C or SIGTERM,
    then undeploy (see the module doc). Errors are FormalbenchErrors of one line."""
    from formalbench.backends.ray_backend import init_ray
    from formalbench.service.server import check_key

    check_key(plan.host, plan.api_key)
    if plan.port == 0:
        raise InputError(
            "--port 0: with --ray the proxy listens on the head node; give a fixed port"
        )
    if plan.address.startswith("ray://"):  # Ray Client: this process would not be a node
        raise InputError(
            f"--ray {plan.address}: give the cluster's own address (HEAD:6379) and run this on "
            "one of its machines; Ray Client (ray://) is not supported (the shared task store "
            "lives where the command runs)"
        )
    init_ray(plan.address, 1, flag="--ray")
    import ray

    try:
        from ray import serve
    except ImportError:  # pragma: no cover - depends on the install
        ray.shutdown()
        raise InputError(
            "--ray needs Ray Serve: install it with `pip install 'formalbench[ray]'`"
        ) from None
    for name in ("ray", "ray.serve"):
        logging.getLogger(name).setLevel(logging.WARNING)
    shared = None
    deployed = False
    try:
        with _signals_stop():
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            here = ray.get_runtime_context().get_node_id()
            shared = (
                ray.remote(num_cpus=0)(Shared)
                .options(scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False))
                .remote(plan.store)
            )
            deployment: Any = serve.deployment(
                serve.ingress()(Verifier),
                name=DEPLOYMENT,
                ray_actor_options={"num_cpus": plan.workers},
                # a replica takes only the requests it can run now; the rest wait at the
                # proxy for the first free replica (the proxy prefers its own node's
                # replica while that one has a free slot: a deeper replica queue would
                # keep every request there while other replicas stand idle)
                max_ongoing_requests=plan.workers,
                max_queued_requests=plan.capacity,
                autoscaling_config=plan.autoscaling(),
                graceful_shutdown_timeout_s=GRACE_SECONDS,
                graceful_shutdown_wait_loop_s=1,
            )

            def start() -> Any:
                nonlocal deployed
                serve.start(
                    proxy_location="HeadOnly",
                    http_options={"host": plan.host, "port": plan.port},
                )
                if APP_NAME in serve.status().applications:  # never replace (or later
                    # delete) a service another driver runs on this cluster
                    raise InputError(
                        f"--ray {plan.address}: a formalbench service is already deployed on "
                        f"this cluster; stop it first (Ctrl-C where it runs, or Ray's `serve "
                        f"shutdown` when its driver is gone)"
                    )
                deployed = True
                return serve.run(deployment.bind(plan, shared), name=APP_NAME, route_prefix="/")

            try:
                handle = _bounded(
                    start,
                    START_S,
                    f"--ray {plan.address}: deploying {plan.replicas} replica(s) of "
                    f"{plan.workers} CPU(s) each (does the cluster have them free?)",
                )
                version = _bounded(lambda: handle.version.remote().result(), 60, "asking a replica")
            except FormalbenchError:
                raise
            except Exception as exc:  # a replica that cannot start: Ray's text has its trace
                why = _why_not_started(serve) or _first_line(exc)
                raise FormalbenchError(
                    f"--ray {plan.address}: the service did not start: {why}"
                ) from None
            shown = f"[{plan.host.strip('[]')}]" if ":" in plan.host else plan.host
            url = f"http://{shown}:{plan.port}"
            if _head_is_here(ray):
                probe = url.replace("0.0.0.0", "127.0.0.1").replace("[::]", "[::1]")
                _bounded(lambda: _wait_for_proxy(probe), 90, "the proxy")
            scale = plan.autoscaling()
            announce(
                f"formalbench serve: {version} at {url} on the head node of Ray cluster "
                f"{plan.address} ({scale['min_replicas']} to {scale['max_replicas']} replicas, "
                f"{plan.workers} workers and queue {plan.capacity} each; Ctrl-C to stop)"
            )
            while True:  # until a signal; leave when the application is gone
                time.sleep(WATCH_S)
                if not _bounded(lambda: _still_deployed(serve), 60, "asking Serve"):
                    deployed = False
                    raise FormalbenchError(
                        f"--ray {plan.address}: the service is no longer deployed on the "
                        "cluster (deleted from outside)"
                    )
    except _Stop:
        pass
    finally:
        # the stop itself is bounded, and a second Ctrl-C must not cut it short
        before = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
        with contextlib.suppress(Exception):
            _bounded(lambda: _undeploy(ray, serve, deployed, shared), STOP_S, "stopping")
        for s, handler in before.items():
            signal.signal(s, handler)


def _undeploy(ray: Any, serve: Any, deployed: bool, shared: Any) -> None:
    """Delete the application (replicas run `__del__`), shut Serve down when no other
    application is left, close and kill the shared actor, leave the cluster."""
    if deployed:
        with contextlib.suppress(Exception):
            serve.delete(APP_NAME)
        with contextlib.suppress(Exception):
            if not serve.status().applications:
                serve.shutdown()
    if shared is not None:
        with contextlib.suppress(Exception):
            ray.get(shared.close.remote(), timeout=10)
        with contextlib.suppress(Exception):
            ray.kill(shared)
    with contextlib.suppress(Exception):
        ray.shutdown()


def store_path(store: str | None) -> str:
    """The shared store's path as the actor on this machine opens it (absolute; memory when
    none)."""
    if store is None or store == ":memory:":
        return ":memory:"
    return str(Path(store).expanduser().resolve())


def replicas_for(count: int, maximum: int | None) -> tuple[int, int]:
    """(min, max) replicas; `maximum` defaults to the minimum (no autoscaling above it)."""
    top = count if maximum is None else maximum
    if top < count:
        raise InputError(f"--max-replicas {top}: at least --replicas ({count})")
    return count, top
