"""GTED over a file of statement pairs, in the format of the GTED authors' release
(`gted-minif2f.jsonl`): one JSON object a line with `name`, the two statements
(`label_statement`, `prediction_statement`) and/or their trees (`label_tree`,
`prediction_tree`), and optionally the human label `human_equivalent`.

Trees are used when given (unless text is asked for); otherwise the statements are parsed
with the Lean grammar. A statement the grammar does not cover is counted and listed, never a
crash; its pair gets no score and is left out of the agreement figures.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from formalbench.core.errors import InputError
from formalbench.metrics.agreement import best_threshold, cross_validated
from formalbench.metrics.gted import gted
from formalbench.metrics.lean_optree import LeanParseError, lean_tree
from formalbench.metrics.optree import OpTree, tree_from_json

REF_TREE, CAND_TREE = "label_tree", "prediction_tree"
REF_TEXT, CAND_TEXT = "label_statement", "prediction_statement"
LABEL = "human_equivalent"


@dataclass
class ScoredPair:
    name: str
    gted: float | None
    label: bool | None
    source: str  # "trees" or "text"
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "gted": self.gted, "source": self.source}
        if self.label is not None:
            out["human_equivalent"] = self.label
        if self.error:
            out["error"] = self.error
        return out


def read_pairs(path: Path) -> list[dict[str, Any]]:
    """The pair records of a JSONL file; a bad line is an InputError naming file and line."""
    label = f"pairs file {str(path)!r}"  # the words of cli.options.read_text
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError(f"{label}: no such file") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{label}: is not valid UTF-8 (bad byte at offset {exc.start})") from None
    except OSError as exc:
        raise InputError(f"{label}: cannot be read ({exc.strerror or exc})") from None
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise InputError(f"{path}:{number}: a pair must be a JSON object")
        has_trees = REF_TREE in record and CAND_TREE in record
        has_text = REF_TEXT in record and CAND_TEXT in record
        if not (has_trees or has_text):
            raise InputError(
                f"{path}:{number}: a pair needs {REF_TREE}/{CAND_TREE} or {REF_TEXT}/{CAND_TEXT}"
            )
        record.setdefault("name", f"line{number}")
        records.append(record)
    if not records:
        raise InputError(f"{path}: no pairs")
    return records


def _trees(record: dict[str, Any], from_text: bool) -> tuple[OpTree, OpTree, str]:
    if not from_text and REF_TREE in record and CAND_TREE in record:
        try:
            return tree_from_json(record[REF_TREE]), tree_from_json(record[CAND_TREE]), "trees"
        except ValueError as exc:
            raise LeanParseError(f"bad tree: {exc}") from None
    if REF_TEXT not in record or CAND_TEXT not in record:
        raise LeanParseError("no statements to parse")
    return lean_tree(record[REF_TEXT]), lean_tree(record[CAND_TEXT]), "text"


def score_pairs(records: Iterable[dict[str, Any]], from_text: bool = False) -> Iterator[ScoredPair]:
    """GTED of each pair; unparseable pairs come back with `gted=None` and the reason."""
    for record in records:
        label = record.get(LABEL)
        label = bool(label) if isinstance(label, bool) else None
        name = str(record.get("name"))
        try:
            ref, cand, source = _trees(record, from_text)
        except LeanParseError as exc:
            yield ScoredPair(name, None, label, "text", str(exc))
            continue
        yield ScoredPair(name, gted(ref, cand), label, source)


def summarize(pairs: list[ScoredPair], folds: int = 5, seed: int = 0) -> dict[str, Any]:
    """Counts, mean score and, where labels are present, the agreement figures: k-fold
    cross-validated (the honest figure) and the authors' in-sample threshold (optimistic)."""
    scored = [(p, p.gted) for p in pairs if p.gted is not None]
    values = [g for _, g in scored]
    summary: dict[str, Any] = {
        "pairs": len(pairs),
        "scored": len(scored),
        "unparseable": len(pairs) - len(scored),
        "mean_gted": sum(values) / len(values) if values else None,
        "above_0.9": sum(1 for g in values if g >= 0.9),
    }
    labelled = [(g, bool(p.label)) for p, g in scored if p.label is not None]
    if labelled:
        scores = [g for g, _ in labelled]
        labels = [y for _, y in labelled]
        summary["labelled"] = len(labelled)
        summary["positives"] = sum(labels)
        t, a = best_threshold(scores, labels)
        summary["in_sample"] = {"threshold": t, **a.figures()}
        if len(labelled) >= max(folds, 2):
            summary["cross_validated"] = cross_validated(scores, labels, folds, seed)
    return summary
