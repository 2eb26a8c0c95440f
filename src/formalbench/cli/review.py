"""`formalbench review DIR`: the web dashboard to accept or reject formalize candidates, or
the exercises of a construct run (a folder holding `construct.sqlite`).

`--export FILE` writes the accepted problems as a task dataset (JSONL) and exits instead of
serving. A run folder is data: re-checks take the backend's name and time limit from it, and
nothing else; a project folder or toolchain is the reviewer's (`--project`, `--toolchain`). Bad input (not a run directory, a busy port, another interface without a token)
is one line on stderr and exit code 2.
"""

from __future__ import annotations

import sys

import typer

from formalbench.cli.main import app, user_errors
from formalbench.cli.options import ToolchainOption
from formalbench.cli.options import port as check_port


@app.command("review")
@user_errors
def review(
    run_dir: str = typer.Argument(
        ..., help="The run directory of `formalbench formalize` or `formalbench construct`."
    ),
    port: int = typer.Option(
        8765, "--port", callback=check_port, help="Port to listen on (0: a free one)."
    ),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Interface; anything but loopback needs --token."
    ),
    token: str | None = typer.Option(
        None,
        "--token",
        envvar="FORMALBENCH_REVIEW_TOKEN",
        help="Access token required on every request (cookie, header or ?token=).",
    ),
    reviewer: str | None = typer.Option(
        None, "--reviewer", help="Your name, filled in on every decision form."
    ),
    export: str | None = typer.Option(
        None, "--export", help="Write the accepted problems as task JSONL to FILE and exit."
    ),
    project: str | None = typer.Option(
        None,
        "--project",
        help="Re-checks run in this project: a Coq project (its _CoqProject) or a Lean "
        "project. Never read from the run folder.",
    ),
    toolchain: ToolchainOption = None,
) -> None:
    """Review formalize candidates or construct exercises in the browser: edit, re-check,
    accept or reject."""
    if export is not None:
        from formalbench.dashboard.app import is_construct_run, open_run

        if is_construct_run(run_dir):
            _export_construct(run_dir, export)
            return
        from formalbench.dashboard.export import accepted_tasks, write_jsonl

        formalize, store = open_run(run_dir)
        skipped: list[str] = []
        try:
            count = write_jsonl(accepted_tasks(formalize, store, skipped), export)
        finally:
            formalize.close()
            store.close()
        _wrote(count, export, skipped)
        return
    from formalbench.dashboard.server import serve

    def announce(line: str) -> None:
        print(line, flush=True)

    options: dict[str, str] = {}
    if project is not None:
        options["project_dir"] = project
    if toolchain is not None:
        options["toolchain"] = toolchain
    serve(
        run_dir,
        host=host,
        port=port,
        token=token,
        reviewer=reviewer,
        announce=announce,
        check_options=options,
    )
    sys.stdout.flush()


def _export_construct(run_dir: str, export: str) -> None:
    from formalbench.dashboard.construct_app import open_construct
    from formalbench.dashboard.construct_export import accepted_tasks
    from formalbench.dashboard.export import write_jsonl

    run, store = open_construct(run_dir)
    skipped: list[str] = []
    try:
        count = write_jsonl(accepted_tasks(run, store, skipped), export)
    finally:
        run.close()
        store.close()
    _wrote(count, export, skipped)


def _wrote(count: int, export: str, skipped: list[str]) -> None:
    """The export's summary line, and one warning line per accepted text left out."""
    typer.echo(f"wrote {count} accepted task{'' if count == 1 else 's'} to {export}")
    for reason in skipped:
        typer.echo(f"warning: {reason}", err=True)
