"""Known kernel soundness bugs by Coq version: what a verdict's `toolchain.known_unsound` lists.

A view of the table in `backends/coq_known_bugs.py` (bug, versions affected, fixed in, whether
the coqchk replay catches it, each with an exploit test of ours under tests/kernel_bugs/): a
verdict decided on a version the table says is affected names the bug, so a user sees it
before trusting the result. `FIXED_IN` (bug id -> the first version with the fix, None where
none has it yet) is kept for readers of this module; the decision is `known_unsound`'s, which
also knows when each bug was introduced.
"""

from __future__ import annotations

from formalbench.backends.coq_known_bugs import KNOWN_BUGS, known_unsound

FIXED_IN: dict[str, str | None] = {
    b.id: ".".join(map(str, b.fixed)) if b.fixed is not None else None for b in KNOWN_BUGS
}


def known_unsound_for(version: str) -> list[str]:
    """The listed bugs Coq `version` has not fixed (`coq_known_bugs.known_unsound`)."""
    return known_unsound(version)
