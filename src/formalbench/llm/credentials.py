"""API keys and endpoint addresses, kept out of reprs, logs and error messages.

Keys come from the environment (or from a caller that passes one in code), never from files in
the repository. A key is held in a `Secret`, whose repr and str are masked, and every message
built from a server's reply goes through `redact` before it is logged or raised.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit


class Secret:
    """A string that never shows itself: `repr`, `str` and f-strings give `***`."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    def __str__(self) -> str:
        return "***"

    def __bool__(self) -> bool:
        return bool(self._value)


def key_from_env(env_var: str, explicit: str | None = None) -> Secret | None:
    """The key passed in code, else the value of `env_var`, else None (empty counts as unset)."""
    value = explicit if explicit else os.environ.get(env_var, "").strip()
    return Secret(value) if value else None


def redact(text: str, *secrets: Secret | None) -> str:
    """`text` with every secret (and any long-enough prefix a server may echo) masked."""
    for secret in secrets:
        if not secret:
            continue
        value = secret.reveal()
        text = text.replace(value, "***")
        if len(value) > 12:  # servers often echo a truncated key, e.g. "sk-abc123...."
            text = text.replace(value[:12], "***")
    return text


def display_url(url: str) -> str:
    """The URL without any `user:password@` part, for messages."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
