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
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from formalbench.backends.coq_known_bugs import known_bugs_line
from formalbench.backends.registry import language_of, make_backend
from formalbench.checking.verifier import StrictVerifier
from formalbench.cli.main import app, user_errors
from formalbench.cli.options import (
    AllowAxiomOption,
    AllowAxiomsOption,
    ToolchainOption,
    at_least,
    axiom_policy,
    seconds,
)
from formalbench.cli.verdict_cache import open_cache
from formalbench.core.config import VerifierPolicy
from formalbench.core.errors import InputError
from formalbench.core.records import TaskKind, Verdict
from formalbench.pipelines.pairs import parse_kind, pick_backend, read_source

__all__ = ["check", "read_source"]


def _parse_kind(kind: str) -> TaskKind | None:
    """The --kind value: a TaskKind, or None for `auto` (read off the original)."""
    try:
        return parse_kind(kind)
    except InputError as exc:
        raise InputError(f"--{exc}") from None


def _options(
    name: str,
    lean_project: str | None,
    kimina_url: str | None,
    candidate: str,
    coq_project: str | None = None,
) -> dict[str, Any]:
    if lean_project is not None and name != "lean":
        raise InputError("--lean-project is for --backend lean")
    if coq_project is not None:
        if name != "coq":
            raise InputError("--coq-project is for --backend coq")
        return {"project_dir": coq_project}  # read (and refused if malformed) by the backend
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


def _paint(text: str, code: str, colour: bool) -> str:
    """`text` in an ANSI style (`code`, e.g. "1;32" bold green) when colour is on."""
    return f"\x1b[{code}m{text}\x1b[0m" if colour else text


def _colour_wanted() -> bool:
    """Colour on a terminal only, and never under NO_COLOR or TERM=dumb (the conventions
    rich follows, kept so that the output looks as it did)."""
    return (
        sys.stdout.isatty()
        and "NO_COLOR" not in os.environ
        and os.environ.get("TERM", "") != "dumb"
    )


