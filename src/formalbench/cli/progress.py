"""The progress bar every long command shows on a terminal: counts, a live status field,
rate, times."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text


class RateColumn(ProgressColumn):
    """Items per second over rich's recent window."""

    def render(self, task: Task) -> Text:
        return Text(
            "" if task.speed is None else f"{task.speed:.2f}/s", style="progress.data.speed"
        )


def make_progress(console: Console, status_field: str = "status") -> Progress:
    """A bar whose tasks carry a text field `status_field` (pass rate, compile counts...)."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(f"{{task.fields[{status_field}]}}"),
        RateColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        # Only on a terminal: in a pipe or a log a bar is noise, and rich would still write
        # an empty line when it stops (before an error, or before the JSON of `--json`).
        disable=not console.is_terminal,
    )
