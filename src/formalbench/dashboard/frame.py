"""What the dashboards of every kind of run share: the FastAPI application, the access
middleware (host check, access token, security headers), the signed form token and `render`.

It sits below `app` (formalize runs) and `construct_app` (construct runs), so each imports it
downward and neither imports the other's module to get it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from formalbench.dashboard import guard
from formalbench.dashboard.render import make_env

HERE = Path(__file__).resolve().parent
REVIEWER_COOKIE = "fb_reviewer"

# Scripts and styles from this server only (the pages have no inline script or style), no
# frames, forms posting only here: a value that slipped past escaping could still not run.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


def bare_app(*closers: Callable[[], None]) -> FastAPI:
    """The FastAPI application both kinds of run start from: no API docs pages (nothing but
    the review pages is served), and `closers` run when the server stops."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        for close in closers:
            close()

    return FastAPI(
        title="formalbench review",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )


class Frame:
    """`render(request, template, status=200, **context)` gives every page the signed form
    token; `refusal(request, form_token)` says why a POST must not be obeyed (None: it may)."""

    def __init__(self, run_name: str, tokens: guard.CsrfTokens) -> None:
        self.run_name = run_name
        self.tokens = tokens
        self.env = make_env()

    def render(self, request: Request, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        csrf = self.tokens.value_for(request)
        html = self.env.get_template(name).render(csrf=csrf, run_name=self.run_name, **ctx)
        response = HTMLResponse(html, status_code=status)
        if request.cookies.get(guard.CSRF_COOKIE) != csrf:
            response.set_cookie(guard.CSRF_COOKIE, csrf, samesite="strict", httponly=True)
        return response

    def refusal(self, request: Request, form_token: str | None) -> str | None:
        return guard.write_refusal(request, form_token, self.tokens)

    def refusal_before_body(self, request: Request) -> str | None:
        """Why a POST is refused from its headers alone (see `guard`); None: read it."""
        return guard.refusal_before_body(request, self.tokens)

    def form_token_refusal(self, request: Request, form_token: str | None) -> str | None:
        return guard.form_token_refusal(request, form_token)

    def refused(self, request: Request, reason: str) -> HTMLResponse:
        """The answer to a refused POST: the reason and nothing the request sent (issue 29
        item 2). What the reviewer typed is still in their browser (Back keeps a form's
        fields); showing it from the request would show a forger's text as the reviewer's."""
        return self.render(
            request, "message.html", 403, title="Not saved: request refused",
            text=f"{reason}. Nothing of this request was read into the page or kept. If you "
            "sent it, go back (your browser keeps what you typed), reload, and submit again.",
        )  # fmt: skip


def frame(
    app: FastAPI,
    run_name: str,
    *,
    token: str | None,
    allowed_hosts: list[str] | None,
) -> Frame:
    """Mount the static files and the access middleware on `app`; the page renderer."""
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    @app.middleware("http")
    async def access(request: Request, call_next: Any) -> Response:
        if not guard.host_allowed(request, allowed_hosts):
            return PlainTextResponse("host not allowed: use the address the server printed", 403)
        in_address = False
        if token is not None:
            carried, in_address = guard.token_of(request)
            if not guard.token_ok(carried, token):
                return PlainTextResponse(
                    "this dashboard needs its access token: open the address the server "
                    "printed (with ?token=...) or send the X-Formalbench-Token header",
                    401,
                )
        if in_address and request.method == "GET":
            # keep the token out of the history and the address bar: the cookie carries it now
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            response: Response = RedirectResponse(
                request.url.path + (f"?{urlencode(rest)}" if rest else ""), status_code=303
            )
        else:
            response = await call_next(request)
        if in_address:
            response.set_cookie(guard.TOKEN_COOKIE, token or "", httponly=True, samesite="strict")
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response

    return Frame(run_name, guard.CsrfTokens())


def remember_reviewer(response: Response, reviewer: str) -> None:
    """The reviewer's name for the next page; scripts never need it (HttpOnly)."""
    response.set_cookie(
        REVIEWER_COOKIE, reviewer, samesite="strict", httponly=True, max_age=365 * 86400
    )
