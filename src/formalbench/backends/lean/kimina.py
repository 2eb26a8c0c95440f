"""`KiminaBackend`: check Lean through a Kimina Lean Server, for verification at cluster scale.

The server (project-numina/kimina-lean-server) keeps its own pool of REPLs. Its API:
`POST {url}/api/check` with `{"snippets": [{"id", "code"}], "timeout": s, ...}` answers
`{"results": [{"id", "time", "error", "response"}]}` where `response` is the REPL's own reply
(older servers answer the bare list). An API key goes as `Authorization: Bearer KEY`; when
none is given it is read from the environment variable `KIMINA_API_KEY` (it is never part of
`version()` or any message). `preflight()` asks `GET {url}/health` with a short timeout.

The server runs the leading `import` lines apart and sends the rest to the REPL, so reply
positions count from the first line after them; they are moved back to the snippet's lines
(`body_relative=False` for a server that reports whole-snippet positions). A server-side
timeout or failure is a result (status timeout or crash); a refused key or a wrong URL path
is a `BackendError` (it would fail every check); a server that is down or overloaded is
retried with backoff, then reported as a crash of that check.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator, Sequence
from typing import Any

import httpx

from formalbench.backends.base import Backend, CheckRequest
from formalbench.backends.lean.axioms import (
    AxiomQueries,
    append_axiom_queries,
    settle_messages,
    validate_targets,
)
from formalbench.backends.lean.repl_protocol import reply_diagnostics, reply_error, reply_holes
from formalbench.core.errors import BackendError, InputError
from formalbench.core.records import CheckResult, CheckStatus, Diagnostic, Language, Severity

API_KEY_ENV = "KIMINA_API_KEY"
HEALTH_PATH = "/health"


def leading_import_lines(code: str) -> int:
    """How many lines the server takes off the top (imports and blank lines before the body)."""
    count = 0
    for line in code.split("\n"):
        stripped = line.strip()
        if stripped and not stripped.startswith("import "):
            break
        count += 1
    return count


class KiminaBackend(Backend):
    """Lean checks on a remote Kimina Lean Server (see the module docstring)."""

    name = "kimina"
    # Lean commands appended to a checked text are elaborated and answered on their lines:
    # the verifier uses that to have Lean decide statement identity (checking/lean_identity).
    answers_queries = True
    language = Language.lean

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        workers: int | None = None,
        batch_size: int = 8,
        retries: int = 3,
        body_relative: bool = True,
    ) -> None:
        super().__init__(workers=workers, timeout=timeout)
        if not url.startswith(("http://", "https://")):
            raise InputError(f"Kimina server URL {url!r} must start with http:// or https://")
        if timeout <= 0:
            raise InputError("the Kimina timeout must be a positive number of seconds")
        self.url = url.rstrip("/")
        self.batch_size = max(1, batch_size)
        self.retries = max(0, retries)
        self.body_relative = body_relative
        headers = {"Content-Type": "application/json"}
        if api_key is None:
            api_key = os.environ.get(API_KEY_ENV) or None
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._http = httpx.Client(headers=headers)

    def version(self) -> str:
        return f"kimina-lean-server {self.url}"

    def _raise_if_refused(self, resp: httpx.Response) -> None:
        """A refused key is the user's to fix: one clear error, never retried."""
        if resp.status_code in (401, 403):
            raise BackendError(
                f"the Kimina server {self.url} refused the API key (HTTP {resp.status_code});"
                f" give api_key= or set {API_KEY_ENV}"
            )

    def preflight(self, timeout: float = 10.0) -> None:
        """One GET on the server's health route: an address that does not answer, or a
        refused key, is a BackendError now rather than a crash recorded on every attempt.

        Any other HTTP answer (an older server without the route answers 404) shows a
        server is listening; only a gateway that says the server behind it is down counts
        as unreachable.
        """
        endpoint = f"{self.url}{HEALTH_PATH}"
        try:
            resp = self._http.get(endpoint, timeout=timeout)
        except httpx.TimeoutException:
            raise BackendError(
                f"the Kimina server {self.url} did not answer within {timeout:g} s"
            ) from None
        except httpx.TransportError as exc:
            raise BackendError(f"cannot reach the Kimina server {self.url}: {exc}") from None
        self._raise_if_refused(resp)
        if resp.status_code in (502, 503, 504):
            raise BackendError(
                f"the Kimina server {self.url} is not available (HTTP {resp.status_code} on"
                f" {HEALTH_PATH})"
            )

    def check(
        self, source: str, *, targets: Sequence[str] = (), timeout: float | None = None
    ) -> CheckResult:
        return self._check_batch(
            [CheckRequest(source=source, targets=list(targets), timeout=timeout)]
        )[0]

    def check_many(self, requests: Sequence[CheckRequest]) -> Iterator[CheckResult]:
        """Send requests in batches of `batch_size` (the server checks a batch in parallel)."""
        batches = [
            requests[i : i + self.batch_size] for i in range(0, len(requests), self.batch_size)
        ]
        futures = [self._pool().submit(self._check_batch, batch) for batch in batches]
        for future in futures:
            yield from future.result()

    def _check_batch(self, requests: Sequence[CheckRequest]) -> list[CheckResult]:
        prepared: list[AxiomQueries] = []
        for req in requests:
            if not isinstance(req.source, str):
                raise InputError("Lean source must be text")
            prepared.append(append_axiom_queries(req.source, validate_targets(req.targets)))
        limit = max((r.timeout or self.timeout) for r in requests)
        payload = {
            "snippets": [{"id": str(i), "code": q.text} for i, q in enumerate(prepared)],
            "timeout": max(1, math.ceil(limit)),
            "debug": False,
            "reuse": True,
        }
        start = time.perf_counter()
        entries, failure = self._post(payload, limit)
        if failure is not None:
            status, detail = failure
            elapsed = time.perf_counter() - start
            return [
                CheckResult(backend=self.name, status=status, elapsed=elapsed, detail=detail)
                for _ in requests
            ]
        by_id = {str(e.get("id")): e for e in entries if isinstance(e, dict)}
        return [self._result(by_id.get(str(i)), q) for i, q in enumerate(prepared)]

    def _post(
        self, payload: dict[str, Any], limit: float
    ) -> tuple[list[Any], tuple[CheckStatus, str] | None]:
        endpoint = f"{self.url}/api/check"
        failure: tuple[CheckStatus, str] = (CheckStatus.crash, "no answer")
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(8.0, 0.5 * 2 ** (attempt - 1)))
            try:
                resp = self._http.post(endpoint, json=payload, timeout=limit + 30.0)
            except httpx.TimeoutException:
                return [], (
                    CheckStatus.timeout,
                    f"{endpoint} did not answer within {limit + 30:g} s",
                )
            except httpx.TransportError as exc:
                failure = (CheckStatus.crash, f"cannot reach {endpoint}: {exc}")
                continue
            self._raise_if_refused(resp)
            if resp.status_code == 429 or resp.status_code >= 500:
                failure = (CheckStatus.crash, f"{endpoint} answered HTTP {resp.status_code}")
                continue
            if resp.status_code >= 400:
                raise BackendError(
                    f"the Kimina server {endpoint} answered HTTP {resp.status_code}: {resp.text[:200]}"
                )
            try:
                data = resp.json()
            except ValueError:
                raise BackendError(f"the Kimina server {endpoint} did not answer JSON") from None
            entries = data.get("results") if isinstance(data, dict) else data
            if not isinstance(entries, list):
                raise BackendError(f"the Kimina server {endpoint} answered without `results`")
            return entries, None
        return [], failure

    def _result(self, entry: dict[str, Any] | None, queries: AxiomQueries) -> CheckResult:
        if entry is None:
            return CheckResult(
                backend=self.name, status=CheckStatus.crash, detail="no result for this snippet"
            )
        elapsed = float(entry.get("time") or 0.0)
        error = entry.get("error")
        response = entry.get("response")
        if error and not isinstance(response, dict):
            status = CheckStatus.timeout if "timed out" in str(error).lower() else CheckStatus.crash
            return CheckResult(backend=self.name, status=status, elapsed=elapsed, detail=str(error))
        response = response if isinstance(response, dict) else {}
        offset = leading_import_lines(queries.text) if self.body_relative else 0
        refused = reply_error(response)
        shifted = reply_diagnostics(response, offset)
        diagnostics, axioms, notes = settle_messages(shifted, queries)
        if refused is not None:
            diagnostics.append(Diagnostic(severity=Severity.error, message=refused))
        return CheckResult(
            backend=self.name,
            diagnostics=diagnostics,
            holes=reply_holes(response, offset),
            axioms=axioms,
            elapsed=elapsed,
            detail="; ".join(notes) or None,
        )

    def close(self) -> None:
        super().close()
        self._http.close()
