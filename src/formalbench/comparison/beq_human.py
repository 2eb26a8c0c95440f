"""The BEq paper's 200 expert-labelled ProofNet pairs (rethinking_autoformalization,
`data/`) as pair records of the GTED file format: reference statement from
`proofnet/benchmark.jsonl`, candidate and label from `human_equivalence/*/`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from formalbench.core.errors import InputError


def beq_human_pairs(folder: Path) -> list[dict[str, Any]]:
    """One record per labelled candidate: name, label_statement, label_header (the
    reference's imports and `open`s, which the candidates assume too), prediction_statement,
    human_equivalent, generator."""
    bench = folder / "proofnet" / "benchmark.jsonl"
    try:
        refs, headers = {}, {}
        for line in bench.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                refs[row["full_name"]] = row["formal_stmt"]
                headers[row["full_name"]] = row.get("header", "")
        out = []
        for gen in sorted((folder / "human_equivalence").iterdir()):
            cands = json.loads((gen / "autoformalization.json").read_text(encoding="utf-8"))
            labels = json.loads((gen / "labels.json").read_text(encoding="utf-8"))
            for name, tries in cands.items():
                for attempt in tries:
                    stmt = attempt["formal_stmt_pred"]
                    if stmt in labels and name in refs:
                        out.append(
                            {
                                "name": f"{gen.name}/{name}",
                                "label_statement": refs[name],
                                "label_header": headers[name],
                                "prediction_statement": stmt,
                                "human_equivalent": bool(labels[stmt]),
                                "generator": gen.name,
                            }
                        )
    except (OSError, KeyError, ValueError) as exc:
        raise InputError(f"{folder}: not the BEq human-equivalence layout ({exc})") from None
    return out
