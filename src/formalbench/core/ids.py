"""The one rule for the id of a task, a problem or an exercise, checked when it is read.

An id names a record in reports, in the store and in the review page's address
(`/p/<id>`), so it must survive all three: not blank, no surrounding blanks, no control,
format or line-separator characters (they are invisible, or reorder what a reviewer reads),
at most 512 characters, and not `.` or `..`, which a browser folds away as path segments
(`/p/..` is `/`), even percent-encoded. Slashes and any other printable character stay
allowed: real datasets use them (`fcla/NM.C10`, `mathd_algebra_10`).
"""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import AfterValidator

MAX_ID = 512
_HIDDEN_CATEGORIES = ("Cc", "Cf", "Zl", "Zp")


def check_id(value: str) -> str:
    """`value` when it is a usable id; a ValueError that says what is wrong otherwise."""
    if not value.strip():
        raise ValueError("an id must not be blank")
    if value != value.strip():
        raise ValueError(f"id {value!r} starts or ends with a blank")
    if value in (".", ".."):
        raise ValueError(f"id {value!r} is a path segment a browser drops; use a name")
    if len(value) > MAX_ID:
        raise ValueError(f"id of {len(value)} characters; at most {MAX_ID}")
    for position, char in enumerate(value, start=1):
        if unicodedata.category(char) in _HIDDEN_CATEGORIES:
            raise ValueError(
                f"id {value!r} holds U+{ord(char):04X} ({unicodedata.name(char, 'a control character')})"
                f" at character {position}: ids must be visible text"
            )
    return value


RecordId = Annotated[str, AfterValidator(check_id)]
