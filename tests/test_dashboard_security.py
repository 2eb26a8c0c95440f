"""The review page against an attacker and a careless client: signed form tokens, opaque
origins, one size limit answered in the page, hidden characters shown, ids that a browser
cannot reach refused at import, texts stored once, and the security headers."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from formalbench.core.errors import InputError
from formalbench.core.formalization import ReviewDecision, ReviewStatus
from formalbench.dashboard import decide, guard, server
from formalbench.dashboard.app import create_app
from formalbench.pipelines.formalize.problems import load_problems
from formalbench.store.formalize import FormalizeStore
from formalbench.store.review import ReviewStore
from test_dashboard_app import form
from test_dashboard_views import make_run

CODE = "Theorem mine : True.\nAdmitted.\n"


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return make_run(tmp_path / "run")


@pytest.fixture
def client(run: Path):
    with TestClient(create_app(run, reviewer="ana")) as c:
        yield c


def _fields(client: TestClient, **update: str) -> dict[str, str]:
    fields = form(client.get("/p/alg-find").text)
    fields.update({"action": "accept", "code": CODE, **update})
    return fields


def _stored(run: Path) -> ReviewDecision | None:
    with ReviewStore(run / "formalize.sqlite") as store:
        return store.current("alg-find")


def test_a_token_the_server_did_not_sign_is_refused(run: Path):
    invented = "C" * 32  # the double-submit pair a client can make up by itself
    with TestClient(create_app(run, reviewer="ana")) as client:
        fields = _fields(client, csrf=invented)
        client.cookies.set(guard.CSRF_COOKIE, invented)
        refused = client.post("/decide", data=fields)
        assert refused.status_code == 403 and "not issued by this server" in refused.text
        # nothing it was sent is shown (issue 29 item 2): a forger's text would look like ours
        assert "Theorem mine : True." not in refused.text and "textarea" not in refused.text
        # a well-formed token signed by another server (another secret) is refused too
        other = guard.CsrfTokens(b"another secret, another server!!").issue()
        client.cookies.set(guard.CSRF_COOKIE, other)
        assert client.post("/decide", data=dict(fields, csrf=other)).status_code == 403
    assert _stored(run) is None


def test_a_planted_cookie_is_replaced_by_a_signed_one(run: Path):
    planted = "planted-by-another-port-0123456789"
    with TestClient(create_app(run, reviewer="ana")) as client:
        client.cookies.set(guard.CSRF_COOKIE, planted)
        page = client.get("/p/alg-find")
        issued = page.cookies.get(guard.CSRF_COOKIE)
        assert issued and issued != planted
        assert form(page.text)["csrf"] == issued
        assert client.post("/decide", data=_fields(client, csrf=planted)).status_code == 403
        ok = client.post("/decide", data=_fields(client), follow_redirects=False)
        assert ok.status_code == 303
    assert _stored(run) is not None


def test_opaque_origin_is_refused(client: TestClient, run: Path):
    refused = client.post("/decide", data=_fields(client), headers={"Origin": "null"})
    assert refused.status_code == 403 and "opaque origin" in refused.text
    assert (
        client.post("/check", data=_fields(client), headers={"Origin": "null"}).status_code == 403
    )
    assert _stored(run) is None


def test_text_over_the_limit_is_refused_in_the_page_and_kept(client: TestClient, run: Path):
    # 3 bytes a character in UTF-8 (9 percent-encoded): far above the parser's old 1 MiB
    within = "Theorem mine : True.\n(* " + "ℕ" * 400_000 + " *)\nAdmitted.\n"
    saved = client.post("/decide", data=_fields(client, code=within), follow_redirects=False)
    assert saved.status_code == 303  # counted in characters, so it fits
    over = "(* " + "ℕ" * (decide.MAX_TEXT + 1) + " *)"
    fields = form(client.get("/p/alg-find").text)
    page = client.post("/decide", data=dict(fields, action="accept", code=over))
    assert page.status_code == 400 and "text/html" in page.headers["content-type"]
    assert "at most 1,000,000 are accepted" in page.text
    assert form(page.text)["code"] == over  # what the reviewer typed comes back
    assert _stored(run).version == 1


def test_a_body_beyond_the_parser_limit_gets_the_page_not_json(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(decide, "MAX_FIELD_BYTES", 1000)
    page = client.post("/check", data=_fields(client, code="x" * 5000))
    assert page.status_code == 413 and "text/html" in page.headers["content-type"]
    assert "could not be read" in page.text and "at most 1,000,000 characters" in page.text
    assert "detail" not in page.text


def test_hidden_characters_are_shown_and_the_editor_keeps_them(run: Path):
    hostile = "Theorem t : True.\n(* \u202e )*/ lla *)\nexact I.\x07\nQed.\n"
    with FormalizeStore(run / "formalize.sqlite") as store:
        candidate = store.candidates("alg-find")[0]
        rounds = [r.model_copy(update={"code": hostile}) for r in candidate.rounds]
        store.put_candidate(candidate.model_copy(update={"code": hostile, "rounds": rounds}))
    with TestClient(create_app(run, reviewer="ana")) as client:
        page = client.get("/p/alg-find").text
    assert "⟨U+202E⟩" in page and "⟨U+0007⟩" in page  # in the candidate's own box
    assert "line 2, column 4: U+202E RIGHT-TO-LEFT OVERRIDE" in page
    assert "line 3, column 9: U+0007" in page
    assert form(page)["code"] == hostile  # the editor posts back exactly what is stored
    outside = page.replace(form(page)["code"], "")
    assert "\u202e" not in outside and "\x07" not in outside


@pytest.mark.parametrize(
    ("pid", "says"),
    [("..", "path segment"), (".", "path segment"), ("a\u202eb", "U+202E"), ("a\x00", "U+0000")],
)
def test_ids_a_browser_cannot_reach_are_refused_at_import(tmp_path: Path, pid: str, says: str):
    problems = tmp_path / "problems.jsonl"
    problems.write_text(
        json.dumps({"id": "ok", "informal": "fine"})
        + "\n"
        + json.dumps({"id": pid, "informal": "x"})
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as refused:
        load_problems(str(problems))
    assert f"{problems}:2:" in str(refused.value) and says in str(refused.value)


def test_texts_are_stored_once(run: Path):
    text = "".join(f"Lemma l{i} : {i} = {i}.\nProof. reflexivity. Qed.\n" for i in range(8000))
    with ReviewStore(run / "formalize.sqlite") as store:
        for version in range(20):
            store.decide(
                ReviewDecision(
                    problem_id="alg-find",
                    status=ReviewStatus.accepted if version % 2 else ReviewStatus.rejected,
                    code=text,
                    reviewer="ana",
                ),
                based_on=version,
            )
        assert len(text) > 300_000 and store.text_bytes() < len(text) // 4
        assert [d.code == text for d in store.history("alg-find")] == [True] * 20
        assert store.current("alg-find").version == 20


def test_a_version_1_store_is_moved_to_shared_texts(run: Path):
    path = run / "formalize.sqlite"
    with FormalizeStore(path):
        pass
    conn = sqlite3.connect(path)
    old = ReviewDecision(
        problem_id="alg-find", status=ReviewStatus.accepted, code=CODE, reviewer="ana", version=1
    )
    conn.executescript(
        "CREATE TABLE rv_decisions (problem_id TEXT NOT NULL, version INTEGER NOT NULL,"
        " decision TEXT NOT NULL, checked TEXT, PRIMARY KEY (problem_id, version));"
        "CREATE TABLE rv_current (problem_id TEXT PRIMARY KEY, version INTEGER NOT NULL,"
        " status TEXT NOT NULL, reviewer TEXT NOT NULL, at TEXT NOT NULL);"
        "INSERT INTO schema_version VALUES ('review', 1);"
    )
    conn.execute(
        "INSERT INTO rv_decisions VALUES ('alg-find', 1, ?, NULL)", (old.model_dump_json(),)
    )
    conn.execute("INSERT INTO rv_current VALUES ('alg-find', 1, 'accepted', 'ana', 'now')")
    conn.commit()
    conn.close()
    with ReviewStore(path) as store:
        assert store.current("alg-find").code == CODE
        assert store.text_bytes() > 0
    raw = sqlite3.connect(path).execute("SELECT decision FROM rv_decisions").fetchone()[0]
    assert json.loads(raw)["code"] is None  # the text now lives once, in rv_texts


def test_security_headers_and_cookies(client: TestClient):
    page = client.get("/p/alg-find")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy
    saved = client.post("/decide", data=_fields(client), follow_redirects=False)
    cookie = next(c for c in saved.headers.get_list("set-cookie") if c.startswith("fb_reviewer="))
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie


def test_a_public_interface_is_told_it_is_plain_http(run: Path, monkeypatch):
    said: list[str] = []
    monkeypatch.setattr(server, "bind", lambda host, port: server.socket.socket())
    monkeypatch.setattr(server.uvicorn.Server, "run", lambda self, sockets=None: None)
    monkeypatch.setattr(server.socket.socket, "getsockname", lambda self: ("0.0.0.0", 8765))
    server.serve(run, host="0.0.0.0", port=0, token="tok-0123456789", announce=said.append)
    assert any("plain HTTP" in line and "token" in line for line in said)
    said.clear()
    server.serve(run, host="127.0.0.1", port=0, announce=said.append)
    assert not any("plain HTTP" in line for line in said)
