"""The HTTP face of `formalbench serve`: Kimina Lean Server's routes over the strict verifier.

Routes (each also under `/api`, where Kimina's current client posts):
- `POST /verify` (and `/one_pass_verify_batch`): Kimina's batch form, answered
  `{"results": [{"custom_id", "error", "response": {"messages", "sorries", "time"}, ...}]}`;
- `POST /check`: `{"snippets": [...]}` answered `{"results": [{"id", ...}]}` (Kimina's
  `/api/check`), or `{"snippet": {...}}` answered with that one result; `POST /checks`
  answers the bare list (Kimina's older route);
- `POST /tasks` `{"original"}` -> `{"task_id"}`; `GET /tasks/{task_id}`;
- `GET /health` (no key needed), `GET /metrics` (Prometheus text; `?format=json`).
An item carrying `original` or `task_id` gets the strict verdict (`engine.py`).

Limits: a body over `max_body_bytes` is 413 before it is parsed; more items than the queue
can ever hold is 413; items that do not fit in the queue now are 429 with `Retry-After`
(`queue.Admission`); each item's checks get the request's `timeout` capped at `max_timeout`;
a request not answered within `request_timeout` gets `error: timeout` for its unfinished items
(their slots are held until their checks really end). Every request gets an id (the client's
`X-Request-ID` when it is a short token, else a fresh one), returned in `X-Request-ID` and
written in one JSON log line per request.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, ValidationError

from formalbench.service.engine import Engine
from formalbench.service.metrics import Metrics, prometheus
from formalbench.service.models import CheckRequest, Item, TaskRequest, VerifyRequest
from formalbench.service.queue import Admission

log = logging.getLogger("formalbench.serve")

_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
OPEN_PATHS = frozenset({"/health", "/api/health", "/"})


class Refusal(Exception):
    """A request answered with an HTTP error before any check (status, one-line detail)."""

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers or {}


def log_event(**fields: Any) -> None:
    """One structured log line (a JSON object)."""
    log.info(json.dumps(fields, ensure_ascii=False, default=str))


def create_app(
    engine: Engine,
    *,
    api_key: str | None,
    capacity: int = 64,
    max_body_bytes: int = 16 << 20,
    max_timeout: float = 300.0,
    request_timeout: float = 900.0,
) -> FastAPI:
    """The app over `engine`; `api_key` None serves without a key (loopback only, server.py)."""
    app = FastAPI(title="formalbench serve", docs_url=None, redoc_url=None, openapi_url=None)
    admission = Admission(capacity, engine.workers)
    metrics = Metrics()
    app.state.engine, app.state.admission, app.state.metrics = engine, admission, metrics

    @app.middleware("http")
    async def frame(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        given = request.headers.get("x-request-id", "")
        rid = given if _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex[:16]
        request.state.rid = rid
        t0 = time.monotonic()
        metrics.add("requests")
        if (
            api_key is not None
            and request.url.path not in OPEN_PATHS
            and not _authorized(request, api_key)
        ):
            response: Response = JSONResponse({"detail": "missing or wrong API key"}, 401)
        else:
            response = await call_next(request)  # a Refusal is answered by `refusal` below
        response.headers["X-Request-ID"] = rid
        log_event(
            event="request",
            request_id=rid,
            method=request.method,
            path=request.url.path,
            status=response.status_code,
            items=getattr(request.state, "items", 0),
            seconds=round(time.monotonic() - t0, 3),
        )
        return response

    @app.exception_handler(Refusal)
    async def refusal(_request: Request, exc: Refusal) -> Response:
        return _refused(exc)

    async def read(request: Request, model: type[BaseModel]) -> Any:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > max_body_bytes:
            raise Refusal(413, f"request body over {max_body_bytes} bytes")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > max_body_bytes:
                raise Refusal(413, f"request body over {max_body_bytes} bytes")
        try:
            return model.model_validate_json(bytes(body))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "body"
            raise Refusal(422, f"{where}: {first.get('msg', 'invalid')}") from None

    async def run(
        request: Request, items: list[Item], timeout: float, use_cache: bool
    ) -> list[dict[str, Any]]:
        request.state.items = len(items)
        if len(items) > capacity:
            raise Refusal(413, f"{len(items)} items in one request; at most {capacity}")
        if not admission.admit(len(items)):
            metrics.add("rejected_busy")
            wait = admission.retry_after()
            raise Refusal(429, f"busy: {admission.held} items queued", {"Retry-After": str(wait)})
        metrics.add("items", len(items))
        limit = min(timeout, max_timeout)
        started: list[Future[dict[str, Any]]] = []
        for item in items:
            job = engine.executor.submit(engine.answer, item, limit, use_cache)
            job.add_done_callback(_release(admission, metrics))
            started.append(job)
        waiting = [asyncio.wrap_future(job) for job in started]
        await asyncio.wait(waiting, timeout=request_timeout)
        out = []
        for item, job in zip(items, started, strict=True):
            if job.done() and not job.cancelled():
                body = job.result()
            else:
                job.cancel()  # not started yet: its slot is freed now; running: it ends later
                metrics.add("errors_timeout")
                body = {"error": f"timeout: no answer within {request_timeout:g} s"}
            route = body.pop("route", None)
            if route in ("strict", "compile"):
                metrics.checked(route)
            log_event(
                event="item",
                request_id=request.state.rid,
                id=item.name(),
                route=route,
                passed=(body.get("verdict") or {}).get("passed"),
                error=(body.get("error") or "")[:200] or None,
                seconds=body.get("time"),
            )
            out.append(body)
        return out

    async def verify(request: Request) -> dict[str, Any]:
        req = await read(request, VerifyRequest)
        bodies = await run(request, req.codes, req.timeout, not req.disable_cache)
        return {
            "results": [
                _kimina(item.name(), b, "custom_id")
                for item, b in zip(req.codes, bodies, strict=True)
            ]
        }

    async def check_items(request: Request) -> tuple[CheckRequest, list[dict[str, Any]]]:
        req = await read(request, CheckRequest)
        bodies = await run(request, req.items(), req.timeout, req.reuse)
        return req, [_kimina(i.name(), b, "id") for i, b in zip(req.items(), bodies, strict=True)]

    async def check(request: Request) -> Any:
        req, results = await check_items(request)
        return results[0] if req.snippet is not None else {"results": results}

    async def checks(request: Request) -> Any:
        return (await check_items(request))[1]

    async def tasks(request: Request) -> dict[str, Any]:
        req = await read(request, TaskRequest)
        return {"task_id": await asyncio.to_thread(engine.tasks.register, req.original)}

    async def task(task_id: str) -> Any:
        original = await asyncio.to_thread(engine.tasks.get, task_id)
        if original is None:
            raise Refusal(404, f"unknown task_id {task_id!r}")
        return {"task_id": task_id, "original": original}

    async def health() -> dict[str, Any]:
        return {"status": "ok", "backend": engine.backend.version()}

    async def metrics_route(format: str = "prometheus") -> Response:  # noqa: A002 - the query name
        cache = engine.cache
        values = metrics.snapshot(
            queue_length=admission.held,
            queue_capacity=capacity,
            workers=engine.workers,
            sessions=engine.sessions(),
            cache_hits=cache.hits if cache is not None else 0,
            cache_misses=cache.misses if cache is not None else 0,
            checks_shared=engine.shared,
        )
        if format == "json":
            return JSONResponse(values)
        return PlainTextResponse(prometheus(values), media_type="text/plain; version=0.0.4")

    for prefix in ("", "/api"):
        app.post(f"{prefix}/verify")(verify)
        app.post(f"{prefix}/one_pass_verify_batch")(verify)
        app.post(f"{prefix}/check")(check)
        app.post(f"{prefix}/checks")(checks)
        app.post(f"{prefix}/tasks")(tasks)
        app.get(f"{prefix}/tasks/{{task_id}}")(task)
        app.get(f"{prefix}/health")(health)
        app.get(f"{prefix}/metrics")(metrics_route)
    app.get("/")(health)
    return app


def _authorized(request: Request, key: str) -> bool:
    """Kimina's `Authorization: Bearer KEY`, or `X-API-Key: KEY`; compared in constant time."""
    given = request.headers.get("authorization", "")
    given = given[7:].strip() if given.lower().startswith("bearer ") else given.strip()
    given = given or request.headers.get("x-api-key", "").strip()
    return bool(given) and hmac.compare_digest(given.encode(), key.encode())


def _refused(refused: Refusal) -> Response:
    return JSONResponse({"detail": refused.detail}, refused.status, headers=refused.headers)


def _release(admission: Admission, metrics: Metrics) -> Callable[[Future[dict[str, Any]]], None]:
    def done(job: Future[dict[str, Any]]) -> None:
        seconds = None
        if not job.cancelled() and job.exception() is None:
            seconds = job.result().get("time")
        admission.release(seconds)

    return done


def _kimina(name: str, body: dict[str, Any], id_key: str) -> dict[str, Any]:
    """One result in Kimina's shape: the id first, then `error`, `response`, `time`, and our
    `verdict` on the strict route."""
    out: dict[str, Any] = {id_key: name, "error": body.get("error")}
    if body.get("response") is not None:
        out["response"] = body["response"]
    out["time"] = body.get("time", 0.0)
    if "verdict" in body:
        out["verdict"] = body["verdict"]
    return out
