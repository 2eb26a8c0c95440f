"""Issue 29 items 1-3 (and 6's escaping) in a real browser: headless Chromium against the real
`formalbench review` server, attacked by a page on another origin and by a run folder.

Same harness as `test_dashboard_browser.py` (skips without chromium and Playwright, fails
where FORMALBENCH_REQUIRE_BROWSER=1).
"""

from __future__ import annotations

import http.server
import signal
import stat
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import test_dashboard_browser as harness
from formalbench.store.formalize import FormalizeStore
from formalbench.store.review import ReviewStore
from test_dashboard_views import make_run

browser = harness.browser  # the fixture: a fresh Chromium profile a test
needs_coq = harness.needs_coq
_start = harness._start

pytestmark = pytest.mark.browser
OK = "Theorem mine : True.\nProof. exact I. Qed.\n"


def _attacker_page(target: str) -> bytes:
    """A page elsewhere that posts a planted decision to the dashboard as soon as it loads.
    Its script is its own (no CSP applies to it)."""
    return f"""<!doctype html><html><body>
<form id="f" method="post" action="{target}/decide">
<input name="problem_id" value="alg-find"><input name="action" value="accept">
<input name="candidate_id" value=""><input name="base_version" value="0">
<textarea name="code">Theorem planted : False.
Admitted. (* PLANTED-CODE *)</textarea>
<input name="note" value="PLANTED-NOTE"><input name="reviewer" value="PLANTED-NAME">
</form><script>document.getElementById('f').submit();</script></body></html>""".encode()


@pytest.fixture
def attacker() -> Iterator[tuple[str, list[bytes]]]:
    """An HTTP server on another loopback port (another origin, the same site)."""
    pages: list[bytes] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server name
            body = pages[0] if pages else b""
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", pages
    finally:
        httpd.shutdown()


@pytest.fixture
def hostile_run(tmp_path: Path) -> Iterator[tuple[str, Path, Path]]:
    """A run folder whose stored settings name a program of its author's as `coqc`."""
    run = make_run(tmp_path / "run", extra=3)
    marker = tmp_path / "ran.txt"
    evil = tmp_path / "evil-coqc"
    evil.write_text(f'#!/bin/sh\necho ran > "{marker}"\necho 8.16.1\n')
    evil.chmod(evil.stat().st_mode | stat.S_IXUSR)
    options = {"coqc": str(evil), "args": ["-type-in-type"], "project_dir": str(tmp_path)}
    with FormalizeStore(run / "formalize.sqlite") as store:
        store.set_config({"config": {"backend": "coq", "timeout": 60, "backend_options": options}})
    proc, url = _start(run)
    try:
        yield url, run, marker
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@needs_coq
def test_a_run_folder_cannot_choose_the_program_and_a_clean_recheck_reads_right(
    hostile_run, browser
) -> None:
    url, _, marker = hostile_run
    page = browser.new_page()
    page.goto(url + "/p/alg-find")
    page.locator("#editor").fill(OK)
    with page.expect_navigation():
        page.click("#recheck-button")
    recheck = page.locator("#recheck")
    assert "Compiles" in recheck.inner_text()
    assert "The assistant reported nothing." in recheck.inner_text()
    assert "<p class" not in recheck.inner_text()  # item 6: not escaped twice
    assert not marker.exists()  # item 1: the run's `coqc` never ran


def test_a_cross_origin_page_cannot_prefill_or_store_a_decision(
    hostile_run, browser, attacker
) -> None:
    url, run, _ = hostile_run
    origin, pages = attacker
    pages.append(_attacker_page(url))
    page = browser.new_page()
    page.goto(url + "/p/alg-find")  # the reviewer has the dashboard open: cookies are set
    other = browser.new_page()
    with other.expect_navigation(url=f"{url}/decide"):
        other.goto(origin + "/")
    text = other.content()
    assert "request refused" in text
    for planted in ("PLANTED", "planted", "<textarea", 'name="note"'):
        assert planted not in text, planted
    with ReviewStore(run / "formalize.sqlite") as store:
        assert store.current("alg-find") is None
    page.reload()
    assert "PLANTED" not in page.content()


def test_refused_posts_do_not_stop_the_reviewers_pages(hostile_run, browser) -> None:
    """Four refused POSTs of 949,000 characters at once while the browser loads the list:
    every load is the list page and every POST a refusal. (How long the loads take is
    `python bench/bench_security29.py loop`'s; that the body is never read is
    test_dashboard_round4's.)"""
    url, _, _ = hostile_run
    big = "".join(f"(* {i:06d} {'ℕ' * 59} *)\n" for i in range(13_000))
    page = browser.new_page()
    page.goto(url + "/")
    answers: list[int] = []

    def attack() -> None:
        with httpx.Client(timeout=60) as web:
            answers.append(
                web.post(url + "/decide", data={"problem_id": "alg-find", "code": big}).status_code
            )

    attackers = [threading.Thread(target=attack) for _ in range(4)]
    for t in attackers:
        t.start()
    loads = 0
    while any(t.is_alive() for t in attackers) or loads < 3:
        response = page.goto(url + "/")
        assert response is not None and response.ok
        assert "alg-find" in page.content()
        loads += 1
    for t in attackers:
        t.join()
    assert answers == [403] * 4
