"""End to end: headless Chromium against `formalbench review` served by uvicorn on loopback.

The server is the real command (`python -m formalbench review RUN --port 0`) in its own
process; re-checks run the real coqc. Debian's chromium is driven by the Playwright package.

Without chromium or Playwright these tests skip, except where FORMALBENCH_REQUIRE_BROWSER=1
(CI sets it): there a missing browser fails them, so they cannot pass by not running.
FORMALBENCH_CHROMIUM names another chromium binary.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from formalbench.core.records import Task
from formalbench.datasets.loader import load_tasks
from test_dashboard_views import ADD_ZERO_OK, make_run

CHROMIUM = Path(os.environ.get("FORMALBENCH_CHROMIUM") or "/usr/bin/chromium")
REQUIRE = "FORMALBENCH_REQUIRE_BROWSER"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

try:
    from playwright.sync_api import Page, expect, sync_playwright
except ImportError:  # pragma: no cover - depends on the machine
    sync_playwright = None

pytestmark = pytest.mark.browser


def _missing() -> str | None:
    if sync_playwright is None:
        return "the playwright package is not installed"
    if not CHROMIUM.exists():
        return f"no chromium at {CHROMIUM}"
    return None


@pytest.fixture(autouse=True)
def _browser_present() -> None:
    """Skip without a browser, or fail where the browser tests are required to run."""
    why = _missing()
    if why is None:
        return
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{why}, and {REQUIRE}=1 requires the browser tests to run")
    pytest.skip(why)


needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")


def _start(run: Path) -> tuple[subprocess.Popen[str], str]:
    """Start the real server on a free loopback port; return it and the address it printed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "formalbench", "review", str(run), "--port", "0"]
        + ["--reviewer", "alice"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()
    try:
        first = lines.get(timeout=60)
    except queue.Empty:
        proc.kill()
        pytest.fail("the review server printed nothing in 60 s")
    if "serving" not in first:
        proc.kill()
        pytest.fail(f"the review server did not start: {first}")
    url = next(word for word in first.split() if word.startswith("http://127.0.0.1:"))
    return proc, url.rstrip("/")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    run = make_run(tmp_path / "run", extra=3)
    proc, url = _start(run)
    try:
        yield url, run
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def browser(tmp_path: Path):
    profile = tmp_path / "chromium-profile"  # a new, empty user-data-dir
    profile.mkdir()
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            accept_downloads=True,
            viewport={"width": 1400, "height": 900},
        )
        context.set_default_timeout(30_000)
        try:
            yield context
        finally:
            context.close()


def _wait_loaded(page: Page) -> None:
    page.wait_for_load_state("domcontentloaded")


