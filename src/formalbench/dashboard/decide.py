"""Reading the editor form and turning it into a stored decision.

Browsers send a textarea with CRLF line ends; the text is brought back to LF before it is
compared with the candidate (so an untouched candidate is not "edited") or stored.

One size limit, in characters (`MAX_TEXT`), decided here and answered in the app's own page
with the reviewer's text shown back. The form parser's own limit is in bytes of the encoded
form, so it is set high enough never to refuse a text within `MAX_TEXT` (a character is at
most 4 bytes of UTF-8, 12 once percent-encoded); only a body beyond that is cut off by the
parser, and that refusal too is the app's page, not the framework's JSON.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.requests import Request

from formalbench.core.formalization import ReviewDecision, ReviewStatus
from formalbench.dashboard.checker import Rechecker
from formalbench.store.formalize import FormalizeStore
from formalbench.store.review import ReviewConflict, ReviewStore

ACTIONS = {"accept": ReviewStatus.accepted, "reject": ReviewStatus.rejected}
MAX_REVIEWER = 100
MAX_NOTE = 10_000
MAX_TEXT = 1_000_000  # characters of an edited text (or of all blocks); more is refused
MAX_FIELD_BYTES = 12 * MAX_TEXT + 4096  # the parser's limit per field: any MAX_TEXT fits
MAX_FIELDS = 2_000  # a construct exercise posts two fields a block


@dataclass
class DecideForm:
    problem_id: str
    action: str
    candidate_id: str | None
    code: str
    note: str
    reviewer: str
    base_version: int
    csrf: str | None
    qs: str  # the list filter the reviewer came from, carried to the next page
    error: str | None = None  # what is malformed in the form itself
    fields: FormData | None = None  # everything posted (construct pages read their blocks)
    unread: bool = False  # the body was too large to be read at all: nothing to show back

    @classmethod
    def empty(cls) -> DecideForm:
        """No form at all (a request refused before its body was read)."""
        return cls("", "", None, "", "", "", 0, None, "")

    @classmethod
    async def read(cls, request: Request, max_text: int = MAX_TEXT) -> DecideForm:
        form, too_big = await read_form(request)

        def field(name: str) -> str:
            value = form.get(name)
            return value if isinstance(value, str) else ""

        code = field("code").replace("\r\n", "\n").replace("\r", "\n")
        made = cls(
            problem_id=field("problem_id"),
            action=field("action"),
            candidate_id=field("candidate_id") or None,
            code=code,
            note=field("note").replace("\r\n", "\n").strip(),
            reviewer=" ".join(field("reviewer").split()),
            base_version=0,
            csrf=field("csrf") or None,
            qs=field("qs"),
            fields=form,
        )
        try:
            made.base_version = int(field("base_version") or "0")
            if made.base_version < 0:
                raise ValueError
        except ValueError:
            made.error = f"base_version {field('base_version')!r} is not a version number"
        if too_big:
            made.error, made.unread = too_big, True
        elif len(code) > max_text:
            made.error = f"the text is {len(code):,} characters; at most {max_text:,} are accepted"
        elif len(made.note) > MAX_NOTE:
            made.error = f"the note is {len(made.note):,} characters; at most {MAX_NOTE:,}"
        elif len(made.reviewer) > MAX_REVIEWER:
            made.error = f"the reviewer name is longer than {MAX_REVIEWER} characters"
        return made


async def read_form(request: Request) -> tuple[FormData, str | None]:
    """The posted form, or an empty one and why it was refused (too large to be read)."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > MAX_FIELDS * 16 + 2 * MAX_FIELD_BYTES:
        return FormData(), _too_big(int(length))
    try:
        form = await request.form(max_part_size=MAX_FIELD_BYTES, max_fields=MAX_FIELDS)
    except HTTPException as exc:
        return FormData(), f"the form could not be read ({exc.detail}); {_LIMIT}"
    return form, None


_LIMIT = f"at most {MAX_TEXT:,} characters of text are accepted"


def _too_big(length: int) -> str:
    return f"the form is {length:,} bytes, more than any text this page accepts; {_LIMIT}"


@dataclass
class Outcome:
    stored: ReviewDecision | None = None
    conflict: ReviewConflict | None = None
    error: str | None = None
    status: int = 200


def decide(
    form: DecideForm, formalize: FormalizeStore, review: ReviewStore, rechecker: Rechecker
) -> Outcome:
    """Validate the form against the run and store the decision, or say why not."""
    if form.action not in ACTIONS:
        return Outcome(error=f"unknown action {form.action!r}; use accept or reject", status=400)
    if not form.reviewer:
        return Outcome(error="give your name as reviewer before deciding", status=400)
    if formalize.problem(form.problem_id) is None:
        return Outcome(error=f"the run has no problem {form.problem_id!r}", status=404)
    status = ACTIONS[form.action]
    candidates = {c.id: c for c in formalize.candidates(form.problem_id)}
    if form.candidate_id is not None and form.candidate_id not in candidates:
        return Outcome(
            error=f"problem {form.problem_id!r} has no candidate {form.candidate_id!r}", status=400
        )
    if status == ReviewStatus.accepted and not form.code.strip():
        return Outcome(error="the editor is empty: there is nothing to accept", status=400)
    original = candidates[form.candidate_id].code if form.candidate_id else ""
    decision = ReviewDecision(
        problem_id=form.problem_id,
        status=status,
        candidate_id=form.candidate_id,
        code=form.code,
        edited=form.code != original,
        note=form.note,
        reviewer=form.reviewer,
    )
    try:
        stored = review.decide(
            decision, based_on=form.base_version, checked=rechecker.known(form.code)
        )
    except ReviewConflict as conflict:
        return Outcome(conflict=conflict, status=409)
    return Outcome(stored=stored)
