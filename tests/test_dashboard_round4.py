"""Review page security, round 4 (issue 29 items 1, 2, 3 and 6), attacked as a hostile run
folder or a page elsewhere would.

1. A run folder is data: its stored settings give a backend name and a timeout, nothing
   else (no `coqc`, `args`, `project_dir`, `repl_command`), and every start of a proof
   assistant (version probes, library and plugin builds) runs in the sandbox.
2. A refused request shows nothing it was sent.
3. Headers are checked before the body is read; a refused POST does not hold up the loop.
6. Ids a reader cannot tell apart are refused, and the page marks what an old store holds.
"""

from __future__ import annotations

import json
import shutil
import socket
import sqlite3
import stat
import threading
import time
from pathlib import Path

import pytest
import uvicorn
from fastapi.testclient import TestClient

from formalbench.backends.sandbox import isolation
from formalbench.core.errors import InputError
from formalbench.dashboard import guard
from formalbench.dashboard.app import create_app
from formalbench.dashboard.views import MAX_CHECK_TIMEOUT, check_timeout
from formalbench.pipelines.formalize.problems import load_problems
from formalbench.store.formalize import FormalizeStore
from formalbench.store.review import ReviewStore
from formalbench.toolchains.toolchain import resolve
from test_dashboard_app import form
from test_dashboard_views import make_run

needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not installed")
needs_bwrap = pytest.mark.skipif(isolation() != "bwrap", reason="no working bwrap here")
OK = "Theorem mine : True.\nProof. exact I. Qed.\n"


def _evil_program(folder: Path, marker: Path) -> Path:
    """A `coqc` a hostile run folder would name: it leaves a marker and the environment it
    saw, wherever it is started from."""
    program = folder / "coqc"
    program.write_text(f'#!/bin/sh\nenv > "{marker}"\necho ran >> "{marker}"\necho 8.16.1\n')
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return program


def _hostile_settings(evil: Path, project: Path) -> dict:
    return {
        "backend": "coq",
        "timeout": 1e12,
        "backend_options": {
            "coqc": str(evil),
            "args": ["-type-in-type", "-load-vernac-source", "/etc/passwd"],
            "project_dir": str(project),
            "repl_command": [str(evil)],
            "toolchain": "host",
        },
    }


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return make_run(tmp_path / "run")