@needs_coq
def test_review_edit_recheck_accept_export(server, browser, tmp_path: Path):
    url, run = server
    page = browser.new_page()
    page.goto(url + "/")
    expect(page.locator("#count-unreviewed")).to_have_text("6")
    expect(page.locator("#problems tbody tr")).to_have_count(6)

    # keyboard on the list: j, j selects the second row, Enter opens it
    page.keyboard.press("j")
    page.keyboard.press("j")
    expect(page.locator("#problems tr.selected")).to_contain_text("alg-add-zero")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    expect(page.locator("#problem-id")).to_have_text("alg-add-zero")
    editor = page.locator("#editor")
    assert editor.input_value() == ADD_ZERO_OK  # compiling, best-ranked candidate
    expect(page.locator("#reviewer")).to_have_value("alice")

    # typing shortcut letters in the editor types them, and decides nothing
    editor.click()
    editor.press("End")
    editor.type(" ar")
    assert page.url.endswith("/p/alg-add-zero") and not page.locator("#saved").count()

    # a broken edit: coqc's own error comes back
    broken = ADD_ZERO_OK.replace("n + O = n.", "n + 0 = n")
    editor.fill(broken)
    with page.expect_navigation():
        page.click("#recheck-button")
    expect(page.locator("#recheck")).to_contain_text("Does not compile")
    expect(page.locator("#recheck")).to_contain_text(
        "The reference Proof was not found in the current environment."
    )
    assert page.locator("#editor").input_value() == broken  # the edit is kept
    expect(page.locator("#edited")).to_be_visible()

    # the fixed edit compiles (re-check by keyboard: leave the editor, press c)
    fixed = ADD_ZERO_OK.replace("n + O = n.", "n + 0 = n.")
    page.locator("#editor").fill(fixed)
    page.keyboard.press("Escape")
    with page.expect_navigation():
        page.keyboard.press("c")
    expect(page.locator("#recheck")).to_contain_text("Compiles")

    # accept with a note, by keyboard
    page.fill("#note", "numeral 0 instead of the constructor O")
    page.keyboard.press("Escape")
    with page.expect_navigation():
        page.keyboard.press("a")
    expect(page.locator("#saved")).to_contain_text("accepted by alice")
    expect(page.locator("#status")).to_have_text("accepted")
    expect(page.locator("#history")).to_contain_text("numeral 0 instead")

    # export from the page
    with page.expect_download() as download:
        page.click("text=Export accepted (JSONL)")
    path = tmp_path / "accepted.jsonl"
    download.value.save_as(path)
    lines = path.read_text().splitlines()
    assert len(lines) == 1
    task = Task.model_validate_json(lines[0])
    assert task.id == "alg-add-zero" and task.source_text == fixed
    assert task.header == "Require Import Arith.\n\n"
    assert task.formal.startswith("Theorem add_zero_r : forall n : nat, n + 0 = n.")
    assert task.informal.statement.startswith("Prove that adding zero")
    assert task.labels == {"category": "algebra"}
    review = task.trail["review"]
    assert review["reviewer"] == "alice" and review["edited"] is True
    assert review["note"] == "numeral 0 instead of the constructor O"
    assert "-Theorem add_zero_r : forall n : nat, n + O = n." in review["diff"]
    assert "+Theorem add_zero_r : forall n : nat, n + 0 = n." in review["diff"]
    assert review["recheck"]["compiled"] is True and review["recheck"]["backend"].startswith("coq")
    assert task.trail["formalize"]["model"] == "model-b"
    assert task.trail["formalize"]["alignment"]["aligned"] is True
    assert [t.id for t in load_tasks(path)] == ["alg-add-zero"]

    # the command line exports the same dataset
    out = tmp_path / "cli.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "formalbench", "review", str(run), "--export", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "wrote 1 accepted task" in done.stdout
    mine = json.loads(out.read_text())
    assert mine["formal"] == task.formal and mine["trail"]["review"] == review


def test_two_tabs_second_decision_is_refused_and_kept(server, browser):
    url, _ = server
    first, second = browser.new_page(), browser.new_page()
    for tab in (first, second):
        tab.goto(url + "/p/alg-find")
        expect(tab.locator("#status")).to_have_text("unreviewed")
    with first.expect_navigation():
        first.click("#reject")
    expect(first.locator("#saved")).to_contain_text("rejected by alice")

    mine = "(* tab two *)\n" + second.locator("#editor").input_value()
    second.locator("#editor").fill(mine)
    second.fill("#note", "looks right to me")
    with second.expect_navigation() as nav:
        second.click("#accept")
    assert nav.value.status == 409
    expect(second.locator("h1")).to_contain_text("Not saved")
    expect(second.locator("#conflict-message")).to_contain_text("current version is 1")
    assert second.locator("#refused-code").input_value() == mine  # nothing lost
    with second.expect_navigation():
        second.click("#reload")
    expect(second.locator("#status")).to_have_text("rejected")

    # keyboard navigation between problems: k goes back, j forward
    with second.expect_navigation():
        second.keyboard.press("k")
    expect(second.locator("#problem-id")).to_have_text("alg-add-zero")
    with second.expect_navigation():
        second.keyboard.press("j")
    expect(second.locator("#problem-id")).to_have_text("alg-find")
