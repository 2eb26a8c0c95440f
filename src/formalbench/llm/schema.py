"""JSON Schemas for structured replies: made from pydantic models, named for the providers.

Kept apart from `llm.structured` so the providers can name a schema without importing the
prompt machinery.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from pydantic import BaseModel

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


@functools.cache
def json_schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of `model` as pydantic writes it (title = the class name).

    Made once per class (pydantic takes milliseconds to write one, and a run asks thousands
    of times); the dict is shared, so callers must not change it.
    """
    return model.model_json_schema()


def schema_name(schema: dict[str, Any]) -> str:
    """A name the providers accept (`^[A-Za-z0-9_-]{1,64}$`): the schema's title, else `reply`."""
    name = _UNSAFE.sub("_", str(schema.get("title") or "reply")).strip("_")
    return (name or "reply")[:64]


def schema_text(schema: dict[str, Any]) -> str:
    """The schema as compact JSON, for stating it in a prompt."""
    return json.dumps(schema, ensure_ascii=False, sort_keys=True)
