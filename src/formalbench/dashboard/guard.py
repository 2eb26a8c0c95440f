"""Who may use the dashboard, and which writes are really the reviewer's own.

- Access token: when the server is given one (required on any interface but loopback), every
  request must carry it: the `fb_token` cookie, an `X-Formalbench-Token` or `Authorization:
  Bearer` header, or `?token=` in the address (which then sets the cookie, so links work).
- Host check: without a token the server only answers to loopback host names, so that a web
  page elsewhere cannot reach it through DNS rebinding.
- Writes: POST only, from the same origin (`Origin` / `Sec-Fetch-Site`; `Origin: null`, sent
  by sandboxed frames and after cross-site redirects, is refused), and carrying the form token
  that matches the `fb_csrf` cookie. The token is signed with a secret that lives only in the
  server process (`CsrfTokens`): a plain double-submit cookie would accept any pair a client
  invents, and another page on 127.0.0.1 (cookies are shared across ports) could plant one in
  a browser that has not opened the dashboard yet. A planted or invented token fails the
  signature; a real one can only be read by a page of this origin.
- Order (issue 29 item 3): everything a header says (site, origin, a cookie this server
  signed) is checked before the body is read (`refusal_before_body`), so a forged POST costs
  no parsing, diffing or rendering of what it carries; only the form field's match with the
  cookie needs the body (`form_token_refusal`). A refused request is answered with the
  reason alone: nothing it sent is shown (item 2: a page elsewhere could otherwise pre-fill
  the editor, the note and the name under a fresh, valid token).
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


class CsrfTokens:
    """Form tokens `nonce.signature`, signed with a secret made when the server starts.

    A token is valid only if this process signed it, so a restart invalidates open pages
    (the refusal says to reload, and the reviewer's text is shown back)."""

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)

    def issue(self) -> str:
        nonce = secrets.token_urlsafe(18)
        return f"{nonce}.{self._sign(nonce)}"

    def valid(self, value: str | None) -> bool:
        if not value or len(value) > 128 or value.count(".") != 1:
            return False
        nonce, signature = value.split(".")
        return bool(nonce) and hmac.compare_digest(signature, self._sign(nonce))

    def value_for(self, request: Request) -> str:
        """The form token for this browser: its cookie when this server signed it, else a new
        one that the response sets."""
        current = request.cookies.get(CSRF_COOKIE)
        return current if current is not None and self.valid(current) else self.issue()

    def _sign(self, nonce: str) -> str:
        return hmac.new(self._secret, nonce.encode(), "sha256").hexdigest()


_TOKEN_REFUSAL = (
    "the form token is missing, was not issued by this server, or does not match this "
    "browser's cookie (the page may come from before a restart); reload the page and "
    "submit again"
)


def write_refusal(request: Request, form_token: str | None, tokens: CsrfTokens) -> str | None:
    """Why a POST must not be obeyed (None: it may). Checked before any write."""
    return refusal_before_body(request, tokens) or form_token_refusal(request, form_token)


def form_token_refusal(request: Request, form_token: str | None) -> str | None:
    """Why the form's token does not match the (already verified) cookie, or None."""
    cookie = request.cookies.get(CSRF_COOKIE) or ""
    if not form_token or not hmac.compare_digest(cookie.encode(), form_token.encode()):
        return _TOKEN_REFUSAL
    return None


def refusal_before_body(request: Request, tokens: CsrfTokens) -> str | None:
    """Why a POST must not be obeyed, from its headers alone (None: read its body)."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return f"the request came from another site (Sec-Fetch-Site: {site})"
    origin = request.headers.get("origin")
    if origin == "null":
        return (
            "the request came from an opaque origin (Origin: null: a sandboxed frame or a redirect)"
        )
    if origin is not None:
        expected = {f"{scheme}://{request.headers.get('host', '')}" for scheme in ("http", "https")}
        if origin not in expected:
            return f"the request came from another origin ({origin})"
    if not tokens.valid(request.cookies.get(CSRF_COOKIE)):
        return _TOKEN_REFUSAL
    return None
