"""The review web application through FastAPI's TestClient: pages, decisions, guards, export."""

from __future__ import annotations

import html
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from formalbench.core.formalization import Problem, ReviewStatus
from formalbench.core.records import Language, Task
from formalbench.dashboard.app import create_app
from formalbench.datasets.loader import load_tasks
from formalbench.store.formalize import FormalizeStore
from formalbench.store.review import ReviewStore
from formalbench.toolchains.toolchain import resolve
from test_dashboard_views import ADD_ZERO_NO_DOT, ADD_ZERO_OK, make_run

needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")


class _Form(HTMLParser):
    """The fields of the first form with `action` on a page, as the browser would send them."""

    def __init__(self, action: str) -> None:
        super().__init__()
        self.action, self.inside, self.fields, self._area = action, False, {}, None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "form" and a.get("action") == self.action and not self.fields:
            self.inside = True
        elif self.inside and tag == "input" and a.get("name"):
            self.fields[a["name"]] = a.get("value") or ""
        elif self.inside and tag == "textarea":
            self._area = a["name"]
            self.fields[self._area] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.inside = False
        elif tag == "textarea":
            self._area = None

    def handle_data(self, data: str) -> None:
        if self._area:
            self.fields[self._area] += data


def form(page: str, action: str = "/decide") -> dict[str, str]:
    parser = _Form(action)
    parser.feed(page)
    fields = parser.fields
    if "code" in fields:  # the HTML parser drops the first newline after <textarea>, so do we
        fields["code"] = fields["code"].removeprefix("\n")
    return fields


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return make_run(tmp_path / "run", extra=60)


@pytest.fixture
def client(run: Path):
    with TestClient(create_app(run, reviewer="ana")) as c:
        yield c


def test_list_shows_counts_filters_and_pages(client: TestClient):
    page = client.get("/")
    assert page.status_code == 200
    text = page.text
    assert 'id="count-unreviewed">63<' in text and "page 1 of 2" in text
    assert "nt-divides" in text and "Show that 7 divides 21" in text
    assert 'rel="next"' in text
    second = client.get("/?page=2").text
    assert "extra-0059" in second and "nt-divides" not in second
    algebra = client.get("/", params={"category": "algebra"}).text
    assert "alg-add-zero" in algebra and "alg-find" in algebra and "nt-divides" not in algebra
    found = client.get("/", params={"q": "adding zero"}).text
    assert "alg-add-zero" in found and "alg-find" not in found and ">1 problem." in found
    none = client.get("/", params={"status": "accepted"}).text
    assert "No problem matches" in none
    assert client.get("/?page=abc").status_code == 200  # a bad page number is page 1


def test_problem_page_shows_candidates_in_order_with_trail(client: TestClient):
    page = client.get("/p/nt-divides")
    assert page.status_code == 200
    text = page.text
    assert "Show that 7 divides 21 in the integers." in text
    # compiling model-a before model-b although the summary ranks model-b first
    assert text.index('data-candidate="nt-divides/model-a/0"') < text.index(
        'data-candidate="nt-divides/model-b/0"'
    )
    assert "The reference Zdivide was not found in the current environment." in text
    assert "Rounds trail (2)" in text  # model-a was repaired once
    assert "Divisibility of 21 by 7 over Z, as asked." in text
    assert "C1 names a lemma that does not exist." in text
    assert 'title="the summary calls this statement C1">C1<' in text
    assert "does not compile" in text and "compiles" in text
    fields = form(text)
    assert fields["candidate_id"] == "nt-divides/model-a/0"
    assert "(7 | 21)%Z" in fields["code"] and fields["base_version"] == "0"
    assert fields["reviewer"] == "ana"
    chosen = form(client.get("/p/nt-divides", params={"candidate": "nt-divides/model-b/0"}).text)
    assert chosen["candidate_id"] == "nt-divides/model-b/0" and "Zdivide" in chosen["code"]
    trouble = client.get("/p/alg-find").text  # failures of the pipeline are shown as such
    assert (
        "Generation stopped: endpoint down" in trouble and "No statement was produced." in trouble
    )
    assert "could not be read (no JSON object in the reply)" in trouble
    assert "alignment unknown" in trouble
    missing = client.get("/p/no-such-problem")
    assert missing.status_code == 404 and "no-such-problem" in missing.text


