"""Library context ranked by embeddings instead of BM25 (`--retriever embed`).

The entries are the BM25 index's (every declaration with its doc comment and module); each
is embedded once by the embedding model and the unit-length vectors are kept with numpy in
the retrieval cache, in a folder keyed by the library files (as BM25's) and by the model and
endpoint that made them, so a run with another model never reads vectors it cannot compare
with. A query is embedded at search time and the entries are ranked by cosine similarity;
several queries (the problems of a category) are fused by reciprocal rank, as with BM25.

Open and search are coroutines: the embeddings come from an endpoint.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from formalbench.core.records import Language
from formalbench.llm.base import ModelCallError
from formalbench.pipelines.formalize.retrieval import (
    LibraryEntry,
    default_cache_dir,
    files_key,
    fuse,
    read_entries,
    save_folder,
    scan_entries,
    source_files,
)

VECTORS = "vectors.npy"
_MAX_TEXT = 2000  # characters of an entry sent to the model (small local models stop at 512 tokens)


class Embedder(Protocol):
    """What the index needs of an embedding model (llm.embeddings.OpenAIEmbedder)."""

    @property
    def identity(self) -> str: ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class EmbeddingIndex:
    """Library entries and their unit vectors; `search` ranks by cosine similarity."""

    def __init__(
        self,
        entries: list[LibraryEntry],
        vectors: np.ndarray,
        language: Language,
        embedder: Embedder,
    ) -> None:
        self.entries = entries
        self.vectors = vectors
        self.language = language
        self.embedder = embedder

    @classmethod
    async def open(
        cls,
        roots: Sequence[Path],
        language: Language,
        embedder: Embedder,
        cache_dir: Path | None = None,
    ) -> tuple[EmbeddingIndex, bool]:
        """The index of `roots` by `embedder`; True as second value when read from the cache."""
        files = source_files(roots, language)
        model = hashlib.sha256(embedder.identity.encode()).hexdigest()[:12]
        key = f"{language.value}-{files_key(files, roots, language)}-embed-{model}"
        folder = (cache_dir or default_cache_dir()) / key
        if (folder / VECTORS).is_file():
            with contextlib.suppress(Exception):  # a damaged cache is rebuilt
                entries = read_entries(folder)
                vectors = np.load(folder / VECTORS, allow_pickle=False)
                if vectors.shape[0] == len(entries):
                    return cls(entries, vectors, language, embedder), True
        entries = scan_entries(files, roots, language)
        vectors = np.zeros((0, 0), dtype=np.float32)
        if entries:
            raw = await embedder.embed([e.document()[:_MAX_TEXT] for e in entries])
            vectors = _unit(np.asarray(raw, dtype=np.float32))

            def write(tmp: Path) -> None:
                np.save(tmp / VECTORS, vectors, allow_pickle=False)
                about = {"model": embedder.identity, "dimensions": int(vectors.shape[1])}
                (tmp / "model.json").write_text(json.dumps(about) + "\n", encoding="utf-8")

            save_folder(folder, entries, write)
        return cls(entries, vectors, language, embedder), False

    async def search(self, queries: Sequence[str], k: int) -> list[LibraryEntry]:
        """The `k` entries closest to all `queries` together (reciprocal-rank fusion)."""
        queries = [q for q in queries if q.strip()]
        if not self.entries or k <= 0 or not queries:
            return []
        found = _unit(np.asarray(await self.embedder.embed(queries), dtype=np.float32))
        if found.shape[1] != self.vectors.shape[1]:
            raise ModelCallError(
                f"{self.embedder.identity}: query vectors have {found.shape[1]} dimensions, "
                f"the index {self.vectors.shape[1]}"
            )
        depth = min(len(self.entries), max(2 * k, 10))
        scores = found @ self.vectors.T  # cosine: both sides have unit length
        rankings = []
        for row in scores:
            top = np.argpartition(-row, depth - 1)[:depth]
            rankings.append([int(i) for i in sorted(top, key=lambda i: (-row[i], i))])
        return [self.entries[i] for i in fuse(rankings, k)]


def _unit(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (a zero row stays zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)