@needs_coq
@pytest.mark.parametrize("shape", ["nested", "flat", "backend-entry"])
def test_a_run_folder_names_no_program_flag_or_project(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    marker = tmp_path / "ran.txt"
    evil = _evil_program(tmp_path, marker)
    project = tmp_path / "proj"
    project.mkdir()
    (project / "_CoqProject").write_text("-arg -type-in-type\n")
    settings = _hostile_settings(evil, project)
    if shape == "nested":
        stored = {"identity": {}, "config": settings}
    elif shape == "flat":
        stored = settings
    else:  # the `{"backend": {"name": …, options…}}` spelling
        stored = {"backend": {"name": "coq", **settings["backend_options"]}, "timeout": 5}
    with FormalizeStore(run / "formalize.sqlite") as store:
        store.set_config(stored)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-of-the-reviewer")
    with TestClient(create_app(run, reviewer="ana")) as client:
        fields = form(client.get("/p/alg-find").text)
        # a proof of False that only -type-in-type (the run's `args`) would accept
        page = client.post("/check", data=dict(fields, code=OK))
        assert page.status_code == 200 and "<b>Compiles</b>" in page.text
        backend = client.app.state.rechecker._backend  # type: ignore[attr-defined]
        assert backend.coqc == resolve().program("coqc") and backend.project is None  # ours
        assert "-type-in-type" not in backend.args and "/etc/passwd" not in backend.args
        assert client.app.state.rechecker.timeout <= MAX_CHECK_TIMEOUT  # type: ignore[attr-defined]
    assert not marker.exists()  # the run's program never ran, not even for its version


def test_the_timeout_is_a_bounded_number_or_nothing() -> None:
    for value in (float("nan"), float("inf"), -1, 0, True, "60", None, [60]):
        got = check_timeout({"timeout": value})
        assert got is None or got == MAX_CHECK_TIMEOUT, value
    assert check_timeout({"timeout": float("inf")}) is None
    assert check_timeout({"timeout": 1e12}) == MAX_CHECK_TIMEOUT
    assert check_timeout({"config": {"timeout": 9}}) == 9.0


@needs_coq
def test_the_reviewers_own_project_and_toolchain_are_used(run: Path, tmp_path: Path) -> None:
    project = tmp_path / "mine"
    (project / "theories").mkdir(parents=True)
    (project / "_CoqProject").write_text("-R theories Mine\n")
    options = {"project_dir": str(project), "toolchain": "host"}
    with TestClient(create_app(run, reviewer="ana", check_options=options)) as client:
        fields = form(client.get("/p/alg-find").text)
        page = client.post("/check", data=dict(fields, code=OK))
        assert "<b>Compiles</b>" in page.text
        backend = client.app.state.rechecker._backend  # type: ignore[attr-defined]
        assert backend.project is not None and backend.project.root == project.resolve()


@needs_bwrap
def test_version_probes_and_builds_run_in_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Toolchain.run (library and plugin builds, `coqc -where`) and the version probe: the
    sandbox's folder, environment and read-only file system, even for the reviewer's coqc."""
    from formalbench.toolchains import toolchain as chains

    monkeypatch.delenv("FORMALBENCH_SANDBOX_WRITABLE", raising=False)  # the real sandbox
    outside = tmp_path / "outside"
    outside.mkdir()
    program = tmp_path / "bin" / "coqc"
    program.parent.mkdir()
    program.write_text(
        "#!/bin/sh\n"
        f'touch "{outside}/written" 2>/dev/null && echo WROTE\n'
        'echo "key=${OPENAI_API_KEY:-none} home=$HOME pwd=$(pwd)" >&2\n'
        "echo 8.16.1\n"
    )
    program.chmod(0o755)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    assert chains._version_at(str(program)) == "8.16.1"
    assert not (outside / "written").exists()
    work = tmp_path / "build"
    work.mkdir()
    chain = chains.Toolchain("host", None, str(program))
    done = chain.run([str(program), "-q", "x.v"], cwd=work, timeout=30, input="Check I.\n")
    assert done.returncode == 0 and "WROTE" not in done.stdout
    assert "key=none" in done.stderr and f"pwd={work}" in done.stderr
    assert f"home={work}" in done.stderr  # a HOME of its own, inside its one writable folder
    assert not (outside / "written").exists()
    assert sorted(p.name for p in work.iterdir()) == []  # its HOME and TMPDIR are removed


def _attack_fields(client: TestClient) -> dict[str, str]:
    fields = form(client.get("/p/alg-find").text)
    return dict(
        fields,
        action="accept",
        code="Theorem planted : False.\nAdmitted. (* PLANTED-CODE *)\n",
        note="PLANTED-NOTE <b>x</b>",
        reviewer="PLANTED-NAME",
    )


@pytest.mark.parametrize(
    "how",
    ["no-token", "no-cookie", "foreign-cookie", "other-origin", "null-origin", "cross-site"],
)
@pytest.mark.parametrize("route", ["/decide", "/check"])
def test_a_refusal_shows_nothing_it_was_sent(run: Path, how: str, route: str) -> None:
    with TestClient(create_app(run, reviewer="ana")) as client:
        fields = _attack_fields(client)
        headers: dict[str, str] = {}
        if how == "no-token":
            fields.pop("csrf")
        elif how == "no-cookie":
            client.cookies.clear()
        elif how == "foreign-cookie":
            other = guard.CsrfTokens(b"x" * 32).issue()
            client.cookies.set(guard.CSRF_COOKIE, other)
            fields["csrf"] = other
        elif how == "other-origin":
            headers["Origin"] = "http://evil.example"
        elif how == "null-origin":
            headers["Origin"] = "null"
        else:
            headers["Sec-Fetch-Site"] = "cross-site"
        page = client.post(route, data=fields, headers=headers, follow_redirects=False)
        assert page.status_code == 403, page.text[:300]
        for planted in ("PLANTED", "planted", "textarea", 'name="note"', 'name="reviewer"'):
            assert planted not in page.text, planted
        # a later page of the reviewer shows none of it either
        assert "PLANTED" not in client.get("/p/alg-find").text
    with ReviewStore(run / "formalize.sqlite") as store:
        assert store.current("alg-find") is None


def test_a_refused_post_is_never_read(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The body of a POST without this server's cookie is not read at all."""
    from formalbench.dashboard import decide

    read = []

    async def spy(request):  # type: ignore[no-untyped-def]
        read.append(request.url.path)
        raise AssertionError("a refused body was read")

    monkeypatch.setattr(decide, "read_form", spy)
    with TestClient(create_app(run, reviewer="ana")) as client:
        body = "code=" + "x" * 5_000_000
        for route in ("/decide", "/check"):
            client.cookies.clear()  # (each refusal page sets a fresh cookie, as every page does)
            page = client.post(
                route,
                content=body,
                headers={"Content-Type": "application/x-www-form-urlencoded"},
            )
            assert page.status_code == 403
    assert read == []


def _serve(run: Path) -> tuple[uvicorn.Server, str, threading.Thread]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(run, reviewer="ana"), log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(100):
        if server.started:
            break
        time.sleep(0.05)
    return server, f"http://127.0.0.1:{port}", thread


BIG = "".join(f"(* {i:06d} {'ℕ' * 59} *)\n" for i in range(13_000))  # 949,000 characters


@pytest.mark.parametrize("char", ["\u3164", "\u00a0", "\u034f", "\ufe0f", "\u2800", "\u115f"])
def test_ids_that_look_alike_are_refused_at_import(tmp_path: Path, char: str) -> None:
    problems = tmp_path / "problems.jsonl"
    lines = [{"id": "p1", "informal": "a"}, {"id": f"p{char}1", "informal": "b"}]
    problems.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    with pytest.raises(InputError) as refused:
        load_problems(str(problems))
    assert f"U+{ord(char):04X}" in str(refused.value) and f"{problems}:2:" in str(refused.value)


def test_an_old_store_with_such_ids_shows_the_marker(run: Path) -> None:
    """A store written before the rule (or by hand) lists its ids with the ⟨U+…⟩ marker."""
    db = sqlite3.connect(run / "formalize.sqlite")
    tables = [r[0] for r in db.execute("select name from sqlite_master where type='table'")]
    for table in tables:
        columns = [r[1] for r in db.execute(f"pragma table_info({table})")]
        if "problem_id" in columns:
            db.execute(
                f"update {table} set problem_id = ? where problem_id = ?", ("p\u31641", "alg-find")
            )
        if table == "fz_problems":
            db.execute("update fz_problems set id = ? where id = ?", ("p\u31641", "alg-find"))
    db.commit()
    db.close()
    with TestClient(create_app(run, reviewer="ana")) as client:
        listing = client.get("/").text
    assert "p⟨U+3164⟩1" in listing and "\u3164" not in listing


@pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not installed")
def test_a_clean_recheck_says_nothing_was_reported_once_escaped(run: Path) -> None:
    with TestClient(create_app(run, reviewer="ana")) as client:
        fields = form(client.get("/p/alg-find").text)
        page = client.post("/check", data=dict(fields, code=OK))
    assert '<p class="muted small">The assistant reported nothing.</p>' in page.text
    assert "&lt;p" not in page.text and "&amp;lt;" not in page.text
