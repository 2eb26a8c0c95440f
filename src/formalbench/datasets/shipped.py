"""The example benchmarks that ship inside the package, so `formalbench eval` runs offline.

Each is one JSONL file in the project's task format under `datasets/examples/`. `example`
is another name for `example-coq`: Coq is the assistant that runs on a bare machine, and a
mixed-language default would fail every Lean task for want of a toolchain.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"
ALIASES: dict[str, str] = {"example": "example-coq"}


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    count: int
    languages: tuple[str, ...]
    path: Path
    alias_of: str | None = None


def _files() -> dict[str, Path]:
    return {p.stem: p for p in sorted(EXAMPLES_DIR.glob("*.jsonl"))}


def shipped_names() -> list[str]:
    """Every name `load_tasks` accepts without a path, aliases included."""
    return sorted([*_files(), *(a for a, target in ALIASES.items() if target in _files())])


def shipped_path(name: str) -> Path | None:
    """The file behind a shipped dataset name, or None when there is no such dataset."""
    return _files().get(ALIASES.get(name, name))


def list_datasets() -> list[DatasetInfo]:
    """The shipped datasets with their task counts and languages (aliases listed too)."""
    infos: dict[str, DatasetInfo] = {}
    for name, path in _files().items():
        languages: set[str] = set()
        count = 0
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                count += 1
                languages.add(json.loads(line).get("language", "?"))
        infos[name] = DatasetInfo(name, count, tuple(sorted(languages)), path)
    for alias, target in ALIASES.items():
        if target in infos:
            info = infos[target]
            infos[alias] = DatasetInfo(alias, info.count, info.languages, info.path, target)
    return [infos[name] for name in sorted(infos)]
