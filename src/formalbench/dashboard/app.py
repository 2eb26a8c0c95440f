"""The review dashboard: a FastAPI application over one formalize run directory.

Pages are rendered on the server (jinja2, autoescaped); the only script adds keyboard
shortcuts. Changes are POSTs guarded as described in `guard`; a decision carries the version
it was based on, and a stale one is answered 409 with the refused text shown back. Every
refused or failed POST re-renders the page with the reviewer's own text in the editor, so
nothing typed is ever lost.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from formalbench.core.errors import InputError
from formalbench.core.formalization import ReviewStatus
from formalbench.dashboard.checker import Rechecker
from formalbench.dashboard.construct_app import create_construct_app
from formalbench.dashboard.decide import DecideForm, decide
from formalbench.dashboard.export import accepted_tasks, to_jsonl
from formalbench.dashboard.frame import REVIEWER_COOKIE, bare_app, frame, remember_reviewer
from formalbench.dashboard.render import problem_url
from formalbench.dashboard.views import (
    ProblemView,
    backend_name,
    check_timeout,
    edit_diff,
    editor_start,
    order_candidates,
    run_language,
)
from formalbench.pipelines.formalize.metrics import FormalizeFiles
from formalbench.pipelines.formalize.reference import stored as stored_comparison
from formalbench.pipelines.run_dir import KIND_MARKERS
from formalbench.store.formalize import FormalizeStore
from formalbench.store.review import ProblemFilter, ReviewStore

PAGE_SIZE = 50


def open_run(run_dir: str | Path) -> tuple[FormalizeStore, ReviewStore]:
    """The run's two stores; an InputError when DIR is not a formalize run."""
    root = Path(run_dir)
    if not root.is_dir():
        raise InputError(f"{run_dir!s}: not a directory (give a formalize run directory)")
    path = FormalizeFiles(root).store
    if not path.is_file():
        raise InputError(
            f"{run_dir!s}: no {path.name} here; is it the run directory of `formalbench formalize` or `formalbench construct`?"
        )
    return FormalizeStore(path), ReviewStore(path)


