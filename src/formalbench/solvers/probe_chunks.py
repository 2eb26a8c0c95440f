"""The Coq portfolio probe of one hole, split into chunks that idle slots check in parallel.

A probe tries the tactics one after the other, so a hole that no tactic closes costs the
sum of every tactic's time (tens of seconds with the 3 s limit each): at the end of a run
that one probe runs alone while the other slots of the assistant have nothing to do
(`bench/bench_eval.py coq` measured a parallel efficiency of 0.61-0.78 with 2 workers).

The tactic list is cut into as many contiguous chunks as the backend has slots, each a
probe of its own. Chunk 0 is always checked; a later chunk is checked either when it is
needed (every chunk before it finished without a winner) or, speculatively, as soon as a
slot of the pool is spare (`Backend.spare_slots`: no other check is running or waiting).
The answer is read in chunk order: the first chunk that names a winner, overflows the
stack, or breaks decides, exactly as the undivided probe would (its winner is the first
tactic of the whole list that closes the goal); the chunks after it are abandoned and
their coqc killed at once (`Backend.acheck_abandonable`). When every chunk says "none",
no tactic closed the goal.

So in the middle of a run, when every slot is busy, a probe runs its chunks one after the
other and costs one extra coqc start per chunk it needs; at the end, the idle slots take
the later chunks and the long failing probe is split among them. The chunks checked are
counted (`probes`), and how many were started speculatively and abandoned.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from formalbench.backends.base import Backend
from formalbench.core.records import CheckResult
from formalbench.solvers.probe import ProbeReport, read_probe

MIN_CHUNK = 4  # tactics per chunk at least: a coqc start is not worth fewer
POLL_S = 0.2  # how often a waiting chunk looks for a spare slot


@dataclass
class ChunkedProbe:
    """What the chunks of one probe found, as the undivided probe would have."""

    result: CheckResult
    report: ProbeReport
    checks: int  # chunks checked (started), the deciding one included
    speculative: int  # chunks started on a spare slot before they were needed
    abandoned: int  # chunks started and then killed: an earlier chunk decided


def chunk(tries: Sequence[int], slots: int) -> list[list[int]]:
    """`tries` in at most `slots` contiguous chunks of at least `MIN_CHUNK` (but one)."""
    count = max(1, min(slots, len(tries) // MIN_CHUNK))
    size, extra = divmod(len(tries), count)
    out, at = [], 0
    for i in range(count):
        step = size + (1 if i < extra else 0)
        out.append(list(tries[at : at + step]))
        at += step
    return out


async def chunked_probe(
    backend: Backend,
    hole: int,
    chunks: list[list[int]],
    text_for: Callable[[list[int]], str],
    timeout_for: Callable[[int], float],
) -> ChunkedProbe:
    """Probe `hole` chunk by chunk (see the module doc); `text_for(chunk)` is the file that
    probes the tactics of `chunk`, `timeout_for(n)` the time limit for n tactics."""
    texts = [text_for(c) for c in chunks]
    stops = [threading.Event() for _ in chunks]
    running: dict[int, asyncio.Task[CheckResult | None]] = {}
    speculative = 0

    def start(i: int) -> None:
        check = backend.acheck_abandonable(texts[i], stops[i], timeout=timeout_for(len(chunks[i])))
        running[i] = asyncio.ensure_future(check)

    start(0)
    first = 0  # the first chunk whose answer is still to be read
    try:
        while True:
            while first in running and running[first].done():
                result = running[first].result()
                assert result is not None  # only chunks after a deciding one are abandoned
                report = read_probe(result, texts[first])
                if report.wins.get(hole, -1) is not None or first == len(chunks) - 1:
                    # a winner, an overflow, a broken probe, or the last "none": decided
                    abandoned = sum(1 for i in running if i > first)
                    return ChunkedProbe(result, report, len(running), speculative, abandoned)
                first += 1
            if first not in running:
                start(first)  # needed now: every chunk before it said "none"
            later = next((i for i in range(first + 1, len(chunks)) if i not in running), None)
            if later is not None and backend.spare_slots() > 0:
                start(later)
                speculative += 1
            waiting = {running[first]}
            await asyncio.wait(waiting, timeout=POLL_S if later is not None else None)
    finally:
        for i, task in running.items():
            if i > first or not task.done():
                stops[i].set()  # killed within half a second, its slot given back
                task.add_done_callback(_consume)


def _consume(task: asyncio.Task[CheckResult | None]) -> None:
    """Read an abandoned chunk's outcome so asyncio reports no unretrieved exception."""
    if not task.cancelled():
        task.exception()
