"""The progress of long commands (cli/progress.py): a rate and an estimate from the items
this process worked on (resumed ones left out), one plain line per minute off a terminal and
one at the end, the line's format; and the commands that report through it.

Time is a clock the test moves by hand: nothing sleeps, nothing depends on the machine's
speed."""

from __future__ import annotations

import io
import json
import shutil

import pytest
from rich.console import Console
from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.cli.progress import LongProgress, Meter, duration, rate_text
from tests.shared_data import DATA, needs_shared


class Clock:
    """Seconds, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def plain(clock: Clock) -> tuple[LongProgress, io.StringIO]:
    """A display on a stream that is not a terminal, with the test's clock (no thread)."""
    out = io.StringIO()
    return LongProgress(Console(file=out), clock=clock, ticker=False), out


def lines(out: io.StringIO) -> list[str]:
    return out.getvalue().splitlines()


# --- the rate leaves resumed items out ---------------------------------------------------------
def test_resumed_items_count_as_done_but_not_in_the_rate_or_the_estimate() -> None:
    clock = Clock()
    shown, _ = plain(clock)
    with shown:
        stage = shown.stage("validating", unit="task")
        for done in range(1, 31):  # a resume: 30 stored tasks reported at once
            stage.report(done, 40, "", done)
        m = stage.meter
        assert (m.done, m.resumed, m.fresh) == (30, 30, 0)
        assert m.seconds_per_item() is None and m.rate() == "" and m.estimate() == ""
        clock.now += 60  # then a task of a minute
        stage.report(31, 40, "", 30)
        assert m.seconds_per_item() == 60.0
        assert m.rate() == "60.0 s/task"  # not 30720.31/s
        assert m.seconds_left() == 9 * 60.0 and m.estimate() == "about 0:09:00 left"
        clock.now += 30  # a second one half done: the figures stay those measured
        assert m.rate() == "60.0 s/task" and m.seconds_left() == 540.0


def test_resumed_items_between_worked_ones_and_parallel_workers() -> None:
    clock = Clock()
    shown, _ = plain(clock)
    stage = shown.stage("attempts", total=100, unit="attempt")
    clock.now += 10
    for _ in range(4):  # four workers finish together after 10 s: 2.5 s an attempt
        stage.advance()
    stage.advance(6, resumed=True)  # cached ones in between, at no cost
    assert (stage.meter.done, stage.meter.resumed) == (10, 6)
    assert stage.meter.seconds_per_item() == 2.5
    assert stage.meter.seconds_left() == 90 * 2.5


def test_rate_reads_as_items_per_second_or_seconds_per_item() -> None:
    assert rate_text(0.5, "attempt", "attempts") == "2.0 attempts/s"
    assert rate_text(0.001, "file", "files") == "1000 files/s"
    assert rate_text(1.0, "task", "tasks") == "1.0 s/task"
    assert rate_text(58.34, "task", "tasks") == "58.3 s/task"
    assert rate_text(612.0, "task", "tasks") == "612 s/task"
    assert rate_text(None, "task", "tasks") == ""
    assert duration(0) == "0:00:00" and duration(3725.9) == "1:02:05"


# --- the line ------------------------------------------------------------------------------
def test_the_line_says_count_share_resumed_status_rate_elapsed_and_estimate() -> None:
    m = Meter("validating", started=0.0, unit="task", units="tasks")
    m.observe(0.0, done=5, total=40, resumed=5)
    m.observe(420.0, done=12, status="3 kept")  # 7 tasks worked on in 420 s
    assert m.line(700.0) == (
        "validating: 12/40 tasks (30%), 5 resumed | 3 kept | 60.0 s/task | "
        "0:11:40 elapsed | about 0:28:00 left"
    )
    assert m.line(700.0, end=True) == (
        "validating: 12/40 tasks (30%), 5 resumed | 3 kept | 60.0 s/task | "
        "0:11:40 elapsed | stopped"
    )
    m.observe(2400.0, done=40)
    assert m.line(2400.0, end=True) == (
        "validating: 40/40 tasks (100%), 5 resumed | 3 kept | 68.6 s/task | "
        "0:40:00 elapsed | finished"
    )