def _render(verdict: Verdict, candidate: str, targets: list[str], kind: TaskKind) -> None:
    """The human form. Plain text with at most two ANSI colours, not rich: rich's console
    costs ~0.05 s of start-up, a sixth of a whole static check (bench/bench_startup.py)."""
    colour = _colour_wanted()
    where = verdict.backend or "static checks only"
    status = (
        _paint("PASSED", "1;32", colour) if verdict.passed else _paint("FAILED", "1;31", colour)
    )
    reasons = ", ".join(r.value for r in verdict.reasons)
    lines = [
        f"{status} {candidate} ({where}, {verdict.elapsed:.2f} s)"
        + (f": {reasons}" if reasons else ""),
        f"targets: {', '.join(targets) or '-'} ({kind.value} task)",
    ]
    if verdict.findings:
        rows = [
            (f.reason.value, f"{f.line}:{f.column}" if f.line is not None else "", f.message)
            for f in verdict.findings
        ]
        lines.extend(_table(("reason", "at", "finding"), rows, colour))
    shown = [d for d in verdict.diagnostics if d.severity.value != "info"][:10]
    for d in shown:
        at = f"{d.line}:{d.column}" if d.line is not None else "-"
        first = d.message.strip().splitlines()[0] if d.message.strip() else ""
        lines.append(f"  {d.severity.value} {at} {first}")
    for target, axioms in verdict.axioms.items():
        lines.append(f"  axioms of {target}: {', '.join(axioms) or 'none'}")
    if verdict.known_unsound:
        lines.append(f"  {known_bugs_line(verdict.known_unsound)}")
    sys.stdout.write("\n".join(lines) + "\n")


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]], colour: bool) -> list[str]:
    """Left-aligned columns under a bold header and a rule; the last column is not padded
    (a finding's message may be long or span lines: its further lines are indented)."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]

    def line(cells: tuple[str, ...]) -> list[str]:
        lead = "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=False))
        first, *more = cells[-1].splitlines() or [""]
        pad = " " * (len(lead) + 2)
        return [f"  {lead}  {first}".rstrip(), *(f"  {pad}{m}".rstrip() for m in more)]

    head = line(header)
    out = [_paint(head[0], "1", colour)]
    out.append("  " + "-" * (len(head[0]) - 2))
    for row in rows:
        out.extend(line(row))
    return out


@app.command("check")
@user_errors
def check(
    ctx: typer.Context,
    candidate: str | None = typer.Argument(
        None, help="The file to verify (a filled-in proof); not with --pairs."
    ),
    against: str | None = typer.Option(
        None, "--against", help="The original task file with its holes."
    ),
    backend: str | None = typer.Option(
        None, "--backend", help="coq, lean or kimina (default: from the suffix)."
    ),
    static_only: bool = typer.Option(
        False, "--static-only", help="Text checks only; no assistant."
    ),
    timeout: float | None = typer.Option(
        None, "--timeout", callback=seconds, help="Seconds for the assistant (default: 60)."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object (per pair)."),
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
    coq_project: str | None = typer.Option(
        None,
        "--coq-project",
        help="Coq project folder (its _CoqProject's -R/-Q/-I/-arg) whose compiled "
        "libraries the files Require; used read-only, never built.",
    ),
    pairs: str | None = typer.Option(
        None,
        "--pairs",
        help='A JSON Lines file, one pair a line: {"id", "candidate", "original"} as '
        'paths relative to the file (or "candidate_text"/"original_text" inline), '
        'optional "kind". One result line per pair, in order; a bad line gets an error '
        "result. Exit 0 when every pair passed, else 1. See docs/check-pairs.md.",
    ),
    workers: int | None = typer.Option(
        None,
        "--workers",
        callback=at_least(1),
        help="Checks at once with --pairs (default: the CPU count).",
    ),
    replay: bool = typer.Option(
        True,
        "--replay/--no-replay",
        help="Coq: confirm a pass with coqchk of the same Coq, from the library the verifier "
        "compiled (default on).",
    ),
    cache: str | None = typer.Option(
        None,
        "--cache",
        help="A verdict cache (SQLite file, created if absent): a pair already judged under "
        "the same assistant and rules is not checked again.",
    ),
    allow_axiom: AllowAxiomOption = None,
    allow_axioms: AllowAxiomsOption = None,
    toolchain: ToolchainOption = None,
) -> None:
    """Verify CANDIDATE strictly against ORIGINAL: exit 0 if it passes, 1 if not, 2 on bad input.

    Exit codes: 0 the candidate passed (with --pairs: every pair did), 1 it failed, 2 bad
    input. `compare` differs: it exits 0 whatever its verdict, 2 on bad input."""
    task_kind = _parse_kind(kind)
    names, presets = axiom_policy(allow_axiom, allow_axioms)
    if pairs is not None:
        if candidate is not None or against is not None:
            raise InputError("--pairs replaces CANDIDATE and --against; give one or the other")
        from formalbench.cli.check_pairs import run_pairs

        passed = run_pairs(
            pairs,
            backend=backend,
            static_only=static_only,
            timeout=timeout,
            json_out=json_out,
            kind=task_kind,
            options=lambda name, first: _options(
                name, lean_project, kimina_url, first, coq_project
            ),
            workers=workers,
            cache=cache,
            axioms=(names, presets),
            replay=replay,
        )
        raise typer.Exit(0 if passed else 1)
    if candidate is None or against is None:
        missing = "CANDIDATE" if candidate is None else "--against"
        errors = sys.modules[typer.BadParameter.__module__]
        raise errors.MissingParameter(
            ctx=ctx,
            param_hint=f"'{missing}'",
            param_type="argument" if candidate is None else "option",
        )
    cand_text = read_source(candidate, "candidate")
    orig_text = read_source(against, "original")
    name = pick_backend(backend, candidate, against)
    options = _options(name, lean_project, kimina_url, candidate, coq_project)
    if workers is not None:
        options["workers"] = workers
    checker = None if static_only else make_backend(name, **options)
    verdict_cache = open_cache(cache) if checker is not None else None
    try:
        language = language_of(name)
        policy = VerifierPolicy(axiom_presets=presets, replay=replay).with_axioms(names, language)
        verifier = StrictVerifier(checker, policy, language=language, cache=verdict_cache)
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
        if verdict_cache is not None:
            verdict_cache.close()
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
        _render(verdict, candidate, targets, task_kind)
    raise typer.Exit(0 if verdict.passed else 1)
