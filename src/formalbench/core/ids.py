"""The one rule for the id of a task, a problem or an exercise, checked when it is read.

An id names a record in reports, in the store and in the review page's address
(`/p/<id>`), so it must survive all three: not blank, no surrounding blanks, no character a
reader cannot see for what it is (`core/hidden_chars.unseen`: controls, format characters,
blanks other than the space such as U+00A0 or U+2800, default-ignorable ones such as the
Hangul filler U+3164, U+034F or the variation selector U+FE0F, private-use and unassigned
code points: `p1` and `p1<U+FE0F>` would be two records that read as one),
at most 512 characters, and not `.` or `..`, which a browser folds away as path segments
(`/p/..` is `/`), even percent-encoded. Slashes and any other printable character stay
allowed: real datasets use them (`fcla/NM.C10`, `mathd_algebra_10`).
"""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import AfterValidator

from formalbench.core.hidden_chars import unseen

MAX_ID = 512


def check_id(value: str) -> str:
    """`value` when it is a usable id; a ValueError that says what is wrong otherwise."""
    if not value.strip():
        raise ValueError("an id must not be blank")
    if value in (".", ".."):
        raise ValueError(f"id {value!r} is a path segment a browser drops; use a name")
    if len(value) > MAX_ID:
        raise ValueError(f"id of {len(value)} characters; at most {MAX_ID}")
    for position, char in enumerate(value, start=1):
        if unseen(char):
            shown = "".join(f"⟨U+{ord(c):04X}⟩" if unseen(c) else c for c in value)
            name = unicodedata.name(char, unicodedata.category(char))
            raise ValueError(
                f"id {shown!r} holds U+{ord(char):04X} ({name}) at character {position}: "
                "ids must be visible text"
            )
    if value != value.strip():
        raise ValueError(f"id {value!r} starts or ends with a blank")
    return value


RecordId = Annotated[str, AfterValidator(check_id)]
