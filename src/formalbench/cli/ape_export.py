"""`formalbench ape export RUN --out DIR`: a run's validated tasks as a dataset (the work is
in `pipelines.ape.export`; `ape eval DIR` evaluates it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from formalbench.cli.ape import ape_app
from formalbench.cli.main import user_errors
from formalbench.cli.options import existing_folder


@ape_app.command("export")
@user_errors
def export_command(
    run_dir: Annotated[
        Path, typer.Argument(callback=existing_folder, help="A run folder of `ape mine`.")
    ],
    out: Annotated[Path, typer.Option("--out", help="The folder to write (made if missing).")],
    force: Annotated[
        bool, typer.Option("--force", help="Replace --out when it is not empty.")
    ] = False,
    bundle: Annotated[
        bool,
        typer.Option(
            "--bundle", help="Add the repository as repository.bundle (evaluable anywhere)."
        ),
    ] = False,
    repository: Annotated[
        str | None,
        typer.Option(
            "--repository",
            help="How the tasks name their repository, e.g. its URL [default: the path "
            "`ape mine` was given].",
        ),
    ] = None,
    unvalidated: Annotated[
        bool,
        typer.Option(
            "--unvalidated",
            help="For a run never validated: export the tasks the filters kept, marked so.",
        ),
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the manifest as JSON.")] = False,
) -> None:
    """Write the run's validated tasks (with instruction, validation, toolchain, snapshot
    ids) to DIR as tasks.jsonl and manifest.json; `ape eval DIR --run-dir R` evaluates them."""
    from formalbench.pipelines.ape.export import TASKS_FILE, export_run

    manifest = export_run(
        run_dir,
        out,
        force=force,
        bundle=bundle,
        unvalidated=unvalidated,
        repository=repository,
    )
    if json_out:
        sys.stdout.write(json.dumps(manifest, indent=2) + "\n")
        return
    counts = manifest["counts"]
    typer.echo(
        f"{counts['tasks']} task(s) of {counts['commits']} commit(s) written to "
        f"{out / TASKS_FILE} ({counts['benchmark_tasks']} with a kept instruction)"
    )
    if not manifest["validated"]:
        typer.echo("the tasks were not validated (--unvalidated)", err=True)
