"""`formalbench serve`: the strict verifier as a Kimina-compatible HTTP service (Coq, or Lean
with `--backend lean`: one backend per service, `service/backend.py`).

Bad input (a short key, another interface without a key, a busy port, a store that cannot be
opened, a missing toolchain) is one line on stderr and exit code 2. See
`formalbench/service/` and the README section "Use as a reward".
"""

from __future__ import annotations

import sqlite3

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
        None, "--workers", callback=at_least(1), help="Checks at once (default: the CPU count)."
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
    allow_axiom: AllowAxiomOption = None,
    allow_axioms: AllowAxiomsOption = None,
    toolchain: ToolchainOption = None,
) -> None:
    """Serve the strict verifier over HTTP with Kimina Lean Server's API (Coq or Lean):
    /verify, /check, /tasks, /health, /metrics."""
    from formalbench.backends.base import default_workers
    from formalbench.core.config import VerifierPolicy
    from formalbench.service.backend import open_backend
    from formalbench.service.engine import Engine
    from formalbench.service.server import check_key
    from formalbench.service.server import serve as run_server
    from formalbench.store.service_tasks import TaskStore
    from formalbench.store.verdict_cache import VerdictCache

    api_key = api_key or None  # an empty FORMALBENCH_SERVE_API_KEY is no key
    check_key(host, api_key)  # before the backend starts: the key rule is one line first
    names, presets = axiom_policy(allow_axiom, allow_axioms)
    count = workers or default_workers()
    backend = open_backend(
        backend_name,
        workers=count,
        timeout=timeout,
        coq_project=coq_project,
        lean_project=lean_project,
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
