"""`formalbench metrics gted PAIRS.jsonl`: GTED of statement pairs, with agreement figures
against human labels when the file carries them. The scoring modules are imported inside the
command so that `formalbench --help` does not load the parser and the distance engines."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from formalbench.cli.main import app, user_errors
from formalbench.cli.options import at_least, existing_file
from formalbench.core.errors import InputError

METRICS = ("gted",)
DEFAULT_FOLDS = 5


@app.command("metrics")
@user_errors
def metrics_command(
    metric: Annotated[str, typer.Argument(help="Which score: gted.")],
    pairs_file: Annotated[
        Path,
        typer.Argument(
            callback=existing_file,
            help="JSONL of pairs: name, label_tree/prediction_tree or "
            "label_statement/prediction_statement, optional human_equivalent.",
        ),
    ],
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    from_text: Annotated[
        bool, typer.Option("--from-text", help="Parse the statements even where trees are given.")
    ] = False,
    folds: Annotated[
        int | None,
        typer.Option(
            callback=at_least(2),
            help="Folds of the threshold cross-validation (default 5; at most the labelled pairs).",
        ),
    ] = None,
) -> None:
    """Scores over a file of records: `metrics gted PAIRS.jsonl` gives the GTED (tree edit
    distance of operator trees, 0..1) of each statement pair and a summary."""
    if metric not in METRICS:
        raise InputError(f"metrics {metric!r}: expected one of {', '.join(METRICS)}")
    from formalbench.comparison.gted_pairs import read_pairs, score_pairs, summarize

    pairs = list(score_pairs(read_pairs(pairs_file), from_text=from_text))
    labelled = sum(1 for p in pairs if p.gted is not None and p.label is not None)
    if folds is not None and labelled and folds > labelled:
        raise InputError(
            f"--folds {folds}: more folds than the {labelled} labelled, scored pairs "
            f"of {pairs_file}"
        )
    summary = summarize(pairs, folds=folds or DEFAULT_FOLDS)
    if labelled and "cross_validated" not in summary:  # a small file: say why it is missing
        summary["cross_validated_skipped"] = (
            f"{labelled} labelled, scored pairs: fewer than {DEFAULT_FOLDS} folds"
        )
    if json_out:
        out = {"pairs": [p.to_json() for p in pairs], "summary": summary}
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"GTED: {pairs_file}")
    for col in ("name", "gted", "human", "from"):
        table.add_column(col)
    for p in pairs:
        human = "" if p.label is None else ("same" if p.label else "differs")
        score = f"{p.gted:.3f}" if p.gted is not None else f"unparseable: {p.error}"
        table.add_row(p.name, score, human, p.source)
    console = Console(highlight=False)
    console.print(table)
    console.print(
        f"{summary['scored']}/{summary['pairs']} scored, {summary['unparseable']} unparseable, "
        f"mean {summary['mean_gted'] or 0:.3f}, {summary['above_0.9']} at or above 0.9"
    )
    if "cross_validated_skipped" in summary:
        console.print(f"cross_validated: not computed ({summary['cross_validated_skipped']})")
    for key in ("cross_validated", "in_sample"):
        if key in summary:
            a = summary[key]
            console.print(
                f"{key}: precision {a['precision']:.3f} recall {a['recall']:.3f} "
                f"accuracy {a['accuracy']:.3f} kappa {a['kappa']:.3f}"
            )
