"""The progress of every long command, true on a terminal and in a log.

Every long command (eval, formalize, construct, ape mine / validate / synthesize / eval,
check --pairs, stats, snapshot put / restore, toolchain install) shows its work through
`LongProgress`: items done of the total, a rate, the time spent and an estimate of the time
left, each stage measured by a `Meter`.

Why not rich's own speed and time remaining: rich measures speed over a 30 s window of
updates, so a resume that marks 500 stored items done at once reads as thousands per second
with a one-second estimate, and items slower than the window have no speed at all. A `Meter`
counts resumed (already done, cached) items as done but leaves them out of the rate: the
rate is the items this process worked on over the time from the stage's start to the latest
of them, and the estimate is the items left at that rate.

On a terminal rich draws the bars (its columns below read the meters). Anywhere else (a log,
a pipe, CI) a bar is nothing or noise, so one plain line per unfinished stage is written each
`interval` seconds (60), and one when the stage ends. The clock is injected, so the timing is
tested without sleeping.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

Clock = Callable[[], float]
INTERVAL = 60.0  # seconds between two plain lines of a stage off a terminal


def duration(seconds: float) -> str:
    """H:MM:SS, as rich's elapsed column writes it."""
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


def rate_text(seconds_per_item: float | None, unit: str, units: str) -> str:
    """Items per second when at least one a second, else seconds per item (no `0.02/s`
    for tasks of a minute, no `0.0 s/file` for small files); empty when not measured."""
    if seconds_per_item is None:
        return ""
    if seconds_per_item < 1.0:
        per_second = 1.0 / seconds_per_item
        return f"{per_second:.{0 if per_second >= 100 else 1}f} {units}/s"
    return f"{seconds_per_item:.{0 if seconds_per_item >= 100 else 1}f} s/{unit}"


@dataclass
class Meter:
    """What one stage has done and how fast, from the items it worked on itself."""

    description: str
    started: float
    unit: str = "item"
    units: str = "items"
    skipped_word: str = "resumed"
    total: int | None = None
    done: int = 0
    resumed: int = 0  # of `done`, the items that needed no work (stored, cached)
    status: str = ""
    last_fresh: float | None = None  # when the latest worked-on item finished
    lines: int = 0  # plain lines written so far
    ended: bool = False

    @property
    def fresh(self) -> int:
        """Items finished by work of this process."""
        return max(0, self.done - self.resumed)

    def observe(
        self,
        now: float,
        done: int | None = None,
        total: int | None = None,
        status: str | None = None,
        resumed: int | None = None,
    ) -> None:
        """Absolute figures (None: unchanged); a rise of the worked-on count stamps `now`."""
        before = self.fresh
        if total is not None:
            self.total = total
        if done is not None:
            self.done = done
        if resumed is not None:
            self.resumed = min(resumed, self.done)
        if status is not None:
            self.status = status
        if self.fresh > before:
            self.last_fresh = now

    def seconds_per_item(self) -> float | None:
        """Time from the start to the latest worked-on item, over the worked-on items."""
        if self.fresh == 0 or self.last_fresh is None:
            return None
        spent = self.last_fresh - self.started
        return spent / self.fresh if spent > 0 else None

    def seconds_left(self) -> float | None:
        per_item = self.seconds_per_item()
        if per_item is None or self.total is None:
            return None
        return max(0, self.total - self.done) * per_item

    @property
    def complete(self) -> bool:
        return self.total is not None and self.done >= self.total

    def rate(self) -> str:
        return rate_text(self.seconds_per_item(), self.unit, self.units)

    def estimate(self) -> str:
        left = self.seconds_left()
        return "" if left is None or self.complete else f"about {duration(left)} left"

    def count(self) -> str:
        """`12/40 tasks (30%), 5 resumed`; `12 commits` while the total is unknown."""
        noun = self.unit if (self.done if self.total is None else self.total) == 1 else self.units
        if self.total is None:
            text = f"{self.done} {noun}"
        else:
            share = f" ({self.done / self.total:.0%})" if self.total else ""
            text = f"{self.done}/{self.total} {noun}{share}"
        return text + (f", {self.resumed} {self.skipped_word}" if self.resumed else "")

    def line(self, now: float, *, end: bool = False, failed: bool = False) -> str:
        """`validating: 12/40 tasks (30%), 5 resumed | 3 kept | 58.3 s/task |
        0:11:40 elapsed | about 0:27:10 left`; at the end, `finished`, or `stopped` when
        items are left or the work `failed` (an error, Ctrl-C)."""
        parts = [f"{self.description}: {self.count()}", self.status, self.rate()]
        parts.append(f"{duration(now - self.started)} elapsed")
        if end:
            left = self.total is not None and not self.complete
            parts.append("stopped" if failed or left else "finished")
        else:
            parts.append(self.estimate())
        return " | ".join(p for p in parts if p)


