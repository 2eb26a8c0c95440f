"""Library context for translation: BM25 over the declarations the target assistant has.

IndiMathBench gave its models a per-category digest of the library so that they stop
inventing names and imports. Here that digest is retrieved offline: every declaration of
the library sources (Lean: the user's Lake project with `.lake/packages`; Coq: the standard
library and user-contrib under `coqc -where`) with its doc comment is one document of a
BM25 index (bm25s). Identifiers are split into words (`Nat.Prime.two_le` -> nat prime two
le) so that informal words meet names.

Each entry keeps the module its file is imported as (`modules`), shown with it in the
context so that the translator also knows what to `Require` or `import`.

Building the index reads thousands of files (the Coq library takes seconds, Mathlib
minutes), so it is saved on disk under a key made of the roots and every file's size and
modification time: the first run builds it, later runs and other run directories load it,
and an edited library gets a new one. `embed_index` ranks the same entries by embeddings.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from formalbench.core.config import cache_path
from formalbench.core.records import Language
from formalbench.pipelines.formalize.modules import ModuleNamer
from formalbench.solvers.search import default_roots, scan

FORMAT = 2  # 2: entries carry their module
_FUSION = 60  # the usual constant of reciprocal-rank fusion
_SUFFIX = {Language.coq: ".v", Language.lean: ".lean"}
_DOC = {Language.coq: ("(**", "*)"), Language.lean: ("/--", "-/")}
_WHERE = {Language.coq: "(* in {} *)", Language.lean: "-- in {}"}
_MAX_DOC = 300
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# Words of problem statements that say nothing about which library facts are needed.
# fmt: off
_PROSE = frozenset([
    "prove", "show", "find", "determine", "let", "suppose", "given", "holds", "hold",
    "number", "numbers", "problem", "answer", "compute", "value", "values", "exactly",
    "following", "least", "most",
])
# fmt: on
# Informal words and the words library names use for the same thing (names rarely say
# "divisible" or "remainder"; they say `divide` and `mod`).
_NAMES = {
    "divisible": "divide divides dvd",
    "divides": "divide dvd",
    "divisor": "divide dvd gcd",
    "remainder": "mod modulo",
    "modulo": "mod",
    "gcd": "gcd",
    "multiple": "lcm mul",
    "product": "mul prod",
    "sum": "add sum",
    "square": "sqr sqrt pow",
    "root": "sqrt",
    "power": "pow",
    "absolute": "abs",
    "integer": "int",
    "integers": "int",
    "natural": "nat",
    "rational": "rat",
    "inequality": "le lt",
    "increasing": "mono lt",
    "sequence": "seq",
    "digits": "digits",
    "factorial": "fact factorial",
    "binomial": "choose binomial",
    "subsets": "powerset subset card",
    "elements": "card",
}


@dataclass(frozen=True)
class LibraryEntry:
    name: str
    kind: str
    statement: str
    doc: str
    path: str
    line: int
    module: str = ""  # the logical name its file is imported by, e.g. Coq.ZArith.BinInt

    def render(self, language: Language) -> str:
        text = f"{self.kind} {self.name} {self.statement}".strip()
        if self.doc:
            opener, closer = _DOC[language]
            text = f"{opener} {self.doc} {closer}\n{text}"
        if self.module:
            text = f"{_WHERE[language].format(self.module)}\n{text}"
        return text

    def document(self) -> str:
        """What an embedding model reads of this entry."""
        return f"{self.kind} {self.name} {self.statement} {self.doc}".strip()


def default_cache_dir() -> Path:
    """$FORMALBENCH_CACHE/retrieval, else $XDG_CACHE_HOME (or ~/.cache)/formalbench/retrieval."""
    return cache_path("retrieval")


def library_roots(language: Language, library: Sequence[str], project: str | None) -> list[Path]:
    """Where to read the library: `library` when given, else the assistant's own."""
    if library:
        return [Path(p).expanduser() for p in library]
    return default_roots(language, project)


def words_of(text: str) -> str:
    """Identifiers split into their words, the rest left as it is."""
    return _CAMEL.sub(" ", re.sub(r"[._'`]", " ", text))


