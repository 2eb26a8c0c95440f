"""The review dashboard's pages for a construct run (`formalbench review D` on a construct D).

The same application frame as a formalize run (`app.frame`: access token, loopback host
check, security headers, CSRF form token, autoescaped templates), with pages of its own: the
exercise list, and per exercise the source with its expansion, every source stage's text
and review, and the blocks with their compile rounds and block reviews. The reviewer edits
block bodies; a re-check assembles the whole file (header, the pipeline's block comments,
the bodies) and checks it with the run's assistant through `Rechecker`, whose backend goes
through the strict verifier's gate like every check. Decisions are versioned rows of
`store.review` in the run's own `construct.sqlite`, exactly as for a formalize run.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.datastructures import FormData

from formalbench.core.formalization import ReviewDecision, ReviewStatus
from formalbench.dashboard.checker import Rechecker
from formalbench.dashboard.construct_export import accepted_tasks
from formalbench.dashboard.construct_view import ConstructRun, ExerciseRow, ExerciseView
from formalbench.dashboard.decide import ACTIONS, MAX_TEXT, DecideForm
from formalbench.dashboard.export import to_jsonl
from formalbench.dashboard.frame import REVIEWER_COOKIE, bare_app, frame, remember_reviewer
from formalbench.dashboard.render import problem_url
from formalbench.dashboard.views import backend_name, check_timeout, edit_diff
from formalbench.store.review import ReviewConflict, ReviewStore


def open_construct(run_dir: str | Path) -> tuple[ConstructRun, ReviewStore]:
    """The run (read-only) and its review decisions (in the same SQLite file)."""
    run = ConstructRun(run_dir)
    return run, ReviewStore(run.source.path)


def make_rechecker(run: ConstructRun, options: dict[str, Any] | None = None) -> Rechecker:
    """The run's own assistant, as its settings (construct.json) name it; its options are the
    reviewer's (`formalbench review --project/--toolchain`), never the run folder's."""
    settings = run.settings
    name = backend_name(settings, run.language())
    return Rechecker(name, dict(options or {}), check_timeout(settings))


def create_construct_app(
    run_dir: str | Path,
    *,
    reviewer: str | None = None,
    token: str | None = None,
    allowed_hosts: list[str] | None = None,
    check_options: dict[str, Any] | None = None,
) -> FastAPI:
    run, review = open_construct(run_dir)
    rechecker = make_rechecker(run, check_options)
    run_name = Path(run_dir).resolve().name

    app = bare_app(rechecker.close, run.close, review.close)
    app.state.run, app.state.review, app.state.rechecker = run, review, rechecker
    page = frame(app, run_name, token=token, allowed_hosts=allowed_hosts)
    render = page.render

    def too_large(request: Request, form: DecideForm) -> HTMLResponse:
        return render(request, "message.html", 413, title="Not saved: too large", text=form.error)

    def listed(params: Any) -> tuple[list[ExerciseRow], ReviewStatus | None, str, str]:
        status = params.get("status") or None
        wanted = ReviewStatus(status) if status and status in ReviewStatus.__members__ else None
        text = (params.get("q") or "").strip()
        rows = run.rows(review.statuses())
        shown = [
            r
            for r in rows
            if (wanted is None or r.status == wanted)
            and (not text or text.lower() in f"{r.id} {r.source_idx} {r.preview}".lower())
        ]
        qs = urlencode({k: v for k, v in (("status", status or ""), ("q", text)) if v})
        return shown, wanted, text, qs

    @app.get("/", response_class=HTMLResponse)
    async def exercise_list(request: Request) -> HTMLResponse:
        shown, wanted, text, qs = listed(request.query_params)
        counts = {s: 0 for s in ReviewStatus}
        for r in run.rows(review.statuses()):
            counts[r.status] += 1
        return render(
            request, "construct_list.html", rows=shown, counts=counts, wanted=wanted,
            text=text, qs=qs, statuses=list(ReviewStatus),
        )  # fmt: skip

    async def exercise_page(
        request: Request,
        pid: str,
        status: int = 200,
        *,
        qs: str,
        codes: dict[int, str] | None = None,
        code: str | None = None,
        **extra: Any,
    ) -> HTMLResponse:
        view = run.exercise(pid)
        if view is None:
            return render(
                request, "message.html", 404, title="No such exercise", code=code,
                text=f"The run has no exercise {pid!r}.",
            )  # fmt: skip
        view.decision, view.history = review.current(pid), review.history(pid)
        start = view.start_codes() if codes is None else codes
        if code is None:
            whole = view.assemble(start) if view.formal else _decided_or(view)
        else:
            whole = code
        shown, _, _, _ = listed(dict(parse_qsl(qs)))
        ids = [r.id for r in shown]
        here = ids.index(pid) if pid in ids else -1
        ctx: dict[str, Any] = {
            "view": view,
            "codes": start,
            "code": whole,
            "qs": qs,
            "prev_id": ids[here - 1] if here > 0 else None,
            "next_id": ids[here + 1] if 0 <= here < len(ids) - 1 else None,
            "reviewer": request.cookies.get(REVIEWER_COOKIE) or reviewer or "",
            "note": "",
            "base_version": view.decision.version if view.decision else 0,
            # off the event loop: a diff of a long file must not hold up other requests
            "diff": await asyncio.to_thread(edit_diff, view.packaged, whole, view.file_name or pid),
            "recheck": None,
            "error": None,
            "saved": request.query_params.get("saved") == "1",
        }
        ctx.update(extra)
        return render(request, "exercise.html", status, **ctx)

    @app.get("/p/{pid:path}", response_class=HTMLResponse)
    async def show_exercise(request: Request, pid: str) -> HTMLResponse:
        _, _, _, qs = listed(request.query_params)
        return await exercise_page(request, pid, qs=qs)

    async def read(request: Request) -> tuple[DecideForm, ExerciseView | None, dict[str, Any]]:
        """The form, the exercise, and what the page shows back (the reviewer's own text);
        called once the guard has passed the request's headers."""
        form = await DecideForm.read(request)
        view = run.exercise(form.problem_id)
        echo: dict[str, Any] = {
            "note": form.note, "reviewer": form.reviewer,
            "base_version": form.base_version, "qs": form.qs,
        }  # fmt: skip
        data = form.fields or FormData()
        indexes = [v for v in data.getlist("block_index") if isinstance(v, str)]
        bodies = [v for v in data.getlist("block") if isinstance(v, str)]
        if not indexes:  # a whole file (an exercise without blocks, the conflict page)
            echo["code"] = form.code
            return form, view, echo
        try:
            codes = {int(i): _lf(b) for i, b in zip(indexes, bodies, strict=True)}
        except ValueError:
            form.error = form.error or "the block fields do not match their indexes"
            codes = {}
        if sum(len(b) for b in codes.values()) > MAX_TEXT:
            form.error = f"the blocks hold more than {MAX_TEXT:,} characters"
        echo["codes"] = codes
        if view is not None and not form.error:
            known = {t.block.index for t in view.formal}
            if set(codes) != known:
                form.error = "the form's blocks are not this exercise's blocks; reload the page"
            else:
                form.code = view.assemble(codes)
                echo["code"] = form.code
        return form, view, echo

    async def read_post(
        request: Request,
    ) -> tuple[DecideForm, ExerciseView | None, dict[str, Any], Response | None]:
        """The form of a POST that passed the guard, or the answer that ends it (the same
        order as a formalize run's pages: headers first, nothing echoed on a refusal)."""
        early = page.refusal_before_body(request)
        if early:
            return DecideForm.empty(), None, {}, page.refused(request, early)
        form, view, echo = await read(request)
        if form.unread:
            return form, view, echo, too_large(request, form)
        late = page.form_token_refusal(request, form.csrf)
        if late:
            return form, view, echo, page.refused(request, late)
        if form.error:
            shown = await exercise_page(request, form.problem_id, 400, error=form.error, **echo)
            return form, view, echo, shown
        return form, view, echo, None

    @app.post("/check", response_class=HTMLResponse)
    async def recheck(request: Request) -> Response:
        form, view, echo, answer = await read_post(request)
        if answer is not None:
            return answer
        if view is None:
            return await exercise_page(request, form.problem_id, **echo)  # the page says 404
        result = await rechecker.check(form.code)
        return await exercise_page(request, form.problem_id, recheck=result, **echo)

    @app.post("/decide", response_class=HTMLResponse)
    async def decide_route(request: Request) -> Response:
        form, view, echo, answer = await read_post(request)
        if answer is not None:
            return answer
        error, status = _invalid(form, view)
        if error is None and view is not None:
            decision = ReviewDecision(
                problem_id=form.problem_id,
                status=ACTIONS[form.action],
                candidate_id=view.file_name,
                code=form.code,
                edited=form.code != view.packaged,
                note=form.note,
                reviewer=form.reviewer,
            )
            try:
                review.decide(
                    decision, based_on=form.base_version, checked=rechecker.known(form.code)
                )
            except ReviewConflict as conflict:
                return render(
                    request, "conflict.html", 409, form=form, current=conflict.current,
                    message=str(conflict), reviewer=form.reviewer,
                )  # fmt: skip
        if error is not None:
            return await exercise_page(request, form.problem_id, status, error=error, **echo)
        target = problem_url(form.problem_id, f"{form.qs}&saved=1" if form.qs else "saved=1")
        response = RedirectResponse(target, status_code=303)
        remember_reviewer(response, form.reviewer)
        return response

    @app.get("/export.jsonl")
    async def export(request: Request) -> Response:
        body = to_jsonl(accepted_tasks(run, review))
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_name) or "run"
        return Response(
            body,
            media_type="application/x-ndjson",
            headers={"Content-Disposition": f'attachment; filename="{name}-accepted.jsonl"'},
        )

    return app


def _invalid(form: DecideForm, view: ExerciseView | None) -> tuple[str | None, int]:
    """Why the decision cannot be stored (None: it can), with the answer's status code."""
    if form.action not in ACTIONS:
        return f"unknown action {form.action!r}; use accept or reject", 400
    if not form.reviewer:
        return "give your name as reviewer before deciding", 400
    if view is None:
        return f"the run has no exercise {form.problem_id!r}", 404
    if ACTIONS[form.action] == ReviewStatus.accepted and not form.code.strip():
        return "the file is empty: there is nothing to accept", 400
    return None, 200


def _decided_or(view: ExerciseView) -> str:
    if view.decision is not None and view.decision.code is not None:
        return view.decision.code
    return view.packaged


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n")
