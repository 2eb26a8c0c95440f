"""The templates' environment: autoescaped jinja2 with the few helpers the pages use.

Text from models, textbooks and reviewers may hold characters that change what a person
sees without changing what the assistant compiles: bidi overrides and isolates (U+202E
makes `x := 1 (* ‮ *)` read backwards), zero-width and other format characters, C0/C1
controls. Every value a page shows is passed through `visible` (the environment's
`finalize`), which writes each such character as `⟨U+202E⟩`. The one exception is the text
inside an editor, which must be posted back byte for byte: templates mark it `|editable`,
and the page lists where its hidden characters are (`hidden_characters`).
"""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from formalbench.core.hidden_chars import unseen_pattern
from formalbench.judge.ranking import model_name as ranking_model_name

TEMPLATES = Path(__file__).resolve().parent / "templates"
_HIDDEN = unseen_pattern()  # the class ids refuse (core/hidden_chars.py): one rule for both


class EditorText(str):
    """Text that goes into an editor as it is (see the module's docstring)."""


def visible(value: Any) -> Any:
    """A value as a page shows it: hidden characters written as `⟨U+XXXX⟩`.

    Markup (a macro's output, already escaped and marked) stays Markup: `re.sub` returns a
    plain `str`, which autoescape would escape a second time (the page once showed
    `<p class="muted small">…</p>` as text). The marker holds no HTML character, so marking
    inside Markup is safe."""
    if isinstance(value, EditorText) or not isinstance(value, str):
        return value
    marked = _HIDDEN.sub(_marker, value)
    return Markup(marked) if isinstance(value, Markup) else marked


def _marker(match: re.Match[str]) -> str:
    return f"⟨U+{ord(match.group()):04X}⟩"


def editable(value: str | None) -> EditorText:
    return EditorText(value or "")


def hidden_characters(text: str | None, limit: int = 20) -> list[str]:
    """Where the hidden characters of an editor's text are, as `line L, column C: U+XXXX NAME`
    (at most `limit`, then how many more)."""
    found: list[str] = []
    total = 0
    for number, line in enumerate((text or "").split("\n"), start=1):
        for match in _HIDDEN.finditer(line):
            total += 1
            if len(found) < limit:
                char = match.group()
                name = unicodedata.name(char, "unnamed")
                found.append(f"line {number}, column {match.start() + 1}: U+{ord(char):04X} {name}")
    if total > limit:
        found.append(f"… and {total - limit} more")
    return found


def when(iso: str | None) -> str:
    """An ISO time as people read it in a list: `2025-01-31 14:05 UTC`."""
    if not iso:
        return ""
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        return iso
    zone = " UTC" if moment.utcoffset() == timedelta(0) else moment.strftime(" %z")
    return moment.strftime("%Y-%m-%d %H:%M") + zone


def problem_url(pid: str, qs: str = "") -> str:
    """A problem page's address; ids may hold any character (slashes included)."""
    return f"/p/{quote(pid, safe='')}" + (f"?{qs}" if qs else "")


def anchor(candidate_id: str) -> str:
    return "cand-" + re.sub(r"[^A-Za-z0-9_-]", "-", candidate_id)


def model_name(spec: str | None) -> str:
    """A model as people name it, as the metrics and the ranking prompt name it."""
    return ranking_model_name(spec or "")


def candidate_in(candidate_id: str, view: Any) -> Any:
    return view.find(candidate_id)


def make_env() -> Environment:
    """Every value is escaped unless a template says otherwise (none does)."""
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=visible,
    )
    env.globals["problem_url"] = problem_url
    env.filters["anchor"] = anchor
    env.filters["when"] = when
    env.filters["model_name"] = model_name
    env.filters["candidate_in"] = candidate_in
    env.filters["editable"] = editable
    env.globals["hidden_characters"] = hidden_characters
    return env
