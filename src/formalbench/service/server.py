"""Running the service with uvicorn: the key rule, the socket, the logs, a clean stop.

An API key is required unless the service listens on loopback only: the service compiles text
sent to it, and its gate and sandbox are not a reason to offer that to a network. The key comes
from `--api-key` or FORMALBENCH_SERVE_API_KEY (the environment keeps it out of `ps`). The
socket is bound here (`dashboard.server.bind`) so that `--port 0` gives a free port that is
printed before the first request. Logs are JSON lines on stderr. At the end (Ctrl-C, SIGTERM)
every assistant process and warm session is killed before the process exits.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

import uvicorn

from formalbench.core.errors import InputError
from formalbench.dashboard.server import bind, is_loopback
from formalbench.service.app import create_app
from formalbench.service.engine import Engine

KEY_ENV = "FORMALBENCH_SERVE_API_KEY"
MIN_KEY_LENGTH = 16
GRACE_SECONDS = 5


def check_key(host: str, api_key: str | None) -> None:
    """The key rule: a key of at least 16 characters, required off loopback."""
    if api_key is not None and len(api_key) < MIN_KEY_LENGTH:
        raise InputError(f"--api-key: use at least {MIN_KEY_LENGTH} characters")
    if api_key is None and not is_loopback(host):
        raise InputError(
            f"--host {host}: the service would take proofs from other machines without a key; "
            f"give --api-key (or {KEY_ENV})"
        )


def serve(
    engine: Engine,
    *,
    host: str,
    port: int,
    api_key: str | None,
    capacity: int,
    max_body_bytes: int,
    max_timeout: float,
    request_timeout: float,
    announce: Callable[[str], None] = print,
) -> None:
    """Serve until interrupted; the engine is closed and every checker process killed after."""
    check_key(host, api_key)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("formalbench.serve")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    app = create_app(
        engine,
        api_key=api_key,
        capacity=capacity,
        max_body_bytes=max_body_bytes,
        max_timeout=max_timeout,
        request_timeout=request_timeout,
    )
    sock = bind(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    announce(
        f"formalbench serve: {engine.backend.version()} at http://{shown}:{bound} "
        f"({engine.workers} workers, queue {capacity}; Ctrl-C to stop)"
    )
    if not is_loopback(host):
        announce(
            "warning: plain HTTP: the key and every proof travel unencrypted; use a trusted "
            "network or an HTTPS reverse proxy"
        )
    # on Ctrl-C or SIGTERM, requests in flight get a few seconds; then every check is killed
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=GRACE_SECONDS,
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
        from formalbench.backends import coq_session
        from formalbench.backends.sandbox import stop_all

        stop_all()
        coq_session.close_all()
        engine.close()
