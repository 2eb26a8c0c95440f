"""Serving the dashboard with uvicorn, on loopback unless the user asks for more with a token.

The socket is bound here (not by uvicorn) so that `--port 0` gives a free port whose number
is known before the first request, and printed with the address to open.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvicorn

from formalbench.core.errors import InputError
from formalbench.dashboard.app import create_app
from formalbench.dashboard.guard import LOOPBACK_NAMES


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port); an InputError naming them when it cannot be had."""
    if not 0 <= port <= 65535:
        raise InputError(f"--port {port}: not a port number (0-65535; 0 picks a free one)")
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise InputError(f"--host {host!r}: cannot be resolved ({exc.strerror})") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise InputError(f"--host {host} --port {port}: cannot listen ({exc.strerror})") from None
    sock.set_inheritable(True)
    return sock


def serve(
    run_dir: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    reviewer: str | None = None,
    announce: Callable[[str], None] = print,
    check_options: dict[str, Any] | None = None,
) -> None:
    """Serve the dashboard until interrupted. Another interface than loopback needs `token`."""
    if token is not None and len(token) < 8:
        raise InputError("--token: use at least 8 characters (it guards every request)")
    loopback = is_loopback(host)
    if not loopback and token is None:
        raise InputError(
            f"--host {host}: the dashboard would be reachable from other machines; "
            "give --token (or FORMALBENCH_REVIEW_TOKEN) to require it on every request"
        )
    allowed = list(LOOPBACK_NAMES) if loopback and token is None else None
    app = create_app(
        run_dir,
        reviewer=reviewer,
        token=token,
        allowed_hosts=allowed,
        check_options=check_options,
    )
    sock = bind(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    url = f"http://{shown}:{bound}/" + (f"?token={token}" if token else "")
    announce(f"formalbench review: serving {Path(run_dir)} at {url} (Ctrl-C to stop)")
    if not loopback:
        announce(
            "warning: this server speaks plain HTTP: the token and every page travel "
            "unencrypted to other machines; use it on a trusted network, or put it behind "
            "an HTTPS reverse proxy (or an SSH tunnel to 127.0.0.1)"
        )
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
