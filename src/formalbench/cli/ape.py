"""`formalbench ape ...`: APE-Bench from real commit histories (mine, apply, synthesize, eval).

Heavy modules are imported inside each command so that `formalbench --help` stays fast.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from formalbench.cli.main import app, user_errors
from formalbench.cli.options import (
    RecordOption,
    ToolchainOption,
    at_least,
    existing_file,
    existing_folder,
    existing_path,
    fraction,
    pick_renamed,
    renamed,
)
from formalbench.core.errors import InputError

if TYPE_CHECKING:
    from formalbench.cli.progress import Report
    from formalbench.pipelines.ape.outcome import StageOutcome

T = TypeVar("T")

ape_app = typer.Typer(
    name="ape",
    help="Proof engineering tasks mined from a library's git history (APE-Bench).",
    no_args_is_help=True,
)
app.add_typer(ape_app, name="ape")


# The options `ape synthesize` and `ape eval` share, declared once so they read alike.
JudgeOption = Annotated[
    str | None, typer.Option("--judge", help="Judge model spec (default: --model).")
]
NewestTasksOption = Annotated[
    int | None, typer.Option("--limit", callback=at_least(1), help="Newest N tasks only.")
]
RetryErrorsOption = Annotated[
    bool, typer.Option(help="Redo tasks whose reply was unreadable or whose model call failed.")
]

MAX_READ_BYTES = 16 * 1024 * 1024  # a patch or a source file larger than this is refused


def _read_text(path: Path, what: str) -> str:
    """The file as UTF-8 text, read up to MAX_READ_BYTES (an endless input such as /dev/zero
    is refused, not read forever); CRs are kept (no newline translation)."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_READ_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    if len(data) > MAX_READ_BYTES:
        raise InputError(f"{path}: the {what} is larger than {MAX_READ_BYTES // 2**20} MiB")
    if b"\0" in data:
        raise InputError(f"{path}: the {what} is a binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: the {what} is not UTF-8 text") from None


