"""Backends by name, so that commands and configs can say `--backend coq`.

Each backend module is imported only when asked for: the Lean REPL pool or the Kimina HTTP
client is not loaded by a run that uses Coq, and a backend whose module is missing fails with
a clear message instead of breaking every command.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

from formalbench.backends.base import Backend
from formalbench.core.errors import BackendError, InputError
from formalbench.core.records import Language

_CLASSES: dict[str, tuple[str, str]] = {
    "coq": ("formalbench.backends.coq", "CoqBackend"),
    "lean": ("formalbench.backends.lean.backend", "LeanBackend"),
    "kimina": ("formalbench.backends.lean.kimina", "KiminaBackend"),
}
BACKENDS: tuple[str, ...] = tuple(_CLASSES)
LANGUAGES: dict[str, Language] = {
    "coq": Language.coq,
    "lean": Language.lean,
    "kimina": Language.lean,
}
_SUFFIXES: dict[str, str] = {".lean": "lean", ".v": "coq"}


def _check_name(name: str) -> str:
    key = name.strip().lower() if isinstance(name, str) else name
    if key not in _CLASSES:
        raise InputError(f"unknown backend {name!r}; known backends: {', '.join(BACKENDS)}")
    return key


def language_of(name: str) -> Language:
    """The language a named backend checks."""
    return LANGUAGES[_check_name(name)]


def make_backend(name: str, **options: Any) -> Backend:
    """A new backend by name; `options` go to its constructor (e.g. `timeout=`, `workers=`,
    `project_dir=` for lean, `url=` for kimina). Unknown names and options are InputErrors;
    a missing toolchain is the backend's own ToolchainMissingError."""
    key = _check_name(name)
    module_name, class_name = _CLASSES[key]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise BackendError(f"backend {key!r} is not available: {exc}") from None
    cls = getattr(module, class_name)
    try:
        inspect.signature(cls).bind(**options)
    except TypeError as exc:
        raise InputError(f"bad options for backend {key!r}: {exc}") from None
    return cls(**options)


def backend_for_path(path: str | Path) -> str:
    """The backend name for a source file, from its suffix (.lean -> lean, .v -> coq)."""
    suffix = Path(path).suffix.lower()
    if suffix not in _SUFFIXES:
        known = ", ".join(f"{s} ({b})" for s, b in _SUFFIXES.items())
        raise InputError(
            f"{path}: cannot tell the proof assistant from suffix {suffix!r}; known: {known}"
        )
    return _SUFFIXES[suffix]
