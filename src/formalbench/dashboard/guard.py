"""Who may use the dashboard, and which writes are really the reviewer's own.

- Access token: when the server is given one (required on any interface but loopback), every
  request must carry it: the `fb_token` cookie, an `X-Formalbench-Token` or `Authorization:
  Bearer` header, or `?token=` in the address (which then sets the cookie, so links work).
- Host check: without a token the server only answers to loopback host names, so that a web
  page elsewhere cannot reach it through DNS rebinding.
- Writes: POST only, from the same origin (`Origin` / `Sec-Fetch-Site`), and carrying the
  form token that matches the `fb_csrf` cookie (a "double submit": another site can neither
  read the cookie nor make the browser send it, it is SameSite=Strict).
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Iterable

from starlette.requests import Request

TOKEN_COOKIE = "fb_token"
CSRF_COOKIE = "fb_csrf"
TOKEN_HEADER = "x-formalbench-token"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]", "::1")


def host_allowed(request: Request, allowed: Iterable[str] | None) -> bool:
    """Whether the Host header names one of `allowed` (None: any host)."""
    if allowed is None:
        return True
    host = request.headers.get("host", "")
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return name.lower() in {a.lower() for a in allowed}


def token_of(request: Request) -> tuple[str | None, bool]:
    """The access token a request carries, and whether it came in the address."""
    header = request.headers.get(TOKEN_HEADER)
    if header:
        return header, False
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip(), False
    query = request.query_params.get("token")
    if query:
        return query, True
    return request.cookies.get(TOKEN_COOKIE), False


def token_ok(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def csrf_value(request: Request) -> str:
    """The form token for this browser: its cookie, or a new one the response will set."""
    current = request.cookies.get(CSRF_COOKIE, "")
    return current if _well_formed(current) else secrets.token_urlsafe(24)


def _well_formed(value: str) -> bool:
    return 16 <= len(value) <= 64 and all(c.isalnum() or c in "-_" for c in value)


def write_refusal(request: Request, form_token: str | None) -> str | None:
    """Why a POST must not be obeyed (None: it may). Checked before any write."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return f"the request came from another site (Sec-Fetch-Site: {site})"
    origin = request.headers.get("origin")
    if origin is not None and origin != "null":
        expected = {f"{scheme}://{request.headers.get('host', '')}" for scheme in ("http", "https")}
        if origin not in expected:
            return f"the request came from another origin ({origin})"
    cookie = request.cookies.get(CSRF_COOKIE)
    if not cookie or not form_token or not hmac.compare_digest(cookie, form_token):
        return (
            "the form token is missing or does not match this browser's cookie "
            "(the page may come from before a cookie reset); reload the page and submit again"
        )
    return None
