"""A stand-in for an OpenAI-compatible (and Anthropic) HTTP endpoint, for tests only.

Real HTTP on 127.0.0.1 with a free port, so the tests drive the real `openai` / `anthropic`
SDKs end to end. Scriptable: queue `Reply` objects (status, Retry-After headers, delay, texts,
usage) that are served in order to chat requests; once the queue is empty every chat request
gets a 200 from `responder`. It counts requests per path and the most requests in flight at
once, and records each request's headers and JSON body. `/v1/embeddings` answers with
`embedder`'s vector for each input (by default words hashed into 128 dimensions, so texts
that share words are close); scripted replies are served to it too.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import threading
import time
import zlib
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"
MODELS = "/v1/models"
EMBEDDINGS = "/v1/embeddings"


@dataclass
class Reply:
    """One scripted answer to a chat request."""

    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    texts: list[str] | None = None  # the choices; default: the responder's
    usage: tuple[int, int] | None = None  # (prompt, completion) for the whole request
    message: str = "scripted failure"
    raw: str | None = None  # a body sent verbatim (text/html), e.g. a proxy's error page


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def _words(text: str) -> int:
    return len(text.split())


def echo_responder(body: dict[str, Any]) -> list[str]:
    """Default replies: `n` distinct texts that quote the last message."""
    last = body["messages"][-1]["content"] if body.get("messages") else ""
    if isinstance(last, list):  # anthropic content blocks
        last = " ".join(b.get("text", "") for b in last)
    return [f"answer {i} to: {last}" for i in range(int(body.get("n", 1) or 1))]


def hashed_words(text: str, dimensions: int = 128) -> list[float]:
    """A bag of words hashed into `dimensions` counts (deterministic across processes)."""
    vector = [0.0] * dimensions
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[zlib.crc32(word.encode()) % dimensions] += 1.0
    return vector


class StandinServer:
    """Start with `with StandinServer() as srv:`; point clients at `srv.base_url`."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        models: tuple[str, ...] | None = ("standin-model",),
        max_choices: int | None = None,
    ) -> None:
        self.api_key = api_key
        self.models = models  # None: no GET /v1/models route (404), like some local servers
        self.max_choices = max_choices  # like servers that ignore `n`
        self.responder: Callable[[dict[str, Any]], list[str]] = echo_responder
        self.embedder: Callable[[str], list[float]] = hashed_words
        self.requests: list[Seen] = []
        self.max_concurrent = 0
        self._queue: deque[Reply] = deque()
        self._counts: Counter[str] = Counter()
        self._in_flight = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def count(self, path: str = CHAT) -> int:
        with self._lock:
            return self._counts[path]

    def __enter__(self) -> StandinServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    # -- serving ---------------------------------------------------------------------------

    def _authorised(self, headers: dict[str, str]) -> bool:
        if self.api_key is None:
            return True
        bearer = headers.get("authorization", "")
        return bearer == f"Bearer {self.api_key}" or headers.get("x-api-key") == self.api_key

    def _serve(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple:
        with self._lock:
            self._counts[path] += 1
            self.requests.append(Seen(path, headers, body))
            self._in_flight += 1
            self.max_concurrent = max(self.max_concurrent, self._in_flight)
            reply = self._queue.popleft() if path != MODELS and self._queue else Reply()
        try:
            if reply.delay:
                time.sleep(reply.delay)
            if not self._authorised(headers):
                given = headers.get("authorization", headers.get("x-api-key", ""))
                # Echo the key the way careless servers do: the client must redact it.
                return 401, {}, _error(f"Incorrect API key provided: {given}", "invalid_api_key")
            if reply.raw is not None:
                return reply.status, reply.headers, reply.raw
            if reply.status != 200:
                return reply.status, reply.headers, _error(reply.message, "scripted")
            if path == MODELS:
                assert self.models is not None
                data = [
                    {"id": m, "object": "model", "created": 0, "owned_by": "standin"}
                    for m in self.models
                ]
                return 200, {}, {"object": "list", "data": data}
            if path == EMBEDDINGS:
                return 200, reply.headers, _embeddings(body, self.embedder)
            texts = reply.texts if reply.texts is not None else self.responder(body)
            if self.max_choices is not None:
                texts = texts[: self.max_choices]
            prompt_words = sum(_words(str(m.get("content", ""))) for m in body.get("messages", []))
            prompt, completion = reply.usage or (prompt_words, sum(_words(t) for t in texts))
            if path == MESSAGES:
                return 200, reply.headers, _anthropic(body, texts[0], prompt, completion)
            return 200, reply.headers, _openai(body, texts, prompt, completion)
        finally:
            with self._lock:
                self._in_flight -= 1

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out in two writes

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                return

            def _answer(self, path: str, body: dict[str, Any]) -> None:
                headers = {k.lower(): v for k, v in self.headers.items()}
                if path not in (CHAT, MESSAGES, MODELS, EMBEDDINGS) or (
                    path == MODELS and server.models is None
                ):
                    status, extra, payload = 404, {}, _error(f"no route {path}", "not_found")
                else:
                    status, extra, payload = server._serve(path, headers, body)
                raw = isinstance(payload, str)
                data = payload.encode() if raw else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "text/html" if raw else "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in extra.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    pass

            def do_GET(self) -> None:  # noqa: N802 - http.server naming
                self._answer(self.path.split("?")[0], {})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length) if length else b"{}"
                self._answer(self.path.split("?")[0], json.loads(raw or b"{}"))

        return Handler


def _error(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": code, "code": code}}


def _openai(body: dict[str, Any], texts: list[str], prompt: int, completion: int) -> dict:
    return {
        "id": "chatcmpl-standin",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "standin-model"),
        "choices": [
            {
                "index": i,
                "message": {"role": "assistant", "content": t},
                "finish_reason": "stop",
            }
            for i, t in enumerate(texts)
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def _embeddings(body: dict[str, Any], embed: Callable[[str], list[float]]) -> dict:
    inputs = body.get("input", [])
    inputs = [inputs] if isinstance(inputs, str) else list(inputs)
    data = []
    for i, text in enumerate(inputs):
        vector: Any = embed(str(text))
        if body.get("encoding_format") == "base64":
            vector = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
        data.append({"object": "embedding", "index": i, "embedding": vector})
    tokens = sum(_words(str(t)) for t in inputs)
    return {
        "object": "list",
        "data": data,
        "model": body.get("model", "standin-model"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _anthropic(body: dict[str, Any], text: str, prompt: int, completion: int) -> dict:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    forced = (body.get("tool_choice") or {}).get("name")
    if forced:  # a forced tool (structured output): the reply's JSON is the tool's input
        try:
            given = json.loads(text)
        except json.JSONDecodeError:
            given = {"text": text}
        content = [{"type": "tool_use", "id": "toolu_standin", "name": forced, "input": given}]
    return {
        "id": "msg_standin",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "standin-model"),
        "content": content,
        "stop_reason": "tool_use" if forced else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": completion},
    }