def test_the_line_without_a_total_or_a_measured_item() -> None:
    m = Meter("mining", started=0.0, unit="commit", units="commits")
    assert m.line(5.0) == "mining: 0 commits | 0:00:05 elapsed"
    m.observe(0.0, done=12, resumed=12, total=None)
    assert m.line(5.0) == "mining: 12 commits, 12 resumed | 0:00:05 elapsed"
    cached = Meter("statements", 0.0, "task", "tasks", skipped_word="cached", total=3)
    cached.observe(1.0, done=3, resumed=3)
    assert cached.line(1.0, end=True) == (
        "statements: 3/3 tasks (100%), 3 cached | 0:00:01 elapsed | finished"
    )


# --- off a terminal: a line a minute and one at the end -----------------------------------
def test_off_a_terminal_one_line_a_minute_and_one_at_the_end() -> None:
    clock = Clock()
    shown, out = plain(clock)
    with shown:
        stage = shown.stage("validating", total=3, unit="task")
        clock.now += 59
        shown.tick()
        assert lines(out) == []  # nothing before a minute
        clock.now += 1
        shown.tick()
        assert lines(out) == ["validating: 0/3 tasks (0%) | 0:01:00 elapsed"]
        clock.now += 30
        stage.advance(status="1 kept")  # an update between two minutes writes nothing
        shown.tick()
        assert len(lines(out)) == 1
        clock.now += 30
        shown.tick()
        assert lines(out)[-1] == (
            "validating: 1/3 tasks (33%) | 1 kept | 90.0 s/task | 0:02:00 elapsed"
            " | about 0:03:00 left"
        )
        clock.now += 10
        stage.advance()
    assert lines(out)[2:] == [
        "validating: 2/3 tasks (67%) | 1 kept | 65.0 s/task | 0:02:10 elapsed | stopped"
    ]  # the end, once, though two items of three were done (Ctrl-C, an error)
    assert "\x1b" not in out.getvalue() and "\r" not in out.getvalue()


def test_a_finished_stage_writes_its_end_line_at_once_and_only_once() -> None:
    clock = Clock()
    shown, out = plain(clock)
    with shown:
        mine = shown.stage("mining", unit="commit")
        mine.report(1, 2, "", 0)
        clock.now += 4
        mine.report(2, 2, "", 0)
        assert lines(out) == [
            "mining: 2/2 commits (100%) | 2.0 s/commit | 0:00:04 elapsed | finished"
        ]
        later = shown.stage("validating", total=5, unit="task")
        clock.now += 120
        shown.tick()  # the finished stage says nothing more
        assert lines(out)[1:] == ["validating: 0/5 tasks (0%) | 0:02:00 elapsed"]
        later.update(5)
    assert len(lines(out)) == 3 and lines(out)[2].endswith("finished")


def test_an_error_or_ctrl_c_ends_the_line_with_stopped() -> None:
    clock = Clock()
    shown, out = plain(clock)
    try:
        with shown:
            stage = shown.stage("mining", unit="commit")  # no total known
            stage.advance()
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert lines(out) == ["mining: 1 commit | 0:00:00 elapsed | stopped"]


def test_stop_before_a_message_ends_the_lines_once() -> None:
    """A command stops the display before its own message (Ctrl-C: `... rerun to resume`);
    leaving the context afterwards writes nothing more."""
    clock = Clock()
    shown, out = plain(clock)
    with shown:
        report = shown.stage("validating", unit="task").report
        report(2, 5, "1 kept", 2)
        shown.stop(failed=True)
        out.write("validation interrupted\n")
    assert lines(out) == [
        "validating: 2/5 tasks (40%), 2 resumed | 1 kept | 0:00:00 elapsed | stopped",
        "validation interrupted",
    ]


