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
from formalbench.cli.options import (
    RecordOption,
    ToolchainOption,
    at_least,
    existing_file,
    existing_folder,
    read_text,
    seconds,
)
from formalbench.core.errors import InputError


@app.command("compare")
@user_errors
def compare_command(
    reference: Annotated[
        Path, typer.Argument(callback=existing_file, help="File with the reference theorem.")
    ],
    candidate: Annotated[
        Path, typer.Argument(callback=existing_file, help="File with the candidate theorem.")
    ],
    backend: Annotated[
        str | None,
        typer.Option(help="coq or lean (default: from the files' suffix, .v or .lean)."),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(help="Model spec for BEq tier 2 (proofs of the directions left open)."),
    ] = None,
    record: RecordOption = None,
    samples: Annotated[
        int, typer.Option(callback=at_least(1), help="Tier 2: samples per direction.")
    ] = 4,
    lean_project: Annotated[
        Path | None,
        typer.Option(
            callback=existing_folder, help="Lake project for --backend lean (default: found)."
        ),
    ] = None,
    coq_project: Annotated[
        Path | None,
        typer.Option(
            callback=existing_folder,
            help="Coq project (folder of a _CoqProject) for --backend coq; read-only.",
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option(callback=seconds, help="Seconds for the proof assistant.")
    ] = 120.0,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    toolchain: ToolchainOption = None,
) -> None:
    """BEq and GTED of a candidate statement against a reference.

    Exit codes: 0 when the comparison ran, whatever its verdict (equivalent, not equivalent
    or undecided: the first line, or `beq` and `undecided` with --json); 2 on bad input.
    Unlike `check` (0 passed, 1 failed, 2 bad input), not equivalent is not a failure of
    the command: read the verdict, not the exit code."""
    from formalbench.comparison.compare import compare
    from formalbench.llm.registry import make_model
    from formalbench.pipelines.pairs import pick_backend

    # the one rule of every command (docs/decisions.md): formal input names its assistant
    backend = pick_backend(backend, str(reference), str(candidate))

    if coq_project is not None and backend != "coq":
        raise InputError("--coq-project is for --backend coq")
    out = compare(
        read_text(reference, "reference"),
        read_text(candidate, "candidate"),
        backend,
        timeout,
        project_dir=coq_project if backend == "coq" else lean_project,
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
