"""`--cache FILE` of `formalbench check` (one file or `--pairs`): opening the verdict cache
with one clear line when the path cannot hold one. A module of its own so that both forms of
the command import it downward (neither imports the other)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from formalbench.core.errors import InputError

if TYPE_CHECKING:
    from formalbench.store.verdict_cache import VerdictCache


def open_cache(path: str | None) -> VerdictCache | None:
    """The verdict cache at `path` (None: no cache); a path that cannot hold one is an
    InputError naming it."""
    if path is None:
        return None
    import sqlite3

    from formalbench.store.verdict_cache import VerdictCache

    target = Path(path)
    if target.is_dir():
        raise InputError(f"--cache {path!r}: is a directory; give a file path")
    try:
        return VerdictCache(target)
    except (OSError, sqlite3.Error) as exc:  # not a database, a folder that cannot be made
        raise InputError(f"--cache {path!r}: cannot open a verdict cache ({exc})") from None
