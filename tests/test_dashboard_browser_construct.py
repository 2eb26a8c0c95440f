"""End to end in headless Chromium: `formalbench review` on a construct run, served by the
real command; a block edited, re-checked with the real coqc, accepted, exported.

Skips without chromium / Playwright like tests/test_dashboard_browser.py (whose server,
browser and skip fixtures it uses).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from formalbench.core.records import Task
from tests import construct_formal_script as script
from tests.test_dashboard_browser import (  # noqa: F401 - fixtures
    _browser_present,
    _start,
    browser,
    needs_coq,
)
from tests.test_dashboard_construct import template  # noqa: F401 - the run, made once

pytestmark = pytest.mark.browser


@needs_coq
def test_construct_review_edit_recheck_accept_export(
    template: Path,  # noqa: F811
    browser,  # noqa: F811
    tmp_path: Path,
) -> None:
    run = Path(shutil.copytree(template, tmp_path / "run"))
    proc, url = _start(run)
    try:
        page = browser.new_page()
        page.goto(url + "/")
        expect_rows = page.locator("#problems tbody tr")
        assert expect_rows.count() == 4
        page.click("text=la/trace")
        assert page.locator("#problem-id").inner_text() == "la/trace"
        assert "Definition TR" in page.locator("#expansion").inner_text()
        theorem = page.locator("#block-3 textarea")
        assert theorem.input_value() == script.TRACE_THM

        theorem.fill(script.TRACE_THM.replace("trace n B.", "trace n C."))
        with page.expect_navigation():
            page.click("#recheck-button")
        assert "Does not compile" in page.locator("#recheck").inner_text()
        assert "trace n C." in page.locator("#block-3 textarea").input_value()  # kept

        fixed = script.TRACE_THM.replace("trace n B.", "trace n B + 0.")
        page.locator("#block-3 textarea").fill(fixed)
        with page.expect_navigation():
            page.click("#recheck-button")
        assert "Compiles" in page.locator("#recheck").inner_text()
        page.fill("#note", "explicit + 0")
        with page.expect_navigation():
            page.click("#accept")
        assert "accepted by alice" in page.locator("#saved").inner_text()

        with page.expect_download() as download:
            page.click("text=Export accepted (JSONL)")
        path = tmp_path / "accepted.jsonl"
        download.value.save_as(path)
        (task,) = [Task.model_validate_json(x) for x in path.read_text().splitlines()]
        assert task.id == "la/trace" and fixed in task.formal
        assert task.trail["review"]["note"] == "explicit + 0"
        assert task.trail["review"]["recheck"]["compiled"] is True
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
