"""`formalbench compare REFERENCE CANDIDATE --backend coq`: are two statements the same?
BEq (each proved from the other by a fixed tactic portfolio, and not provable alone) and
GTED (operator-tree similarity). The comparison modules load inside the command."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from formalbench.cli.main import app, user_errors
from formalbench.core.errors import InputError


def _read(path: Path, what: str) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{what} {path}: cannot read ({exc.__class__.__name__})") from None
    if not text.strip():
        raise InputError(f"{what} {path}: empty file")
    return text


@app.command("compare")
@user_errors
def compare_command(
    reference: Annotated[Path, typer.Argument(help="File with the reference theorem.")],
    candidate: Annotated[Path, typer.Argument(help="File with the candidate theorem.")],
    backend: Annotated[str, typer.Option(help="coq (lean: not yet).")] = "coq",
    model: Annotated[
        str | None, typer.Option(help="Model for BEq tier 2 (not yet: tier 1 only).")
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds for the proof assistant.")] = 120.0,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """BEq and GTED of a candidate statement against a reference."""
    from formalbench.comparison.compare import compare

    if model is not None:
        raise InputError("--model: BEq with a model (tier 2) is not built yet")
    out = compare(_read(reference, "reference"), _read(candidate, "candidate"), backend, timeout)
    if json_out:
        sys.stdout.write(json.dumps(out) + "\n")
        return
    verdict = "equivalent (BEq)" if out["beq"] else "not shown equivalent"
    sys.stdout.write(
        f"{verdict}: forward {out['forward']}, backward {out['backward']}, "
        f"GTED {out['gted']:.3f}, compiled {out['compiled']}\n"
    )
