"""`formalbench check CANDIDATE --against ORIGINAL`: verify one file strictly.

Exit codes: 0 the candidate passed, 1 it failed, 2 bad input (a missing, unreadable, binary,
empty or non-UTF-8 file, a directory, an unknown backend or kind, a missing toolchain, an
original with no hole): one line on stderr, never a traceback.

`--kind auto` (the default) reads the task kind off the original: one that leaves a value
definition open (`def`/`abbrev ... := sorry`, a Coq `Definition ... Admitted`) is an
evaluation task, so the construction rules (no choice, no `partial`, value filled) apply.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from formalbench.backends.registry import BACKENDS, backend_for_path, language_of, make_backend
from formalbench.checking.verifier import StrictVerifier
from formalbench.cli.main import app, user_errors
from formalbench.core.errors import InputError
from formalbench.core.records import TaskKind, Verdict


def read_source(path: str | Path, role: str) -> str:
    """The text of a source file, or an InputError naming the file and what is wrong."""
    p = Path(path)
    label = f"{role} {str(path)!r}"
    if not p.exists():
        raise InputError(f"{label}: no such file")
    if p.is_dir():
        raise InputError(f"{label}: is a directory, not a source file")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(f"{label}: cannot be read ({exc.strerror or exc})") from None
    if b"\x00" in data:
        raise InputError(f"{label}: is a binary file, not source text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{label}: is not valid UTF-8 (bad byte at offset {exc.start})") from None
    if not text.strip():
        raise InputError(f"{label}: is empty")
    return text.removeprefix("\ufeff")


def _pick_backend(backend: str | None, candidate: str, original: str) -> str:
    if backend is not None:
        language_of(backend)  # validates the name
        return backend.strip().lower()
    for path in (candidate, original):
        try:
            return backend_for_path(path)
        except InputError:
            continue
    raise InputError(
        f"cannot tell the proof assistant of {candidate!r} from its suffix (.lean or .v); "
        f"give --backend ({', '.join(BACKENDS)})"
    )


def _options(
    name: str, lean_project: str | None, kimina_url: str | None, candidate: str
) -> dict[str, Any]:
    if lean_project is not None and name != "lean":
        raise InputError("--lean-project is for --backend lean")
    if kimina_url is not None and name != "kimina":
        raise InputError("--kimina-url is for --backend kimina")
    if name == "lean" and lean_project is not None:
        project = Path(lean_project)
        if not project.is_dir():
            raise InputError(f"--lean-project {lean_project!r}: not a directory")
        return {"project_dir": project}
    if name == "lean":
        # The Lake project the candidate lives in, as `lake env lean` would use it.
        from formalbench.backends.lean.toolchain import find_project

        found = find_project(Path(candidate))
        return {"project_dir": found} if found is not None else {}
    if name == "kimina":
        if not kimina_url:
            raise InputError("--backend kimina needs --kimina-url (the server address)")
        return {"url": kimina_url}
    return {}


def _parse_kind(kind: str) -> TaskKind | None:
    """The --kind value: a TaskKind, or None for `auto` (read off the original)."""
    if kind.strip().lower() == "auto":
        return None
    try:
        return TaskKind(kind.strip().lower())
    except ValueError:
        choices = ", ".join(["auto", *(k.value for k in TaskKind)])
        raise InputError(f"--kind {kind!r} is not one of {choices}") from None


def _render(
    console: Console, verdict: Verdict, candidate: str, targets: list[str], kind: TaskKind
) -> None:
    where = verdict.backend or "static checks only"
    status = "[bold green]PASSED[/]" if verdict.passed else "[bold red]FAILED[/]"
    reasons = ", ".join(r.value for r in verdict.reasons)
    console.print(
        f"{status} {candidate} ({where}, {verdict.elapsed:.2f} s)"
        + (f": {reasons}" if reasons else "")
    )
    console.print(f"targets: {', '.join(targets) or '-'} ({kind.value} task)", markup=False)
    if verdict.findings:
        table = Table(show_header=True, header_style="bold")
        for column in ("reason", "at", "finding"):
            table.add_column(column)
        for f in verdict.findings:
            at = f"{f.line}:{f.column}" if f.line is not None else ""
            table.add_row(f.reason.value, at, Text(f.message))
        console.print(table)
    shown = [d for d in verdict.diagnostics if d.severity.value != "info"][:10]
    for d in shown:
        at = f"{d.line}:{d.column}" if d.line is not None else "-"
        first = d.message.strip().splitlines()[0] if d.message.strip() else ""
        console.print(f"  {d.severity.value} {at} {first}", markup=False)
    for target, axioms in verdict.axioms.items():
        console.print(f"  axioms of {target}: {', '.join(axioms) or 'none'}", markup=False)


@app.command("check")
@user_errors
def check(
    candidate: str = typer.Argument(..., help="The file to verify (a filled-in proof)."),
    against: str = typer.Option(..., "--against", help="The original task file with its holes."),
    backend: str | None = typer.Option(
        None, "--backend", help="coq, lean or kimina (default: from the suffix)."
    ),
    static_only: bool = typer.Option(
        False, "--static-only", help="Text checks only; no assistant."
    ),
    timeout: float | None = typer.Option(None, "--timeout", help="Seconds for the assistant."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object."),
    kind: str = typer.Option(
        "auto",
        "--kind",
        help="Task kind: auto (evaluation when the original leaves a def/abbrev value open, "
        "else proof), " + ", ".join(k.value for k in TaskKind),
    ),
    lean_project: str | None = typer.Option(
        None, "--lean-project", help="Lake project for --backend lean."
    ),
    kimina_url: str | None = typer.Option(
        None, "--kimina-url", help="Server for --backend kimina."
    ),
) -> None:
    """Verify CANDIDATE strictly against ORIGINAL: exit 0 if it passes, 1 if not, 2 on bad input."""
    task_kind = _parse_kind(kind)
    if timeout is not None and not timeout > 0:
        raise InputError(f"--timeout {timeout}: must be a positive number of seconds")
    cand_text = read_source(candidate, "candidate")
    orig_text = read_source(against, "original")
    name = _pick_backend(backend, candidate, against)
    options = _options(name, lean_project, kimina_url, candidate)
    checker = None if static_only else make_backend(name, **options)
    try:
        verifier = StrictVerifier(checker, language=language_of(name))
        try:
            targets = verifier.targets(orig_text)
        except InputError as exc:
            raise InputError(f"original {against!r}: {exc}") from None
        if task_kind is None:
            task_kind = verifier.task_kind(orig_text)
        verdict = verifier.verify(orig_text, cand_text, kind=task_kind, timeout=timeout)
    finally:
        if checker is not None:
            checker.close()
    if json_out:
        payload = {
            "candidate": candidate,
            "original": against,
            "targets": targets,
            "kind": task_kind.value,
            **verdict.model_dump(mode="json"),
        }
        typer.echo(json.dumps(payload, ensure_ascii=False))
    else:
        _render(Console(highlight=False, soft_wrap=True), verdict, candidate, targets, task_kind)
    raise typer.Exit(0 if verdict.passed else 1)
