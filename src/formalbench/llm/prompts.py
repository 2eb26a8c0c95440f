"""Prompt templates: one file per pipeline step, rendered into chat messages.

Files live in `formalbench/prompts/NAME.md`. A file is a sequence of sections, each opened by a
line that is exactly `### system`, `### user` or `### assistant` (few-shot turns are
`### user` / `### assistant` pairs). Text before the first marker is a note for maintainers
and is not sent. The rest is one Jinja2 template rendered with StrictUndefined, so a variable
the caller forgot is an error, not an empty string; a `{% for %}` may repeat sections (few-shot
examples), and `{% ... %}` lines leave no blank line behind (trim_blocks / lstrip_blocks).
A variable's value can never open a section, even if it contains a marker line. Any other
`###` line is ordinary content.

`hash` is the sha256 of the file text with line endings normalised to `\\n`: it names the
version of the prompt and is stored with every attempt, so a changed prompt is visible in
results. A section that renders to blank text is left out (an optional few-shot turn).
"""

from __future__ import annotations

import functools
import hashlib
import re
import secrets
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta

from formalbench.core.errors import InputError
from formalbench.llm.base import Message

SUFFIX = ".md"
_MARKER = re.compile(r"^###[ \t]+(system|user|assistant)[ \t]*$", re.MULTILINE)
_SECTION = "_formalbench_section"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_ENV = jinja2.Environment(
    undefined=jinja2.StrictUndefined,
    autoescape=False,
    keep_trailing_newline=False,
    trim_blocks=True,
    lstrip_blocks=True,
)


def prompts_dir() -> Path:
    """The directory of the prompt files shipped with the package."""
    return Path(str(resources.files("formalbench"))) / "prompts"


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    text: str
    path: Path | None = None
    template: jinja2.Template | None = field(default=None, repr=False)
    variables: frozenset[str] = frozenset()

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def where(self) -> str:
        return f"prompt {self.name!r}" + (f" ({self.path})" if self.path else "")

    @classmethod
    def from_text(cls, text: str, name: str = "inline", path: Path | None = None) -> PromptTemplate:
        """Parse a template; a file with no section or a Jinja2 syntax error is an InputError."""
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        where = f"prompt {name!r}" + (f" ({path})" if path else "")
        first = _MARKER.search(text)
        if first is None:
            raise InputError(
                f"{where}: no section; start one with a line '### system' or '### user'"
            )
        # The note is blanked out (its line count kept, so error lines match the file) and each
        # marker becomes a call that emits a per-render random separator: a variable's value
        # can never open a section of its own, while `{% for %}` may repeat sections.
        note_lines = "\n" * text.count("\n", 0, first.start())
        source = note_lines + _MARKER.sub(
            lambda m: f"{{{{ {_SECTION}({m.group(1)!r}) }}}}", text[first.start() :]
        )
        try:
            parsed = _ENV.parse(source)
            template = _ENV.from_string(parsed)
        except jinja2.TemplateSyntaxError as exc:
            raise InputError(f"{where}, line {exc.lineno}: template error: {exc.message}") from None
        variables = jinja2.meta.find_undeclared_variables(parsed) - {_SECTION}
        return cls(name, text, path, template, frozenset(variables))

    def render(self, **values: Any) -> list[Message]:
        """The chat messages, every variable filled; a missing one is an InputError."""
        assert self.template is not None
        missing = sorted(self.variables - values.keys())
        if missing:
            raise InputError(f"{self.where}: missing variable(s): {', '.join(missing)}")
        nonce = secrets.token_hex(16)
        try:
            rendered = self.template.render(
                **values, **{_SECTION: lambda role: f"\x00{nonce}:{role}\x00"}
            )
        except jinja2.UndefinedError as exc:  # e.g. an attribute missing from a given value
            raise InputError(f"{self.where}: {exc.message}") from None
        # split on the marker by plain string search: a regex of the per-render nonce would
        # be compiled anew on every render (a millisecond, more than the rest of a step)
        messages: list[Message] = []
        for part in rendered.split(f"\x00{nonce}:")[1:]:
            role, _, body = part.partition("\x00")
            content = body.strip("\n")
            if content.strip():
                messages.append(Message(role=role, content=content))  # type: ignore[arg-type]
        return messages


def list_prompts(directory: str | Path | None = None) -> list[str]:
    """Names of the templates in `directory` (default: the package's prompts)."""
    root = Path(directory) if directory is not None else prompts_dir()
    return sorted(p.stem for p in root.glob(f"*{SUFFIX}")) if root.is_dir() else []


def load_prompt(name: str, directory: str | Path | None = None) -> PromptTemplate:
    """The template `name` (file `NAME.md`) from `directory`, default the package's prompts."""
    root = Path(directory) if directory is not None else prompts_dir()
    stem = name[: -len(SUFFIX)] if name.endswith(SUFFIX) else name
    if not _NAME.match(stem):
        raise InputError(f"prompt name {name!r}: use letters, digits, '_', '-' or '.' only")
    path = root / f"{stem}{SUFFIX}"
    if not path.is_file():
        known = ", ".join(list_prompts(root)) or "none"
        raise InputError(f"prompt {stem!r}: no file {path}; available: {known}")
    return _parsed(path, path.stat().st_mtime_ns, stem)


@functools.lru_cache(maxsize=128)
def _parsed(path: Path, mtime_ns: int, stem: str) -> PromptTemplate:
    """One parse per file version: parsing costs more than the rest of a pipeline step, and a
    run renders the same few templates thousands of times (an edited file is read again)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"prompt {stem!r} ({path}): unreadable: {exc}") from None
    return PromptTemplate.from_text(text, stem, path)