def test_a_stage_that_did_nothing_writes_no_line() -> None:
    """An error before the first item keeps its one line (no `0/3 ... stopped` first)."""
    clock = Clock()
    shown, out = plain(clock)
    try:
        with shown:
            shown.stage("pairs", total=3, unit="pair")
            shown.stage("mining", unit="commit")  # never reported
            raise ValueError("bad input")
    except ValueError:
        pass
    assert out.getvalue() == ""


def test_a_stage_not_reported_yet_still_gets_its_minute_line() -> None:
    """The first task of a validation may take minutes: the log still shows the work alive."""
    clock = Clock()
    shown, out = plain(clock)
    with shown:
        shown.stage("validating", unit="task")
        clock.now += 60
        shown.tick()
    assert lines(out) == [
        "validating: 0 tasks | 0:01:00 elapsed",
        "validating: 0 tasks | 0:01:00 elapsed | finished",
    ]


def test_on_a_terminal_rich_draws_the_measured_rate_and_no_plain_line() -> None:
    clock = Clock()
    screen = io.StringIO()
    console = Console(file=screen, width=160, color_system=None, force_terminal=True)
    with LongProgress(console, clock=clock) as shown:
        stage = shown.stage("validating", unit="task")
        stage.report(30, 40, "", 30)
        clock.now += 60
        stage.report(31, 40, "3 kept", 30)
        shown.tick()
    drawn = screen.getvalue()
    assert "31/40" in drawn and "30 resumed, 3 kept" in drawn
    assert "60.0 s/task" in drawn and "about 0:09:00 left" in drawn
    assert " | " not in drawn  # no plain line on a terminal


def test_disabled_shows_nothing() -> None:
    clock = Clock()
    out = io.StringIO()
    with LongProgress(Console(file=out), enabled=False, clock=clock, ticker=False) as shown:
        stage = shown.stage("attempts", total=2)
        clock.now += 120
        stage.advance(2)
        shown.tick()
    assert out.getvalue() == ""


# --- the commands --------------------------------------------------------------------------
@needs_shared
def test_ape_mine_off_a_terminal_ends_with_a_line_and_a_resume_is_not_timed(tmp_path) -> None:
    runner = CliRunner()
    bundle = str(DATA / "git-histories" / "coq-topology.bundle")
    args = ["ape", "mine", bundle, "--run-dir", str(tmp_path), "--limit", "4", "--json"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["commits"] == 4  # stdout keeps the JSON alone
    (line,) = first.stderr.splitlines()
    assert line.startswith("mining: 4/4 commits (100%) | ") and line.endswith(" | finished")
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    (line,) = again.stderr.splitlines()
    assert line.startswith("mining: 4/4 commits (100%), 4 resumed | 0:00:")
    assert "/s" not in line and "s/commit" not in line  # nothing measured: no rate


@pytest.mark.skipif(shutil.which("coqc") is None, reason="needs coqc")
def test_check_pairs_counts_verdict_cache_hits_as_cached_not_in_the_rate(tmp_path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        '{"id": "a", "candidate_text": "Lemma x : 1 = 1. Proof. reflexivity. Qed.",'
        ' "original_text": "Lemma x : 1 = 1. Proof. Admitted."}\n\n'
        '{"id": "b", "candidate_text": "Lemma x : 1 = 2. Proof. reflexivity. Qed.",'
        ' "original_text": "Lemma x : 1 = 2. Proof. Admitted."}\n',
        encoding="utf-8",
    )
    args = ["check", "--pairs", str(pairs), "--json", "--backend", "coq"]
    args += ["--cache", str(tmp_path / "verdicts.sqlite")]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 1, first.output  # one pair fails
    assert len(first.stdout.splitlines()) == 2  # stdout: the results alone
    (line,) = first.stderr.splitlines()
    assert line.startswith("pairs: 2/2 pairs (100%) | 1 passed | ") and line.endswith("finished")
    assert "s/pair" in line or "pairs/s" in line
    again = CliRunner().invoke(app, args)
    (line,) = again.stderr.splitlines()
    assert line.startswith("pairs: 2/2 pairs (100%), 2 cached | 1 passed | 0:00:0")
    assert "s/pair" not in line and "pairs/s" not in line