def create_app(
    run_dir: str | Path,
    *,
    reviewer: str | None = None,
    token: str | None = None,
    allowed_hosts: list[str] | None = None,
    check_options: dict[str, Any] | None = None,
) -> FastAPI:
    """The dashboard for one run. `token`: required on every request when given;
    `allowed_hosts`: Host names answered (None: any; the server passes loopback names);
    `check_options`: the re-check backend's options, from the reviewer's own command line
    (a project folder, a toolchain), never from the run folder (see `views.check_timeout`).
    A construct run (its folder holds `construct.sqlite`) gets the construct pages."""
    if is_construct_run(run_dir):
        return create_construct_app(
            run_dir,
            reviewer=reviewer,
            token=token,
            allowed_hosts=allowed_hosts,
            check_options=check_options,
        )
    formalize, review = open_run(run_dir)
    rechecker = _rechecker(formalize, check_options or {})
    run_name = Path(run_dir).resolve().name

    app = bare_app(rechecker.close)
    app.state.formalize, app.state.review, app.state.rechecker = formalize, review, rechecker
    page = frame(app, run_name, token=token, allowed_hosts=allowed_hosts)
    render = page.render

    def too_large(request: Request, form: DecideForm) -> HTMLResponse:
        return render(request, "message.html", 413, title="Not saved: too large", text=form.error)

    @app.get("/", response_class=HTMLResponse)
    async def problem_list(request: Request) -> HTMLResponse:
        flt, qs = _filter(request.query_params)
        page = _int(request.query_params.get("page"), 1)
        rows, total = review.page(flt, (page - 1) * PAGE_SIZE, PAGE_SIZE)
        return render(
            request,
            "list.html",
            rows=rows,
            total=total,
            counts=review.counts(flt),
            categories=review.categories(),
            flt=flt,
            qs=qs,
            page=page,
            pages=max(1, math.ceil(total / PAGE_SIZE)),
            page_url=lambda n: "/?" + urlencode({**_qs_dict(flt), "page": n}),
            statuses=list(ReviewStatus),
        )

    async def problem_page(
        request: Request,
        pid: str,
        status: int = 200,
        *,
        qs: str,
        wanted: str | None = None,
        code: str | None = None,
        **extra: Any,
    ) -> HTMLResponse:
        problem = formalize.problem(pid)
        if problem is None:
            return render(
                request, "message.html", 404, title="No such problem", code=code,
                text=f"The run has no problem {pid!r}.",
            )  # fmt: skip
        summary = formalize.summary(pid)
        candidates = order_candidates(formalize.candidates(pid), summary)
        for cv in candidates:
            cv.comparison = stored_comparison(formalize, problem, cv.candidate)
        view = ProblemView(problem, candidates, summary, review.current(pid), review.history(pid))
        chosen, start = editor_start(view, wanted)
        text = start if code is None else code
        flt, _ = _filter(dict(parse_qsl(qs)))
        prev_id, next_id = review.neighbours(pid, flt)
        ctx: dict[str, Any] = {
            "view": view,
            "chosen": chosen,
            "code": text,
            "qs": qs,
            "prev_id": prev_id,
            "next_id": next_id,
            "reviewer": request.cookies.get(REVIEWER_COOKIE) or reviewer or "",
            "note": "",
            "base_version": view.decision.version if view.decision else 0,
            # off the event loop: a diff of a long text must not hold up other requests
            "diff": await asyncio.to_thread(
                edit_diff, chosen.candidate.code, text, chosen.candidate.id
            )
            if chosen
            else "",
            "recheck": None,
            "error": None,
            "saved": request.query_params.get("saved") == "1",
        }
        ctx.update(extra)
        return render(request, "problem.html", status, **ctx)

    @app.get("/p/{pid:path}", response_class=HTMLResponse)
    async def show_problem(request: Request, pid: str) -> HTMLResponse:
        _, qs = _filter(request.query_params)
        return await problem_page(request, pid, qs=qs, wanted=request.query_params.get("candidate"))

    async def read_post(request: Request) -> tuple[DecideForm | None, Response | None]:
        """The form of a POST that passed the guard, or the answer that ends it: headers are
        checked before the body is read, and a refusal shows nothing the request sent."""
        early = page.refusal_before_body(request)
        if early:
            return None, page.refused(request, early)
        form = await DecideForm.read(request)
        if form.unread:
            return None, too_large(request, form)
        late = page.form_token_refusal(request, form.csrf)
        if late:
            return None, page.refused(request, late)
        if form.error:
            return None, await problem_page(
                request, form.problem_id, 400, error=form.error, **_echo(form)
            )
        return form, None

    @app.post("/check", response_class=HTMLResponse)
    async def recheck(request: Request) -> Response:
        form, answer = await read_post(request)
        if form is None:
            assert answer is not None
            return answer
        result = await rechecker.check(form.code)
        return await problem_page(request, form.problem_id, recheck=result, **_echo(form))

    @app.post("/decide", response_class=HTMLResponse)
    async def decide_route(request: Request) -> Response:
        form, answer = await read_post(request)
        if form is None:
            assert answer is not None
            return answer
        outcome = decide(form, formalize, review, rechecker)
        if outcome.conflict is not None:
            conflict = outcome.conflict
            return render(
                request, "conflict.html", 409, form=form, current=conflict.current,
                message=str(conflict), reviewer=form.reviewer,
            )  # fmt: skip
        if outcome.error is not None:
            return await problem_page(
                request, form.problem_id, outcome.status, error=outcome.error, **_echo(form)
            )
        target = problem_url(form.problem_id, f"{form.qs}&saved=1" if form.qs else "saved=1")
        response = RedirectResponse(target, status_code=303)
        remember_reviewer(response, form.reviewer)
        return response

    @app.get("/export.jsonl")
    async def export(request: Request) -> Response:
        try:
            body = to_jsonl(accepted_tasks(formalize, review))
        except InputError as exc:
            return render(request, "message.html", 409, title="Cannot export", text=str(exc))
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_name) or "run"
        return Response(
            body,
            media_type="application/x-ndjson",
            headers={"Content-Disposition": f'attachment; filename="{name}-accepted.jsonl"'},
        )

    return app


def is_construct_run(run_dir: str | Path) -> bool:
    """Whether DIR holds a construct run (its marker store, as `pipelines.run_dir` knows it)."""
    return (Path(run_dir) / KIND_MARKERS["construct"]).is_file()


def _rechecker(formalize: FormalizeStore, options: dict[str, Any]) -> Rechecker:
    """The run's backend for re-checks: named by its config, else by its candidates'
    language; its options are the reviewer's (`options`), its timeout the run's (bounded)."""
    config = formalize.config() or {}
    first = next(iter(formalize.problems()), None)
    candidates = formalize.candidates(first.id) if first is not None else []
    name = backend_name(config, run_language(config, candidates))
    return Rechecker(name, options, check_timeout(config))


def _filter(params: Mapping[str, str]) -> tuple[ProblemFilter, str]:
    status = params.get("status") or ""
    flt = ProblemFilter(
        status=ReviewStatus(status) if status and status in ReviewStatus.__members__ else None,
        category=params.get("category") or None,
        text=(params.get("q") or "").strip() or None,
    )
    return flt, urlencode(_qs_dict(flt))


def _qs_dict(flt: ProblemFilter) -> dict[str, str]:
    pairs = {
        "status": flt.status.value if flt.status else "",
        "category": flt.category or "",
        "q": flt.text or "",
    }
    return {k: v for k, v in pairs.items() if v}


def _echo(form: DecideForm) -> dict[str, Any]:
    """What a page shows back after a POST: the reviewer's own text, never the stored one."""
    return {
        "wanted": form.candidate_id,
        "code": form.code,
        "note": form.note,
        "reviewer": form.reviewer,
        "base_version": form.base_version,
        "qs": form.qs,
    }


def _int(value: str | None, default: int) -> int:
    try:
        return max(1, int(value)) if value else default
    except ValueError:
        return default
