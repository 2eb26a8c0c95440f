"""Known kernel soundness bugs by Coq version: what a verdict's `toolchain.known_unsound` lists.

A hook for the replay work of issue 33, which fills `FIXED_IN` (bug id -> the first Coq/Rocq
version that fixes it, None where no version does yet) from Rocq's critical-bugs list and its
own exploit tests; a verdict decided on a version before the fix names the bug, so a user sees
it before trusting the result. Empty here: nothing is claimed without its test.
"""

from __future__ import annotations

import re

FIXED_IN: dict[str, str | None] = {}


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version)[:3])


def known_unsound_for(version: str) -> list[str]:
    """The bugs of `FIXED_IN` that Coq `version` still has, sorted."""
    mine = _key(version)
    return sorted(bug for bug, fixed in FIXED_IN.items() if fixed is None or mine < _key(fixed))
