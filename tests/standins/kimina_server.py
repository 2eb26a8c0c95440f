"""A stand-in Kimina Lean Server, for tests only: real HTTP on 127.0.0.1, answers from recordings.

`POST /api/check` takes `{"snippets": [{"id", "code"}], "timeout": s}` and answers
`{"results": [{"id", "time", "error", "response"}]}` like the real server: the leading
`import` and blank lines of a snippet are run apart and the rest goes to a REPL, here the
fixture-replaying `Replayer` of fake_repl.py, so positions count from the first body line.
`fake:hang` in a snippet waits out the request's timeout and answers the server's timeout
error. It can require an API key (`Authorization: Bearer KEY`), fail its first requests with
a given HTTP status, and it records every request body.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standins.fake_repl import Replayer


def split_like_kimina(code: str) -> tuple[str, str]:
    """Leading import/blank lines, and the rest (the server's own rule)."""
    lines = code.split("\n")
    cut = 0
    while cut < len(lines) and (not lines[cut].strip() or lines[cut].strip().startswith("import ")):
        cut += 1
    header = "\n".join(line.strip() for line in lines[:cut] if line.strip())
    return header, "\n".join(lines[cut:])


@dataclass
class KiminaStandIn:
    api_key: str | None = None
    fail_first: int = 0  # answer this many requests with `fail_status`
    fail_status: int = 500
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def answer_snippet(self, snippet: dict[str, Any], timeout: float) -> dict[str, Any]:
        started = time.perf_counter()
        code = snippet["code"]
        if "fake:hang" in code:
            time.sleep(timeout)
            return {
                "id": snippet["id"],
                "time": timeout,
                "error": f"Lean REPL command timed out in {timeout:g} seconds",
            }
        replayer = Replayer(axioms="propext,Classical.choice,Quot.sound")
        header, body = split_like_kimina(code)
        env = replayer.answer({"cmd": header})["env"]
        response = replayer.answer({"cmd": body, "env": env})
        return {"id": snippet["id"], "time": time.perf_counter() - started, "response": response}


def _handler(state: KiminaStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep test output quiet
            pass

        def _send(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:  # noqa: N802 - the http.server name
            length = int(self.headers.get("Content-Length") or 0)
            payload = json.loads(self.rfile.read(length) or b"{}")
            with state._lock:
                state.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "json": payload}
                )
                failing = state.fail_first > 0
                state.fail_first -= int(failing)
            if self.path != "/api/check":
                return self._send(404, {"detail": "Not Found"})
            if state.api_key is not None:
                given = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
                if given != state.api_key:
                    return self._send(401, {"detail": "Invalid API key"})
            if failing:
                return self._send(state.fail_status, {"detail": "scripted failure"})
            timeout = float(payload.get("timeout", 30))
            results = [state.answer_snippet(s, timeout) for s in payload.get("snippets", [])]
            self._send(200, {"results": results})

    return Handler


@contextmanager
def serve(**options: Any) -> Iterator[KiminaStandIn]:
    """Run the stand-in on a free port of 127.0.0.1 for the duration of the block."""
    state = KiminaStandIn(**options)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
