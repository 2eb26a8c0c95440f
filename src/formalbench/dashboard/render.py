"""The templates' environment: autoescaped jinja2 with the few helpers the pages use."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape

from formalbench.judge.ranking import model_name as ranking_model_name

TEMPLATES = Path(__file__).resolve().parent / "templates"


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
    )
    env.globals["problem_url"] = problem_url
    env.filters["anchor"] = anchor
    env.filters["when"] = when
    env.filters["model_name"] = model_name
    env.filters["candidate_in"] = candidate_in
    return env
