"""`formalbench ape ...`: APE-Bench from real commit histories (mine, apply, synthesize, eval).

Heavy modules are imported inside each command so that `formalbench --help` stays fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from formalbench.cli.main import app, user_errors
from formalbench.core.errors import InputError

ape_app = typer.Typer(
    name="ape",
    help="Proof engineering tasks mined from a library's git history (APE-Bench).",
    no_args_is_help=True,
)
app.add_typer(ape_app, name="ape")


def _read_text(path: Path, what: str) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    if b"\0" in data:
        raise InputError(f"{path}: the {what} is a binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: the {what} is not UTF-8 text") from None


@ape_app.command("apply")
@user_errors
def apply_command(
    patch: Annotated[Path, typer.Argument(help="A unified diff, search/replace blocks or a file.")],
    to: Annotated[Path, typer.Option("--to", help="The file the edit applies to.")],
    out: Annotated[Path, typer.Option("--out", help="Where to write the edited file.")],
    no_repair: Annotated[
        bool, typer.Option("--no-repair", help="Apply only hunks that match exactly.")
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the outcome as JSON.")] = False,
) -> None:
    """Apply a model's edit to FILE with DiffRepair; exit 0 applied, 1 not applied."""
    from formalbench.pipelines.ape.diffrepair import apply_answer

    answer = _read_text(patch, "patch")
    content = _read_text(to, "file to patch")
    result = apply_answer(answer, content, repair=not no_repair)
    if result.applied and result.content is not None:
        try:
            out.write_text(result.content, encoding="utf-8")
        except OSError as exc:
            raise InputError(f"{out}: cannot write the output: {exc.strerror or exc}") from None
    summary = result.summary()
    if json_out:
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    else:
        state = "applied" if result.applied else "not applied"
        typer.echo(
            f"{state}: {summary['hunks']} hunk(s), {summary['repaired_hunks']} repaired, "
            f"{summary['failed_hunks']} failed"
        )
        for reason in result.reasons:
            typer.echo(f"  {reason}")
    if not result.applied:
        raise typer.Exit(1)