class _MeterColumn(ProgressColumn):
    """A column read off the task's meter (rich's speed and estimate are not used)."""

    def __init__(self, show: Callable[[Meter], str], style: str) -> None:
        super().__init__()
        self.show, self.style = show, style

    def render(self, task: Task) -> Text:
        meter = task.fields.get("meter")
        return Text(self.show(meter) if isinstance(meter, Meter) else "", style=self.style)


def _detail(meter: Meter) -> str:
    skipped = f"{meter.resumed} {meter.skipped_word}" if meter.resumed else ""
    return ", ".join(p for p in (skipped, meter.status) if p)


@dataclass
class Stage:
    """One counted piece of work of a `LongProgress` (attempts, tasks, commits, files)."""

    owner: LongProgress
    meter: Meter
    task: TaskID | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def update(
        self,
        done: int | None = None,
        total: int | None = None,
        status: str | None = None,
        resumed: int | None = None,
    ) -> None:
        """Absolute figures; `resumed`: how many of `done` needed no work (None: unchanged)."""
        with self._lock:
            self.meter.observe(self.owner.clock(), done, total, status, resumed)
        self.owner.changed(self)

    def advance(self, n: int = 1, *, resumed: bool = False, status: str | None = None) -> None:
        """`n` more items done (`resumed`: done before or cached, not counted in the rate)."""
        with self._lock:
            m = self.meter
            m.observe(
                self.owner.clock(), m.done + n, None, status, m.resumed + n if resumed else None
            )
        self.owner.changed(self)

    def report(self, done: int, total: int | None, status: str = "", resumed: int = 0, /) -> None:
        """The pipelines' callback shape: (done, total, status, resumed), all absolute."""
        self.update(done, total, status, resumed)

    def end(self) -> None:
        """The stage is over: its last plain line now (off a terminal), once."""
        self.owner.ended(self)


