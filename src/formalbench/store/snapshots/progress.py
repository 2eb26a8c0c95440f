"""How a long put or restore reports its progress: through the caller's bar, or not at all.

The store is below the command line and draws nothing itself: `formalbench snapshot` passes
the command line's bar (`cli.progress.counted`), every other caller passes None."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

# (description, total) -> a context yielding advance(n)
Bar = Callable[[str, int], AbstractContextManager[Callable[[int], None]]]


@contextmanager
def bar(factory: Bar | None, description: str, total: int) -> Iterator[Callable[[int], None]]:
    """Yield `advance(n)`: the factory's, or one that does nothing."""
    if factory is None:
        yield lambda n: None
        return
    with factory(description, total) as advance:
        yield advance