def test_everything_is_escaped(run: Path):
    with FormalizeStore(run / "formalize.sqlite") as store:
        store.put_problem(
            Problem(
                id="alg-find", informal="<script>alert('x')</script> & x < 5", category="algebra"
            )
        )
    with TestClient(create_app(run)) as client:
        text = client.get("/p/alg-find").text
        assert "<script>alert" not in text
        assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; x &lt; 5" in text
        assert "&lt;script&gt;" in client.get("/", params={"category": "algebra"}).text


def test_accept_with_edit_is_stored_and_shown(client: TestClient, run: Path):
    fields = form(client.get("/p/alg-add-zero").text)
    fields["code"] = fields["code"].replace("n + O", "n + 0").replace("\n", "\r\n")  # browser CRLF
    fields.update(action="accept", note="use the numeral 0")
    done = client.post("/decide", data=fields, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == "/p/alg-add-zero?saved=1"
    page = client.get(done.headers["location"]).text
    assert "Saved: accepted by ana" in page and "(version 1)" in page
    with ReviewStore(run / "formalize.sqlite") as store:
        stored = store.current("alg-add-zero")
    assert stored.status == ReviewStatus.accepted and stored.version == 1
    assert stored.code == ADD_ZERO_OK.replace("n + O", "n + 0")  # LF again
    assert stored.edited and stored.note == "use the numeral 0"
    assert stored.candidate_id == "alg-add-zero/model-b/0"
    again = form(page)
    assert again["base_version"] == "1" and again["code"] == stored.code  # the accepted text
    assert "accepted" in client.get("/", params={"status": "accepted"}).text


def test_unchanged_text_in_crlf_is_not_an_edit(client: TestClient, run: Path):
    fields = form(client.get("/p/alg-find").text)
    fields.update(action="reject", code=fields["code"].replace("\n", "\r\n"))
    assert client.post("/decide", data=fields, follow_redirects=False).status_code == 303
    with ReviewStore(run / "formalize.sqlite") as store:
        assert store.current("alg-find").edited is False


def test_stale_decision_is_refused_with_the_text_shown_back(client: TestClient, run: Path):
    tab1 = form(client.get("/p/alg-add-zero").text)
    tab2 = dict(tab1)
    tab1.update(action="accept")
    assert client.post("/decide", data=tab1, follow_redirects=False).status_code == 303
    mine = "(* my own version *)\n" + tab2["code"]
    tab2.update(action="reject", code=mine, note="wrong operation", reviewer="ben")
    refused = client.post("/decide", data=tab2)
    assert refused.status_code == 409
    page = refused.text
    assert "Not saved" in page and "accepted" in page and "ana" in page
    assert html.escape("(* my own version *)") in page and "wrong operation" in page
    with ReviewStore(run / "formalize.sqlite") as store:
        assert [d.reviewer for d in store.history("alg-add-zero")] == ["ana"]
    # the conflict page's own form is based on the current version: submitting it on purpose works
    retry = form(page)
    assert retry["base_version"] == "1" and retry["code"] == mine
    retry["action"] = "reject"
    assert client.post("/decide", data=retry, follow_redirects=False).status_code == 303
    with ReviewStore(run / "formalize.sqlite") as store:
        latest = store.current("alg-add-zero")
    assert latest.version == 2 and latest.reviewer == "ben" and latest.code == mine


def test_reviewer_name_is_required(run: Path):
    with TestClient(create_app(run)) as client:  # no --reviewer
        fields = form(client.get("/p/alg-find").text)
        assert fields["reviewer"] == ""
        fields.update(action="accept", code="Theorem edited : True.\nAdmitted.\n")
        page = client.post("/decide", data=fields)
        assert page.status_code == 400 and "give your name as reviewer" in page.text
        assert "Theorem edited : True." in form(page.text)["code"]  # not lost
        with ReviewStore(run / "formalize.sqlite") as store:
            assert store.current("alg-find") is None
        # once given, it is remembered for the next decision
        fields["reviewer"] = "  Cleo   Q "
        assert client.post("/decide", data=fields, follow_redirects=False).status_code == 303
        assert form(client.get("/p/alg-add-zero").text)["reviewer"] == "Cleo Q"


def test_writes_need_the_form_token_and_the_same_origin(client: TestClient, run: Path):
    fields = form(client.get("/p/alg-find").text)
    fields.update(action="accept", code="Theorem mine : True.\nAdmitted.\n")
    no_token = {k: v for k, v in fields.items() if k != "csrf"}
    refused = client.post("/decide", data=no_token)
    assert refused.status_code == 403 and "form token" in refused.text
    assert "Theorem mine : True." not in refused.text  # a refusal shows nothing it was sent
    other = client.post("/decide", data=fields, headers={"Origin": "http://evil.example"})
    assert other.status_code == 403 and "another origin" in other.text
    cross = client.post("/decide", data=fields, headers={"Sec-Fetch-Site": "cross-site"})
    assert cross.status_code == 403
    assert client.post("/check", data=no_token).status_code == 403
    assert client.get("/decide").status_code == 405  # changes are POST only
    with ReviewStore(run / "formalize.sqlite") as store:
        assert store.current("alg-find") is None
    ok = client.post(
        "/decide", data=fields, headers={"Origin": "http://testserver"}, follow_redirects=False
    )
    assert ok.status_code == 303


def test_bad_forms_are_clear_errors(client: TestClient):
    fields = form(client.get("/p/alg-find").text)
    bad = dict(fields, action="accept", candidate_id="nt-divides/model-a/0")
    page = client.post("/decide", data=bad)
    assert page.status_code == 400 and "has no candidate" in page.text
    page = client.post("/decide", data=dict(fields, action="burn"))
    assert page.status_code == 400 and "unknown action" in page.text
    page = client.post("/decide", data=dict(fields, action="accept", base_version="x"))
    assert page.status_code == 400 and "not a version number" in page.text
    page = client.post("/decide", data=dict(fields, action="accept", code="  \n"))
    assert page.status_code == 400 and "nothing to accept" in page.text
    page = client.post("/decide", data=dict(fields, action="accept", problem_id="ghost"))
    assert page.status_code == 404


def test_token_is_required_on_every_request(run: Path):
    token = "s3cret-token-123"
    with TestClient(create_app(run, token=token)) as client:
        assert client.get("/").status_code == 401
        assert client.get("/static/style.css").status_code == 401
        assert client.get("/export.jsonl").status_code == 401
        assert client.get("/", headers={"X-Formalbench-Token": "wrong"}).status_code == 401
        assert client.get("/", headers={"X-Formalbench-Token": token}).status_code == 200
        assert client.get("/", headers={"Authorization": f"Bearer {token}"}).status_code == 200
        moved = client.get(f"/p/alg-find?q=x&token={token}", follow_redirects=False)
        assert moved.status_code == 303 and moved.headers["location"] == "/p/alg-find?q=x"
        first = client.get(moved.headers["location"])
        assert first.status_code == 200  # the cookie carries the token now
        assert client.get("/p/alg-find").status_code == 200
        fields = form(first.text)
        fields.update(action="reject", reviewer="ana")
        assert client.post("/decide", data=fields, follow_redirects=False).status_code == 303
    with TestClient(create_app(run, token=token)) as fresh:
        assert fresh.post("/decide", data=fields).status_code == 401


def test_only_loopback_host_names_when_asked(run: Path):
    app = create_app(run, allowed_hosts=["127.0.0.1", "localhost"])
    with TestClient(app) as client:
        assert client.get("/").status_code == 403  # Host: testserver (a rebinding page)
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        assert client.get("/").status_code == 200
    with TestClient(app, base_url="http://localhost:9") as client:
        assert client.get("/").status_code == 200


def test_export_download_is_the_task_dataset(client: TestClient, tmp_path: Path):
    empty = client.get("/export.jsonl")
    assert empty.status_code == 200 and empty.text == ""
    fields = form(client.get("/p/alg-add-zero").text)
    edited = fields["code"].replace("n + O", "n + 0")
    fields.update(action="accept", code=edited, note="numeral")
    client.post("/decide", data=fields)
    fields = form(client.get("/p/nt-divides").text)
    client.post("/decide", data=dict(fields, action="reject"))
    fields = form(client.get("/p/alg-find").text)
    client.post("/decide", data=dict(fields, action="accept"))
    got = client.get("/export.jsonl")
    assert got.headers["content-type"].startswith("application/x-ndjson")
    assert got.headers["content-disposition"] == 'attachment; filename="run-accepted.jsonl"'
    tasks = [Task.model_validate_json(line) for line in got.text.splitlines()]
    assert [t.id for t in tasks] == ["alg-add-zero", "alg-find"]  # run order, rejected left out
    add = tasks[0]
    assert add.language == Language.coq and add.header == "Require Import Arith.\n\n"
    assert add.formal == edited.removeprefix("Require Import Arith.\n\n")
    assert add.source_text == edited
    assert add.informal.statement.startswith("Prove that adding zero")
    assert add.labels == {"category": "algebra"} and add.metadata == {"difficulty": "easy"}
    review, made = add.trail["review"], add.trail["formalize"]
    assert review["reviewer"] == "ana" and review["note"] == "numeral" and review["edited"]
    assert "+Theorem add_zero_r : forall n : nat, n + 0 = n." in review["diff"]
    assert made["model"] == "model-b" and made["candidate"] == "alg-add-zero/model-b/0"
    assert made["summary_rank"] == 1 and made["alignment"]["aligned"] is True
    assert [r["round"] for r in made["rounds"]] == [1] and made["rounds"][0]["code"] == ADD_ZERO_OK
    assert tasks[1].informal.solution == "x = 2" and tasks[1].trail["review"]["diff"] == ""
    path = tmp_path / "export.jsonl"  # a dataset the project's loader reads back
    path.write_text(got.text)
    assert [t.id for t in load_tasks(path)] == ["alg-add-zero", "alg-find"]
    assert json.loads(got.text.splitlines()[0])["trail"]["review"]["history"][0]["version"] == 1


def test_export_names_the_summary_key_rank_and_verdict(client: TestClient):
    page = client.get("/p/nt-divides", params={"candidate": "nt-divides/model-b/0"})
    fields = form(page.text)
    assert client.post("/decide", data=dict(fields, action="accept")).status_code == 200
    made = json.loads(client.get("/export.jsonl").text)["trail"]["formalize"]
    assert (made["summary_key"], made["summary_rank"], made["summary_verdict"]) == (
        "C1",
        1,
        "idea ok",
    )
    assert made["compiled"] is False and made["rounds"][0]["diagnostics"][0]["line"] == 4
    assert made["summary"] == "C1 names a lemma that does not exist."


def test_recheck_without_a_toolchain_is_shown_not_raised(run: Path):
    with FormalizeStore(run / "formalize.sqlite") as store:
        store.set_config({"backend": "lean"})
    if shutil.which("lake") or shutil.which("lean"):
        pytest.skip("a Lean toolchain is installed here")
    with TestClient(create_app(run, reviewer="ana")) as client:
        fields = form(client.get("/p/alg-find").text)
        page = client.post("/check", data=dict(fields, code="theorem x : True := sorry"))
        assert page.status_code == 200
        assert "Re-check unavailable" in page.text and "Lean 4 is not installed" in page.text
        assert "theorem x : True := sorry" in form(page.text)["code"]


@needs_coq
def test_recheck_runs_coqc_and_keeps_the_form(client: TestClient, run: Path):
    fields = form(client.get("/p/alg-add-zero").text)
    broken = dict(fields, code=ADD_ZERO_NO_DOT, note="draft")
    page = client.post("/check", data=broken)
    assert page.status_code == 200
    assert "Does not compile" in page.text
    assert "The reference Proof was not found in the current environment." in page.text
    kept = form(page.text)
    assert kept["code"] == ADD_ZERO_NO_DOT and kept["note"] == "draft"
    assert kept["base_version"] == "0" and kept["candidate_id"] == fields["candidate_id"]
    assert re.search(r'id="edited"', page.text)  # the edit is flagged and diffed
    fixed = ADD_ZERO_OK.replace("n + O", "n + 0")
    page = client.post("/check", data=dict(fields, code=fixed))
    assert "<b>Compiles</b>" in page.text and f"coq {resolve().version()}" in page.text
    accepted = form(page.text)
    client.post("/decide", data=dict(accepted, action="accept"))
    with ReviewStore(run / "formalize.sqlite") as store:
        assert store.checked("alg-add-zero", 1)["compiled"] is True
    line = client.get("/export.jsonl").text.splitlines()[0]
    assert json.loads(line)["trail"]["review"]["recheck"]["compiled"] is True
