"""Step 2: what a translator sees besides the problem: library context and few-shot pairs.

Context is per category, as in IndiMathBench: one text shared by the problems of a
category, retrieved once (from the library index, BM25 or embeddings, queried with the
category's problems) and stored in the run, or given by the user with `--context FILE`
(plain text for every category, or a JSON object mapping categories to text, `*` for the
rest). Each retrieved entry names the module it comes from.

Few-shot pairs are the package's own informal -> formal examples, chosen for the problem:
same category first, a "find" example for a problem with a given answer, then the rest in
file order (FMC always showed an algebra and a number-theory pair).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from formalbench.core.errors import InputError
from formalbench.core.formalization import Problem
from formalbench.core.records import Language
from formalbench.pipelines.formalize.config import FormalizeConfig, category_key
from formalbench.pipelines.formalize.embed_index import Embedder, EmbeddingIndex
from formalbench.pipelines.formalize.problems import EXAMPLES
from formalbench.pipelines.formalize.retrieval import LibraryEntry, LibraryIndex, library_roots
from formalbench.store.formalize import FormalizeStore

QUERY_PROBLEMS = 20  # problems of a category that query the index


@dataclass(frozen=True)
class FewShot:
    id: str
    category: str
    informal: str
    formal: str
    solution: str | None = None


def read_context_file(path: str) -> dict[str, str]:
    """The `--context FILE`: {category key or '*': text}."""
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--context {path}: cannot read ({exc})") from None
    if not text.strip():
        raise InputError(f"--context {path}: the file is empty")
    if file.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"--context {path}: not valid JSON ({exc.msg}, line {exc.lineno})"
            ) from None
        if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
            raise InputError(f"--context {path}: expected an object of category -> text")
        return {("*" if k == "*" else category_key(k)): v for k, v in data.items()}
    return {"*": text}


async def prepare_contexts(
    store: FormalizeStore,
    config: FormalizeConfig,
    language: Language,
    problems: list[Problem],
    embedder: Embedder | None = None,
) -> list[str]:
    """Make sure every category of `problems` has its stored context; returns notes.
    `embedder` is needed (and only used) when `config.retriever` is "embed"."""
    categories: dict[str, list[Problem]] = {}
    for problem in problems:
        categories.setdefault(problem.category or "other", []).append(problem)
    todo = [c for c in categories if store.category_context(c) is None]
    if not todo:
        return []
    if config.context_file:
        given = read_context_file(config.context_file)
        for category in todo:
            text = given.get(category_key(category), given.get("*", ""))
            store.put_category_context(category, {"source": "file", "text": text, "items": []})
        return []
    roots = library_roots(language, config.library, config.backend_options.get("project_dir"))
    if not roots or config.context_items == 0:
        for category in todo:
            store.put_category_context(category, {"source": "none", "text": "", "items": []})
        return [] if config.context_items == 0 else [_no_library(language)]
    cache = Path(config.index_cache) if config.index_cache else None
    embedded: EmbeddingIndex | None = None
    if config.retriever == "embed":
        if embedder is None:
            raise InputError('retriever "embed": no embedding model was given (--embed-model)')
        embedded, _ = await EmbeddingIndex.open(roots, language, embedder, cache)
        entries = embedded.entries
    else:
        index, _ = LibraryIndex.open(roots, language, cache)
        entries = index.entries
    notes = [] if entries else [f"no declarations found under {', '.join(map(str, roots))}"]
    for category in todo:
        # the problems themselves query the index (a category's name alone matches little
        # more than the word, e.g. every `number` conversion for "number theory")
        queries = [p.informal for p in categories[category][:QUERY_PROBLEMS]]
        found: list[LibraryEntry] = (
            await embedded.search(queries, config.context_items)
            if embedded is not None
            else index.search(queries, config.context_items)
        )
        text = _fit("\n\n".join(e.render(language) for e in found), config.context_chars)
        value = {
            "source": "retrieval",
            "retriever": config.retriever,
            "text": text,
            "items": [e.name for e in found],
        }
        store.put_category_context(category, value)
    return notes


def _no_library(language: Language) -> str:
    if language == Language.lean:
        return "no library context: pass --lean-project DIR (a Lake project) or --library DIR"
    return "no library context: coqc -where gave no library sources; pass --library DIR"


def _fit(text: str, limit: int) -> str:
    """Whole entries up to `limit` characters."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n\n", 0, limit)
    return text[: cut if cut > 0 else limit]


def context_text(store: FormalizeStore, category: str) -> str:
    value: Any = store.category_context(category) or {}
    return str(value.get("text", ""))


def load_fewshot(language: Language, directory: Path = EXAMPLES) -> list[FewShot]:
    path = directory / f"fewshot_{language.value}.jsonl"
    if not path.is_file():
        return []
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            data = json.loads(line)
            pairs.append(FewShot(**data))
    return pairs


def choose_fewshot(pairs: list[FewShot], problem: Problem, count: int) -> list[FewShot]:
    """Up to `count` pairs: the problem's category first, then kind, then file order."""
    wanted = category_key(problem.category or "")
    find = problem.solution is not None

    def score(item: tuple[int, FewShot]) -> tuple[int, int, int]:
        position, pair = item
        return (
            0 if category_key(pair.category) == wanted else 1,
            0 if (pair.solution is not None) == find else 1,
            position,
        )

    ranked = sorted(enumerate(pairs), key=score)
    return [pair for _, pair in ranked[:count]]