class LibraryIndex:
    """A BM25 index of a library's declarations, loaded from or saved to `cache_dir`."""

    def __init__(self, entries: list[LibraryEntry], retriever: object, language: Language):
        self.entries = entries
        self.language = language
        self._retriever = retriever
        self._vocab: dict[str, int] = getattr(retriever, "vocab_dict", {}) or {}

    @classmethod
    def open(
        cls, roots: Sequence[Path], language: Language, cache_dir: Path | None = None
    ) -> tuple[LibraryIndex, bool]:
        """The index of `roots`; True as second value when it came from the disk cache."""
        import bm25s

        files = source_files(roots, language)
        key = files_key(files, roots, language)
        folder = (cache_dir or default_cache_dir()) / f"{language.value}-{key}"
        if (folder / "entries.jsonl").is_file():
            with contextlib.suppress(Exception):  # a damaged cache is rebuilt
                retriever = bm25s.BM25.load(str(folder), show_progress=False)
                return cls(read_entries(folder), retriever, language), True
        entries = scan_entries(files, roots, language)
        retriever = bm25s.BM25()
        if entries:
            texts = [f"{words_of(e.name)} {e.name} {e.statement} {e.doc}" for e in entries]
            tokens = bm25s.tokenize(texts, stopwords="en", show_progress=False)
            retriever.index(tokens, show_progress=False)
            save_folder(folder, entries, lambda tmp: retriever.save(str(tmp), show_progress=False))
        return cls(entries, retriever, language), False

    def search(self, queries: Sequence[str], k: int) -> list[LibraryEntry]:
        """The `k` entries that best match all `queries` together (reciprocal-rank fusion)."""
        import bm25s

        if not self.entries or k <= 0:
            return []
        depth = min(len(self.entries), max(2 * k, 10))
        rankings: list[list[int]] = []
        for query in queries:
            tokens = bm25s.tokenize(
                [words_of(query)], stopwords="en", return_ids=False, show_progress=False
            )[0]
            tokens += [x for t in tokens for x in _NAMES.get(t, "").split()]
            tokens = [t for t in tokens if t in self._vocab and t not in _PROSE]
            if not tokens:
                continue
            docs, scores = self._retriever.retrieve(  # type: ignore[attr-defined]
                [tokens], k=depth, show_progress=False
            )
            rankings.append(
                [int(d) for d, score in zip(docs[0], scores[0], strict=True) if score > 0]
            )
        return [self.entries[i] for i in fuse(rankings, k)]


def fuse(rankings: Iterable[Sequence[int]], k: int) -> list[int]:
    """The `k` best documents over several rankings (reciprocal-rank fusion): a declaration
    that several problems of a category need comes before one that a single problem wants."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking):
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (_FUSION + rank)
    return sorted(fused, key=lambda i: (-fused[i], i))[:k]


def source_files(roots: Sequence[Path], language: Language) -> list[Path]:
    suffix = _SUFFIX[language]
    files: list[Path] = []
    for root in roots:
        if root.is_file():
            files.append(root)
        elif root.is_dir():
            files.extend(p for p in root.rglob(f"*{suffix}") if p.is_file())
    return sorted(set(files))


def files_key(files: list[Path], roots: Sequence[Path], language: Language) -> str:
    """Changes when a file is added, removed or edited (size and modification time), and
    with the roots (a module named from its root depends on it)."""
    digest = hashlib.sha256(f"{FORMAT}:{language.value}".encode())
    digest.update("\t".join(str(r.resolve()) for r in roots).encode())
    for path in files:
        with contextlib.suppress(OSError):
            st = path.stat()
            digest.update(f"\n{path}\t{st.st_size}\t{st.st_mtime_ns}".encode())
    return digest.hexdigest()[:20]


def scan_entries(
    files: list[Path], roots: Sequence[Path], language: Language
) -> list[LibraryEntry]:
    """Every declaration of `files`, with its doc comment and module."""
    namer = ModuleNamer(roots, language)
    entries: list[LibraryEntry] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        starts = _line_starts(text)
        module = namer.name(path)
        for decl in scan(text, language, str(path)):
            offset = starts[decl.line - 1] if decl.line - 1 < len(starts) else len(text)
            doc = _doc_before(text, offset, language)
            entry = LibraryEntry(
                decl.name, decl.kind, decl.statement, doc, str(path), decl.line, module
            )
            entries.append(entry)
    return entries


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(m.end() for m in re.finditer("\n", text))
    return starts


def _doc_before(text: str, offset: int, language: Language) -> str:
    """The doc comment that ends right before `offset` (only blanks between), collapsed."""
    opener, closer = _DOC[language]
    before = text[:offset].rstrip()
    if not before.endswith(closer):
        return ""
    start = before.rfind(opener)
    if start < 0 or closer in before[start + len(opener) : -len(closer)]:
        return ""
    doc = " ".join(before[start + len(opener) : -len(closer)].split())
    return doc[:_MAX_DOC]


def read_entries(folder: Path) -> list[LibraryEntry]:
    lines = (folder / "entries.jsonl").read_text(encoding="utf-8").splitlines()
    return [LibraryEntry(**json.loads(x)) for x in lines]


def save_folder(folder: Path, entries: list[LibraryEntry], write: Callable[[Path], object]) -> None:
    """Write an index (`write` fills a folder, then the entries are added) next to its final
    place, then move it there: a concurrent run sees a whole index or none."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".building-", dir=folder.parent))
    try:
        write(tmp)
        body = "".join(json.dumps(asdict(e), ensure_ascii=False) + "\n" for e in entries)
        (tmp / "entries.jsonl").write_text(body, encoding="utf-8")
        with contextlib.suppress(OSError):  # another run saved the same index first
            tmp.rename(folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
