"""`formalbench compare REFERENCE CANDIDATE --backend coq|lean [--model SPEC]`: are two
statements the same? BEq (each proved from the other by a fixed tactic portfolio, then with
`--model` by sampled proofs under the strict verifier, and not provable alone) and GTED
(operator-tree similarity). The comparison modules load inside the command."""

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
    backend: Annotated[str, typer.Option(help="coq or lean.")] = "coq",
    model: Annotated[
        str | None,
        typer.Option(help="Model spec for BEq tier 2 (proofs of the directions left open)."),
    ] = None,
    samples: Annotated[int, typer.Option(help="Tier 2: samples per direction.")] = 4,
    lean_project: Annotated[
        Path | None, typer.Option(help="Lake project for --backend lean (default: found).")
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds for the proof assistant.")] = 120.0,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """BEq and GTED of a candidate statement against a reference."""
    from formalbench.comparison.compare import compare
    from formalbench.llm.registry import make_model

    if lean_project is not None and not lean_project.is_dir():
        raise InputError(f"--lean-project {lean_project}: not a directory")
    out = compare(
        _read(reference, "reference"),
        _read(candidate, "candidate"),
        backend,
        timeout,
        project_dir=lean_project,
        model=make_model(model) if model is not None else None,
        samples=samples,
    )
    if json_out:
        sys.stdout.write(json.dumps(out) + "\n")
        return
    sys.stdout.write(human(out))


def _yes(value: object) -> str:
    return "yes" if value else "no"


def human(out: dict) -> str:
    """The comparison as a person reads it: the verdict and why, then per direction what
    proved it (with the other statement, or alone), GTED (or why there is none)."""
    verdict = "undecided" if out.get("undecided") else _yes(out["beq"])
    lines = [f"equivalent (BEq): {verdict}: {out['reason'].removeprefix('undecided: ')}"]
    if out["compiled"]:
        for key, goal, given in (
            ("forward", "candidate", "reference"),
            ("backward", "reference", "candidate"),
        ):
            tactic, alone = out["tactics"].get(key), out.get("alone", {}).get(key)
            said = f"proved by `{tactic}`" if tactic else "not proved"
            if out["trivial"][key]:
                said += ", but the goal is provable alone" + (f" (by `{alone}`)" if alone else "")
            lines.append(f"  {key:<8} ({given} ⊢ {goal}): {said}")
    if out.get("gted") is not None:
        lines.append(f"GTED: {out['gted']:.3f}")
    else:
        lines.append(f"GTED: unavailable ({out.get('gted_error') or 'no tree'})")
    lines.append(f"compiled: {_yes(out['compiled'])}; decided by: {out['tier']}")
    lines += [f"note: {n}" for n in out.get("notes", [])]
    return "\n".join(lines) + "\n"