class LongProgress:
    """Bars on a terminal, else a plain line per stage each `interval` seconds and one at
    its end; `enabled=False` (`--quiet`, `--json` where a command wants silence) shows
    nothing. Used as a context manager around the work."""

    def __init__(
        self,
        console: Console | None = None,
        *,
        enabled: bool = True,
        interval: float = INTERVAL,
        clock: Clock = time.monotonic,
        transient: bool = False,
        ticker: bool = True,
    ) -> None:
        self.console = console if console is not None else Console(stderr=True)
        self.clock = clock
        self.interval = interval
        self.terminal = enabled and self.console.is_terminal
        self.plain = enabled and not self.terminal
        self.stages: list[Stage] = []
        self._lock = threading.RLock()
        self._last_lines = clock()
        self._ticker = ticker
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.bars: Progress | None = None
        if self.terminal:
            self.bars = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                _MeterColumn(_detail, "progress.description"),
                _MeterColumn(Meter.rate, "progress.data.speed"),
                TimeElapsedColumn(),
                _MeterColumn(Meter.estimate, "progress.remaining"),
                console=self.console,
                get_time=clock,
                transient=transient,
            )

    # --- stages ---------------------------------------------------------------------------
    def stage(
        self,
        description: str,
        *,
        total: int | None = None,
        done: int = 0,
        resumed: int = 0,
        unit: str = "item",
        units: str | None = None,
        skipped_word: str = "resumed",
        status: str = "",
    ) -> Stage:
        """A new stage, its clock started now; `done`/`resumed`: items done before it."""
        meter = Meter(
            description,
            self.clock(),
            unit=unit,
            units=units or f"{unit}s",
            skipped_word=skipped_word,
            total=total,
            done=done,
            resumed=min(resumed, done),
            status=status,
        )
        stage = Stage(self, meter)
        if self.bars is not None:
            stage.task = self.bars.add_task(description, total=total, completed=done, meter=meter)
        with self._lock:
            self.stages.append(stage)
        self.changed(stage)
        return stage

    def changed(self, stage: Stage) -> None:
        if self.bars is not None and stage.task is not None:
            m = stage.meter
            self.bars.update(stage.task, completed=m.done, total=m.total)
        if self.plain:
            if stage.meter.complete:
                self.ended(stage)
            self.tick()

    def ended(self, stage: Stage, failed: bool = False) -> None:
        """Its end line, once; none for a stage that did nothing and said nothing (an error
        before the first item keeps its one line)."""
        with self._lock:
            m = stage.meter
            if self.plain and not m.ended and (m.done or m.lines):
                self._write(m.line(self.clock(), end=True, failed=failed))
            m.ended = True

    def tick(self) -> None:
        """Off a terminal: when `interval` has passed since the last lines, a line for each
        stage under way (the ticker thread calls this; tests call it with their clock)."""
        if not self.plain:
            return
        with self._lock:
            now = self.clock()
            if now - self._last_lines < self.interval:
                return
            self._last_lines = now
            for stage in self.stages:
                m = stage.meter
                if not m.ended:  # one not reported yet too: the work is alive
                    self._write(m.line(now))
                    m.lines += 1

    def _write(self, line: str) -> None:
        # the file itself: console.print would wrap a long line at the console's width
        out = self.console.file
        out.write(line + "\n")
        out.flush()

    # --- the context ----------------------------------------------------------------------
    def __enter__(self) -> LongProgress:
        self._last_lines = self.clock()
        if self.bars is not None:
            self.bars.start()
        elif self.plain and self._ticker:
            self._thread = threading.Thread(target=self._tick_loop, daemon=True)
            self._thread.start()
        return self

    def _tick_loop(self) -> None:
        while not self._stop.wait(min(self.interval, 5.0)):
            self.tick()

    def stop(self, failed: bool = False) -> None:
        """Stop drawing now (before a message of the command's, e.g. after Ctrl-C): the
        bars stay as they are on a terminal, each stage's end line is written elsewhere
        (`failed`: `stopped`). Leaving the context does it too; twice is harmless."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.bars is not None:
            self.bars.stop()
        for stage in list(self.stages):
            self.ended(stage, failed=failed)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop(failed=kind is not None)


class Report(Protocol):
    """A pipeline's progress callback: (done, total, status, resumed), all absolute; fits a
    pipeline that calls with three (then nothing counts as resumed)."""

    def __call__(
        self, done: int, total: int | None, status: str = "", resumed: int = 0, /
    ) -> None: ...


def reporter(
    progress: LongProgress, description: str, *, unit: str = "item", units: str | None = None
) -> Report:
    """A new stage's `report`, for a pipeline's (done, total, status, resumed) callback."""
    return progress.stage(description, unit=unit, units=units).report


@contextmanager
def counted(description: str, total: int, *, unit: str = "file") -> Iterator[Callable[[int], None]]:
    """One stage of `total` items on stderr, removed from a terminal when done (a snapshot's
    put or restore: `store.snapshots.progress.Bar`); yields `advance(n)`."""
    with LongProgress(transient=True) as progress:
        yield progress.stage(description, total=total, unit=unit).advance
