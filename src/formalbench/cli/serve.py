"""`formalbench serve`: the strict verifier as a Kimina-compatible HTTP service (Coq, or Lean
with `--backend lean`: one backend per service, `service/backend.py`).

Bad input (a short key, another interface without a key, a busy port, a store that cannot be
opened, a missing toolchain) is one line on stderr and exit code 2. See
`formalbench/service/` and the README section "Use as a reward".
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

import typer

from formalbench.cli.main import app, user_errors
from formalbench.cli.options import (
    AllowAxiomOption,
    AllowAxiomsOption,
    ToolchainOption,
    at_least,
    axiom_policy,
    seconds,
)
from formalbench.cli.options import port as check_port
from formalbench.core.errors import InputError

if TYPE_CHECKING:
    from formalbench.core.config import VerifierPolicy

MEMORY = ":memory:"


@app.command("serve")
@user_errors
def serve(
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Interface; anything but loopback needs --api-key."
    ),
    port: int = typer.Option(
        8000, "--port", callback=check_port, help="Port to listen on (0: a free one)."
    ),
    api_key: str | None = typer.Option(
        None,
        "--api-key",
        envvar="FORMALBENCH_SERVE_API_KEY",
        help="Key required on every request but /health (`Authorization: Bearer KEY`, as "
        "Kimina's clients send it, or `X-API-Key`); at least 16 characters.",
    ),
    workers: int | None = typer.Option(
        None,
        "--workers",
        callback=at_least(1),
        help="Checks at once (default: the CPU count; with --ray, per replica, default 1).",
    ),
    queue: int = typer.Option(
        64, "--queue", min=1, help="Items held at most (waiting or running); more get 429."
    ),
    timeout: float = typer.Option(
        300.0,
        "--timeout",
        callback=seconds,
        help="Upper bound on an item's `timeout` (seconds for each assistant run).",
    ),
    request_timeout: float = typer.Option(
        900.0,
        "--request-timeout",
        callback=seconds,
        help="Seconds a request may take; items still unanswered then get `error: timeout`.",
    ),
    max_body_mb: int = typer.Option(
        16, "--max-body-mb", min=1, help="Largest request body, in MiB (413 beyond)."
    ),
    store: str | None = typer.Option(
        None,
        "--store",
        help="SQLite file for the verdict cache and the registered tasks (created if absent; "
        "default: in memory, lost at exit).",
    ),
    backend_name: str = typer.Option(
        "coq",
        "--backend",
        help="The proof assistant the service checks with: coq, or lean (the REPL of a Lake "
        "project, else `lean --json` per file).",
    ),
    lean_project: str | None = typer.Option(
        None,
        "--lean-project",
        help="Lake project for --backend lean (default: the one around the current folder).",
    ),
    coq_project: str | None = typer.Option(
        None,
        "--coq-project",
        help="Coq project folder (its _CoqProject's -R/-Q/-I/-arg) whose compiled libraries "
        "the tasks Require; used read-only, never built.",
    ),
    replay: bool = typer.Option(
        True,
        "--replay/--no-replay",
        help="Confirm a pass with coqchk of the same Coq (default on), as `check` does.",
    ),
    zygote: bool | None = typer.Option(
        None,
        "--zygote/--no-zygote",
        help="Compile and replay Coq candidates through warm fork servers, one per set of "
        "libraries a header Requires (rocq-9.2; the same .vo as a cold coqc; "
        "docs/decisions.md, zygote); other texts and toolchains compile cold. Default: on "
        "for --backend coq.",
    ),
    ray: str | None = typer.Option(
        None,
        "--ray",
        metavar="ADDRESS",
        help="Deploy on the Ray cluster at ADDRESS (its head's host:port, or auto; run this "
        "on a machine of the cluster) with Ray Serve: replicas of this service, each with its "
        "own workers and warm sessions, autoscaled on their queue; the HTTP proxy listens on "
        "--host/--port of the head node.",
    ),
    replicas: int = typer.Option(
        1, "--replicas", min=1, help="With --ray: replicas kept at least (and started with)."
    ),
    max_replicas: int | None = typer.Option(
        None,
        "--max-replicas",
        min=1,
        help="With --ray: replicas at most under load (default: --replicas).",
    ),
    allow_axiom: AllowAxiomOption = None,
    allow_axioms: AllowAxiomsOption = None,
    toolchain: ToolchainOption = None,
) -> None:
    """Serve the strict verifier over HTTP with Kimina Lean Server's API (Coq or Lean):
    /verify, /check, /tasks, /health, /metrics."""
    from formalbench.backends.base import default_workers
    from formalbench.backends.registry import language_of
    from formalbench.core.config import VerifierPolicy
    from formalbench.service.backend import open_backend, served
    from formalbench.service.engine import Engine
    from formalbench.service.server import check_key
    from formalbench.service.server import serve as run_server
    from formalbench.store.service_tasks import TaskStore
    from formalbench.store.verdict_cache import VerdictCache

    api_key = api_key or None  # an empty FORMALBENCH_SERVE_API_KEY is no key
    check_key(host, api_key)  # before the backend starts: the key rule is one line first
    if ray is None and (replicas != 1 or max_replicas is not None):
        raise InputError("--replicas and --max-replicas are read only with --ray")
    names, presets = axiom_policy(allow_axiom, allow_axioms)
    key = served(backend_name, coq_project, lean_project)
    if zygote is None:  # a long-lived service is where the zygotes' start pays back
        zygote = key == "coq"
    if ray is not None:
        _serve_on_ray(
            ray,
            backend=key,
            host=host,
            port=port,
            api_key=api_key,
            workers=workers or 1,
            replicas=replicas,
            max_replicas=max_replicas,
            capacity=queue,
            timeout=timeout,
            request_timeout=request_timeout,
            max_body_mb=max_body_mb,
            store=store,
            coq_project=coq_project,
            lean_project=lean_project,
            zygote=zygote,
            policy=VerifierPolicy(axiom_presets=presets, replay=replay).with_axioms(
                names, language_of(key)
            ),
        )
        return
    count = workers or default_workers()
    backend = open_backend(
        backend_name,
        workers=count,
        timeout=timeout,
        coq_project=coq_project,
        lean_project=lean_project,
        zygote=zygote,
    )
    policy = VerifierPolicy(axiom_presets=presets, replay=replay).with_axioms(
        names, backend.language
    )
    path = store or MEMORY
    try:
        cache, tasks = VerdictCache(path), TaskStore(path)
    except (OSError, sqlite3.Error) as exc:
        backend.close()
        raise InputError(f"--store {store!r}: cannot open ({exc})") from None
    engine = Engine(backend, tasks, cache=cache, policy=policy, workers=count)

    def announce(line: str) -> None:
        print(line, flush=True)

    run_server(
        engine,
        host=host,
        port=port,
        api_key=api_key,
        capacity=queue,
        max_body_bytes=max_body_mb << 20,
        max_timeout=timeout,
        request_timeout=request_timeout,
        announce=announce,
    )


def _serve_on_ray(
    address: str,
    *,
    backend: str,
    host: str,
    port: int,
    api_key: str | None,
    workers: int,
    replicas: int,
    max_replicas: int | None,
    capacity: int,
    timeout: float,
    request_timeout: float,
    max_body_mb: int,
    store: str | None,
    coq_project: str | None,
    lean_project: str | None,
    zygote: bool,
    policy: VerifierPolicy,
) -> None:
    """`serve --ray ADDRESS`: the same service as Ray Serve replicas (service/ray_serve.py).
    Each replica opens its backend from these options on its own machine, as `serve` does
    (`service.backend.open_backend`); Coq's toolchain is the driver's by name, so a worker's
    environment cannot pick another Coq; project folders are made absolute."""
    from pathlib import Path

    from formalbench.service.ray_serve import RayPlan, replicas_for, serve_on_ray, store_path
    from formalbench.store.service_tasks import TaskStore
    from formalbench.store.verdict_cache import VerdictCache
    from formalbench.toolchains.toolchain import default_name

    def absolute(folder: str | None) -> str | None:
        return None if folder is None else str(Path(folder).expanduser().resolve())

    low, high = replicas_for(replicas, max_replicas)
    path = store_path(store)
    try:  # the shared actor opens it on this machine: a bad path is one line here first
        TaskStore(path).close()
        VerdictCache(path).close()
    except (OSError, sqlite3.Error) as exc:
        raise InputError(f"--store {store!r}: cannot open ({exc})") from None
    plan = RayPlan(
        address=address,
        host=host,
        port=port,
        api_key=api_key,
        backend=backend,
        toolchain=default_name() if backend == "coq" else None,
        coq_project=absolute(coq_project),
        lean_project=absolute(lean_project),
        timeout=timeout,
        policy=policy,
        store=path,
        workers=workers,
        zygote=zygote,
        replicas=low,
        max_replicas=high,
        capacity=capacity,
        max_body_bytes=max_body_mb << 20,
        max_timeout=timeout,
        request_timeout=request_timeout,
    )

    def announce(line: str) -> None:
        print(line, flush=True)

    serve_on_ray(plan, announce)
