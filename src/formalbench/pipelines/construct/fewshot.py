"""The few-shot helper of Algorithm 2: examples chosen by block kind, and by diagnostics.

An example is a block (kind, informal content) with its formal code; a repair example also
has the broken code and the message the assistant gave for it. A translation is shown the
examples of the block's kind whose content shares the most words with the block; a repair is
shown the repair examples whose message shares the most words with the current diagnostics
(at least a fifth of them; then the kind decides ties). The package ships a small Coq set
written and compiled for this project (`datasets/examples/construct/fewshot-coq.jsonl`);
`FormalStageConfig.fewshot_file` replaces it (a JSONL of the same records), and a language
with neither has no examples.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from pydantic import ValidationError

from formalbench.core.errors import InputError
from formalbench.core.records import Language, Record
from formalbench.pipelines.construct.block_records import Block, BlockKind

_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9']+")
MIN_OVERLAP = 0.2  # share of words a repair example's message must share with the errors


class FewShotExample(Record):
    language: Language
    kind: BlockKind
    content: str
    code: str
    broken: str | None = None  # repair examples: the code before the fix
    error: str | None = None  # repair examples: what the assistant said about `broken`

    @property
    def is_repair(self) -> bool:
        return self.broken is not None and self.error is not None


def shipped_file(language: Language) -> Path:
    root = Path(str(resources.files("formalbench"))) / "datasets" / "examples" / "construct"
    return root / f"fewshot-{language.value}.jsonl"


def load_examples(path: str | Path | None, language: Language) -> list[FewShotExample]:
    """The examples for `language` from `path` (default: the shipped set, if any)."""
    source = Path(path) if path is not None else shipped_file(language)
    if path is None and not source.is_file():
        return []
    try:
        lines = source.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"few-shot file {source}: unreadable ({exc})") from None
    examples: list[FewShotExample] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            example = FewShotExample.model_validate_json(line)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "record"
            raise InputError(f"few-shot file {source}:{number}: {where}: {first['msg']}") from None
        if example.language == language:
            examples.append(example)
    return examples


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def _overlap(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def for_translation(
    examples: list[FewShotExample], block: Block, count: int
) -> list[FewShotExample]:
    """Up to `count` translation examples of the block's kind, closest content first."""
    words = _words(block.content)
    pool = [e for e in examples if e.kind == block.kind and not e.is_repair]
    pool.sort(key=lambda e: -_overlap(words, _words(e.content)))
    return pool[:count]


def for_repair(
    examples: list[FewShotExample], block: Block, diagnostics: str, count: int
) -> list[FewShotExample]:
    """Up to `count` repair examples, closest error message first, then the block's kind."""
    words = _words(diagnostics)
    pool = [e for e in examples if e.is_repair]
    pool.sort(key=lambda e: (-_overlap(words, _words(e.error or "")), e.kind != block.kind))
    return [e for e in pool if _overlap(words, _words(e.error or "")) >= MIN_OVERLAP][:count]