@ape_app.command("apply")
@user_errors
def apply_command(
    patch: Annotated[
        Path,
        typer.Argument(
            callback=existing_file,
            help="A model's reply: a unified diff (fenced or not, prose around it), "
            "search/replace blocks or a whole file.",
        ),
    ],
    to: Annotated[
        Path, typer.Option("--to", callback=existing_file, help="The file the edit applies to.")
    ],
    out: Annotated[Path, typer.Option("--out", help="Where to write the edited file.")],
    path: Annotated[
        str | None,
        typer.Option(
            "--path",
            help="The file's path in its repository, matched against the diff's file "
            "headers (default: --to as given, or its name when absolute).",
        ),
    ] = None,
    no_repair: Annotated[
        bool, typer.Option("--no-repair", help="Apply only hunks that match exactly.")
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the outcome as JSON.")] = False,
    toolchain: ToolchainOption = None,
) -> None:
    """Apply a model's edit to FILE with DiffRepair; exit 0 applied, 1 not applied.

    Sections of the diff for other files are refused (and listed); the same file under
    another folder prefix is the same file."""
    from formalbench.pipelines.ape.diffrepair import apply_reply

    answer = _read_text(patch, "patch")
    content = _read_text(to, "file to patch")
    # the file as the diff names it: --path, else --to as given (its name alone when absolute)
    named = path or (to.name if to.is_absolute() else str(to))
    result = apply_reply(answer, content, repair=not no_repair, path=named)
    if result.applied and result.content is not None:
        try:
            with out.open("w", encoding="utf-8", newline="") as handle:
                handle.write(result.content)
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
        for ignored in result.ignored if result.applied else ():
            typer.echo(f"  {ignored}")
    if not result.applied:
        hint = _path_hint(answer, named) if path is None else None
        if hint is not None:
            typer.echo(hint, err=True)
        raise typer.Exit(1)


def _path_hint(answer: str, named: str) -> str | None:
    """When the diff was refused because its sections name another file than `named` (the
    name `--to` gave), the option that says which file of the repository `--to` is. The
    names come from a model's reply: only plain printable ones without `..` are echoed,
    shell-quoted, without git's `a/`/`b/` prefixes."""
    import shlex

    from formalbench.pipelines.ape.patchtext import file_sections, same_file

    others: set[str] = set()
    for section in file_sections(answer):
        for name in section.names:
            bare = name[2:] if name.startswith(("a/", "b/")) else name
            plain = bare.isprintable() and ".." not in bare.split("/") and bare != "/dev/null"
            if plain and bare and not same_file(name, named):
                others.add(bare)
    if not others:
        return None
    shown = [shlex.quote(n) for n in sorted(others)]
    if len(shown) == 1:
        return (
            f"hint: the diff is for {shown[0]}; if that is the file --to names, "
            f"say so with --path {shown[0]}"
        )
    return f"hint: the diff names {', '.join(shown[:3])}; give --path with the one --to is"


@ape_app.command("mine")
@user_errors
def mine_command(
    repo: Annotated[
        str, typer.Argument(callback=existing_path, help="A git repository folder or bundle.")
    ],
    run_dir: Annotated[
        Path | None,
        typer.Option(
            "--run-dir",
            help="Where the run is stored (default: runs/ape-<repository>-<hash of the "
            "mining settings>, as eval's; `ape synthesize|eval|report` take that folder).",
        ),
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only commits after DATE (git's syntax).")
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", callback=at_least(1), help="Newest N commits only.")
    ] = None,
    backend: Annotated[
        str | None,
        typer.Option(
            "--backend",
            help="coq or lean: keep a task only if, in the project at its commit with the "
            "file's dependencies built, its before file compiles, its after (gold) file "
            "compiles, and the after file is complete (no declaration rests on an axiom or "
            "hole the before file had not). Warnings are recorded, not reasons. Failures at "
            "commits whose opam/CI files declare another Coq are reported as 'made for Coq "
            "X (running Y)'. Ctrl-C stops at once (exit 130); rerun to resume. Default: no "
            "validation.",
        ),
    ] = None,
    validate: Annotated[
        str | None, typer.Option("--validate", hidden=True, callback=renamed("--backend"))
    ] = None,
    types: Annotated[
        str | None,
        typer.Option(
            "--types",
            help="Commit types kept, comma-separated [feat,fix,refactor,chore; "
            "inferred types add other].",
        ),
    ] = None,
    type_source: Annotated[
        str,
        typer.Option("--type-source", help="conventional, inferred (subject's verb) or auto."),
    ] = "auto",
    max_diff_lines: Annotated[
        int, typer.Option(callback=at_least(1), help="Chunk changes larger than this.")
    ] = 100,
    max_filtered_changes: Annotated[
        int | None,
        typer.Option(callback=at_least(1), help="Upper bound of filter 5 [language's value: 100]."),
    ] = None,
    min_distinct_ratio: Annotated[
        float | None,
        typer.Option(
            callback=fraction,
            help="Filter 6 threshold [language's value: Lean 0.8, Coq see README].",
        ),
    ] = None,
    max_scattered_edits: Annotated[
        int | None,
        typer.Option(callback=at_least(1), help="Filter 7: scattered runs [language's value: 10]."),
    ] = None,
    max_input_tokens: Annotated[
        int | None,
        typer.Option(callback=at_least(1), help="Filter 8: tokens of file before [16384]."),
    ] = None,
    validate_limit: Annotated[
        int | None,
        typer.Option(callback=at_least(1), help="Validate only the newest N kept tasks."),
    ] = None,
    workers: Annotated[
        int, typer.Option("--workers", callback=at_least(1), help="Tasks validated at once.")
    ] = 1,
    executor: Annotated[
        str, typer.Option(help="Where validation compiles run: local | ray.")
    ] = "local",
    ray_address: Annotated[str | None, typer.Option(help="Ray cluster address.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the funnel as JSON.")] = False,
    toolchain: ToolchainOption = None,
) -> None:
    """Mine tasks from a history: commits -> candidates -> filters (-> compile validation)."""
    from formalbench.cli.progress import LongProgress, reporter
    from formalbench.pipelines.ape.mining import mine
    from formalbench.pipelines.ape.task import MineConfig
    from formalbench.pipelines.stopping import Interrupted, interrupt_on_signals

    validate = pick_renamed("--backend", backend, "--validate", validate)
    if validate not in (None, "coq", "lean"):
        raise InputError(f"--backend {validate}: expected coq or lean")
    if executor not in ("local", "ray"):
        raise InputError(f"--executor must be local or ray, not {executor!r}")
    if type_source not in ("auto", "conventional", "inferred"):
        raise InputError(f"--type-source {type_source}: expected auto, conventional or inferred")
    cfg = MineConfig(
        types=None if types is None else [t.strip() for t in types.split(",") if t.strip()],
        type_source=type_source,
        max_diff_lines=max_diff_lines,
        max_filtered_changes=max_filtered_changes,
        min_distinct_ratio=min_distinct_ratio,
        max_scattered_edits=max_scattered_edits,
        max_input_tokens=max_input_tokens,
        since=since,
        limit=limit,
    )
    if run_dir is None:  # one folder per history and settings (pipelines/run_dir.py)
        from formalbench.pipelines.run_dir import default_run_dir

        run_dir = default_run_dir("ape", repo, cfg.model_dump(mode="json"))
    with LongProgress() as progress:
        try:
            with interrupt_on_signals():  # each commit is one transaction: a rerun resumes
                summary = mine(
                    repo, run_dir, cfg, on_progress=reporter(progress, "mining", unit="commit")
                )
        except Interrupted:
            progress.stop(failed=True)
            typer.echo(
                f"mining interrupted: the commits walked are kept in {run_dir}; "
                "rerun the same command to resume",
                err=True,
            )
            raise
    result: dict[str, object] = {
        "commits": summary.commits,
        "candidates": summary.candidates,
        "funnel": summary.funnel,
        "kept": summary.kept,
        "language": summary.language,
        "run_dir": str(run_dir),
    }
    if validate is not None:
        from formalbench.pipelines.ape.validate import validate_run

        with LongProgress() as progress:
            try:
                outcome = validate_run(
                    run_dir,
                    validate,
                    limit=validate_limit,
                    on_progress=reporter(progress, "validating", unit="task"),
                    workers=workers,
                    executor=executor,
                    ray_address=ray_address,
                )
            except Interrupted:
                progress.stop(failed=True)
                _interrupted_validation(run_dir)
                raise
        result["validated"] = outcome.kept
        result["validation"] = outcome.summary()
    if json_out:
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
    else:
        typer.echo(
            f"{summary.commits} commits, {summary.candidates} candidates, {summary.kept} kept"
            f" (run: {run_dir})"
        )
        for name, left in summary.funnel.items():
            typer.echo(f"  after {name:18} {left}")
        if "validated" in result:
            typer.echo(f"  validated          {result['validated']}")
    if validate is not None:
        _stage_end(outcome)


def _interrupted_validation(run_dir: Path) -> None:
    """After a stop of validation (`--backend`): what was kept, and how to go on."""
    from formalbench.store.ape import ApeStore

    with ApeStore(run_dir / "ape.sqlite") as store:
        done = len(store.results("validate"))
    typer.echo(
        f"validation interrupted: {done} task(s) validated are kept in {run_dir}; "
        "rerun the same command to resume",
        err=True,
    )


def _stage_end(outcome: StageOutcome) -> None:
    """The failures of a stage on stderr, one line per reason; exit 1 when every task of
    the stage failed for one reason (the environment or the model, not the tasks)."""
    if outcome.failed:
        err = f"{outcome.stage}: {outcome.failed} of {outcome.total} task(s) not kept"
        typer.echo(err + ":", err=True)
        for line in outcome.lines():
            typer.echo(f"  {line}", err=True)
    for note in outcome.notes:
        typer.echo(f"{outcome.stage}: {note}", err=True)
    reason = outcome.single_reason()
    if reason is not None:
        typer.echo(f"{outcome.stage} failed for every task ({outcome.total}): {reason}", err=True)
        raise typer.Exit(1)


def _with_bar(label: str, step: Callable[[Report], T]) -> T:
    """Run `step` with its progress on stderr (`cli.progress`); `step` reports (done, total,
    status, resumed), counted in tasks."""
    from formalbench.cli.progress import LongProgress, reporter

    with LongProgress() as progress:
        return step(reporter(progress, label, unit="task"))


def _models(spec: str, judge: str | None, run_dir: Path):
    """The models, each answering repeats from the run's response cache (resumed runs and
    the judge's fixed-seed samples cost no second call)."""
    from formalbench.llm.registry import make_model

    if not (run_dir / "ape.sqlite").is_file():
        raise InputError(f"{run_dir}: not an ape run (no ape.sqlite); run `ape mine` first")
    cache = run_dir / "responses.sqlite"
    model = make_model(spec, cache=cache)
    return model, (make_model(judge, cache=cache) if judge else None)


@ape_app.command("synthesize")
@user_errors
def synthesize_command(
    run_dir: Annotated[
        Path, typer.Argument(callback=existing_folder, help="A run folder of `ape mine`.")
    ],
    model: Annotated[str, typer.Option("--model", help="Model spec, e.g. openai:gpt-4o.")],
    judge: JudgeOption = None,
    record: RecordOption = None,
    limit: NewestTasksOption = None,
    retry_errors: RetryErrorsOption = False,
    toolchain: ToolchainOption = None,
) -> None:
    """Write instructions for the validated tasks and keep those the judge confirms.

    Model calls: per task, 1 instruction call (--model) and 4 judge calls (--judge) for the
    reverse validation of the kept ones; a rerun answers repeats from the run's cache."""
    from formalbench.pipelines.ape.evaluate import synthesize_run

    chat, judge_model = _models(model, judge, run_dir)
    outcome = _with_bar(
        "synthesizing",
        lambda report: synthesize_run(
            run_dir, chat, judge_model, limit, report, retry_errors=retry_errors
        ),
    )
    typer.echo(f"{outcome.kept} tasks kept after instruction synthesis and reverse validation")
    if outcome.errors and not retry_errors:
        typer.echo(
            f"{outcome.errors} task(s) ended in an error; `--retry-errors` redoes them", err=True
        )
    _stage_end(outcome)


EVAL_HELP = """Patches, DiffRepair, apply, compile and judge; figures via `formalbench report`.

SOURCE is a run folder after `ape synthesize`, or an export of `ape export` (its folder or
its tasks.jsonl), whose results then go to --run-dir. Model calls: per task, --samples
patch calls (20 by default) and 4 judge calls for each patch that compiles; a rerun answers
repeats from the run's response cache."""


@ape_app.command("eval", help=EVAL_HELP)
@user_errors
def eval_command(
    source: Annotated[
        Path,
        typer.Argument(
            callback=existing_path,
            help="A run folder after `ape synthesize`, or an export (folder or tasks.jsonl).",
        ),
    ],
    model: Annotated[str, typer.Option("--model", help="Model spec of the patch writer.")],
    samples: Annotated[
        int,
        typer.Option(
            "--samples",
            callback=at_least(1),
            help="Patches per task: one model call each, and 4 judge calls for each patch "
            "that compiles.",
        ),
    ] = 20,
    judge: JudgeOption = None,
    limit: NewestTasksOption = None,
    retry_errors: RetryErrorsOption = False,
    run_dir: Annotated[
        Path | None,
        typer.Option(
            "--run-dir",
            help="Where an export's results are stored (a run keeps its own; default: "
            "runs/ape-eval-<export>-<hash of the export>).",
        ),
    ] = None,
    repo: Annotated[
        Path | None,
        typer.Option(
            "--repo",
            help="An export's repository (clone or bundle) [default: the export's "
            "repository.bundle, else the path its tasks name].",
        ),
    ] = None,
    record: RecordOption = None,
    toolchain: ToolchainOption = None,
) -> None:
    from formalbench.pipelines.ape.evaluate import evaluate_run
    from formalbench.pipelines.ape.imported import prepare_run

    run = prepare_run(source, run_dir, repo)
    if run != source:  # an export: made elsewhere, perhaps validated with another Coq
        from formalbench.pipelines.ape.imported import toolchain_drift

        drift = toolchain_drift(run)
        if drift is not None:
            typer.echo(f"note: {drift}", err=True)
    chat, judge_model = _models(model, judge, run)
    outcome = _with_bar(
        "evaluating",
        lambda report: evaluate_run(
            run, chat, samples, judge_model, report, limit=limit, retry_errors=retry_errors
        ),
    )
    typer.echo(
        f"{outcome.solved} tasks with at least one judged pass; see `formalbench report {run}`"
    )
    if outcome.error_tasks:
        if not retry_errors:
            typer.echo(
                f"{outcome.error_tasks} task(s) ended in an error; `--retry-errors` redoes them",
                err=True,
            )
        for why, n in outcome.errors.most_common():
            example = outcome.examples.get(why, "")
            tail = f" (e.g. {example[:160]})" if example else ""
            typer.echo(f"  {n} sample(s): {why}{tail}", err=True)
    single = outcome.single_reason()
    if single is not None:
        typer.echo(f"evaluation failed for every task ({outcome.tasks}): {single}", err=True)
        raise typer.Exit(1)


# `ape export` lives in its own module, which imports nothing of this one (no import cycle)
from formalbench.cli.ape_export import export_command  # noqa: E402

ape_app.command("export")(export_command)
