"""Check one source through a leased REPL process: header once, body in its environment.

The header's commands are elaborated once per process (`{"cmd": header}`), and the env number
it returns is kept with its messages; the body goes as `{"cmd": body, "env": n}` with the
`#print axioms` queries appended. The REPL numbers the body's lines from 1, so every body
position is moved down by the number of source lines before the body; header messages are
mapped back line by line (comments and blank lines between header commands are not sent).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from formalbench.backends.lean.axioms import append_axiom_queries, settle_messages
from formalbench.backends.lean.header import SourceSplit
from formalbench.backends.lean.pool import ReplPool
from formalbench.backends.lean.process import Exchange, HeaderEnv, ReplProcess
from formalbench.backends.lean.repl_protocol import reply_diagnostics, reply_error, reply_holes
from formalbench.core.records import CheckResult, CheckStatus, Diagnostic, Severity

_UNKNOWN_ENV = "unknown environment"


def _header_env(
    proc: ReplProcess, split: SourceSplit, timeout: float
) -> tuple[HeaderEnv | None, Exchange | None, str | None]:
    """The header's environment in `proc`, elaborating it if needed.

    Returns (env, None, None) on success, (None, exchange, None) when the process failed
    (timeout, crash, memory), or (None, None, error text) when Lean refused the header.
    """
    key = split.header_key
    known = proc.headers.get(key)
    if known is not None and proc.alive:
        return known, None, None
    exchange = proc.request({"cmd": key}, timeout)
    if exchange.status != CheckStatus.ok or exchange.reply is None:
        return None, exchange, None
    reply = exchange.reply
    error = reply_error(reply)
    if error is not None or not isinstance(reply.get("env"), int):
        return None, None, error or f"unexpected reply {reply!r}"
    header = HeaderEnv(reply["env"], reply_diagnostics(reply))
    proc.headers[key] = header
    return header, None, None


def _mapped_header_messages(header: HeaderEnv, split: SourceSplit) -> list[Diagnostic]:
    return [
        d.model_copy(
            update={"line": split.header_line(d.line), "end_line": split.header_line(d.end_line)}
        )
        for d in header.messages
    ]


def _shift(diag: Diagnostic, offset: int) -> Diagnostic:
    if not offset:
        return diag
    return diag.model_copy(
        update={
            "line": None if diag.line is None else diag.line + offset,
            "end_line": None if diag.end_line is None else diag.end_line + offset,
        }
    )


def check_in_pool(
    pool: ReplPool,
    split: SourceSplit,
    targets: Sequence[str],
    *,
    timeout: float,
    header_timeout: float,
    backend: str = "lean",
) -> CheckResult:
    """Check the split source on a pooled process; every failure comes back as a result."""
    queries = append_axiom_queries(split.body, targets)
    first_header_line = split.header_lines[0][0] if split.header_lines else 1
    with pool.lease(split.header_key) as proc:
        start = time.perf_counter()
        for _attempt in range(2):  # a second try only after "Unknown environment."
            header, failed, refused = _header_env(proc, split, header_timeout)
            if failed is not None:
                return CheckResult(
                    backend=backend,
                    status=failed.status,
                    elapsed=time.perf_counter() - start,
                    detail=f"while elaborating the header: {failed.detail}",
                )
            if header is None:
                message = f"the header could not be elaborated: {refused}"
                return CheckResult(
                    backend=backend,
                    diagnostics=[
                        Diagnostic(severity=Severity.error, message=message, line=first_header_line)
                    ],
                    elapsed=time.perf_counter() - start,
                )
            if not split.body.strip() and not targets:
                proc.uses += 1
                return CheckResult(
                    backend=backend,
                    diagnostics=_mapped_header_messages(header, split),
                    elapsed=time.perf_counter() - start,
                )
            exchange = proc.request({"cmd": queries.text, "env": header.env}, timeout)
            proc.uses += 1
            error = reply_error(exchange.reply) if exchange.reply is not None else None
            if error is not None and error.strip().rstrip(".").lower() == _UNKNOWN_ENV:
                proc.stop()  # our env numbers are stale: start over once
                continue
            break
        elapsed = time.perf_counter() - start
    if exchange.status != CheckStatus.ok or exchange.reply is None:
        return CheckResult(
            backend=backend, status=exchange.status, elapsed=elapsed, detail=exchange.detail
        )
    reply = exchange.reply
    assert header is not None  # every pass of the loop above returns when it has none
    diagnostics = _mapped_header_messages(header, split)
    if error is not None:
        diagnostics.append(
            Diagnostic(severity=Severity.error, message=error, line=split.body_offset + 1)
        )
    body, axioms, notes = settle_messages(reply_diagnostics(reply), queries)
    offset = split.body_offset
    diagnostics += [_shift(d, offset) for d in body]
    return CheckResult(
        backend=backend,
        diagnostics=diagnostics,
        holes=reply_holes(reply, offset),
        axioms=axioms,
        elapsed=elapsed,
        detail="; ".join(notes) or None,
    )
