"""`formalbench formalize`: informal problems -> compiled, judged, ranked formal statements."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from formalbench.cli.main import app, say_error, user_errors
from formalbench.cli.options import (
    RecordOption,
    ToolchainOption,
    at_least,
    existing_file,
    existing_folder,
    pick_renamed,
    renamed,
    seconds,
)
from formalbench.cli.progress import LongProgress, Stage
from formalbench.core.errors import InputError
from formalbench.core.formalization import Candidate
from formalbench.pipelines.formalize import (
    FormalizeConfig,
    FormalizeMetrics,
    FormalizeResult,
    load_metrics,
    run_formalize,
)
from formalbench.pipelines.formalize.config import DEFAULT_CATEGORIES
from formalbench.pipelines.run_dir import default_run_dir

console = Console(highlight=False)


class ChainProgress:
    """Chains (one per model and sample) done / total, with compiled and aligned counts;
    the chains a resume found done are left out of the rate (`cli.progress`)."""

    def __init__(self, progress: LongProgress) -> None:
        self.progress = progress
        self.stage: Stage | None = None
        self.compiled = 0
        self.aligned = 0

    def started(self, total: int, done: int) -> None:
        self.stage = self.progress.stage(
            "candidates", total=total, done=done, resumed=done, unit="chain"
        )

    def chain_done(self, candidate: Candidate) -> None:
        self.compiled += candidate.compiled
        a = candidate.alignment
        self.aligned += bool(a is not None and a.error is None and a.aligned)
        if self.stage is not None:
            counts = f"{self.compiled} compiled, {self.aligned} aligned (this session)"
            self.stage.advance(status=counts)


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def print_formalize_report(metrics: FormalizeMetrics, out: Console) -> None:
    """The run's tables: problems covered, then one row per model."""
    head = Table(title="formalize run", show_header=False)
    head.add_row("problems", str(metrics.problems))
    head.add_row("compiled (>= 1 candidate)", f"{metrics.compiled} ({_rate(metrics.coverage)})")
    head.add_row("compiled at round 1", str(metrics.compiled_round1))
    head.add_row("aligned (>= 1 candidate)", f"{metrics.aligned} ({_rate(metrics.aligned_rate)})")
    head.add_row("summarized", str(metrics.summarized))
    out.print(head)
    # Two tables of a few columns each, not one of eleven: at 80 columns (or in a pipe) rich
    # would cut the model names to `ope…`; a model column is never cut (no_wrap).
    compile_table = Table(title="per model: compiling")
    for col in ("model", "cands", "r1", "final", "rounds", "fmt", "P comp"):
        compile_table.add_column(
            col, justify="left" if col == "model" else "right", no_wrap=col == "model"
        )
    align_table = Table(title="per model: alignment")
    for col in ("model", "aligned", "retr", "retr al", "P align"):
        align_table.add_column(
            col, justify="left" if col == "model" else "right", no_wrap=col == "model"
        )
    for m in metrics.models:
        rounds = "-" if m.mean_rounds_to_compile is None else f"{m.mean_rounds_to_compile:.2f}"
        compile_table.add_row(
            m.model,
            str(m.candidates),
            _rate(m.compile_rate_round1),
            _rate(m.compile_rate),
            rounds,
            str(m.format_failures),
            str(m.problems_compiled),
        )
        align_table.add_row(
            m.model,
            f"{m.aligned}/{m.judged}",
            f"{m.retranslations_compiled}/{m.retranslations}",
            f"{m.retranslations_aligned}/{m.retranslations_judged}",
            str(m.problems_aligned),
        )
    out.print(compile_table)
    out.print(align_table)
    out.print(
        "cands: first translations; r1 / final: of those, compiled at round 1 / after the "
        "repair rounds; rounds: mean compiles to compile; fmt: replies with no usable code; "
        "aligned: judged aligned / judged; retr: re-translations after misalignment, "
        "compiled / made; retr al: of those, aligned / judged; P comp, P align: problems "
        "with such a candidate, any translation",
        style="dim",
    )
    if metrics.reference:
        ref = Table(title="against the reference statements")
        for col in ("model", "BEq", "GTED mean", "GTED > 0.9", "compiled", "cands"):
            ref.add_column(col, justify="left" if col == "model" else "right", no_wrap=True)
        for name, r in metrics.reference.items():
            mean = "-" if r.get("gted_mean") is None else f"{r['gted_mean']:.3f}"
            beq = "n/a" if r.get("beq") is None else str(r["beq"])
            ref.add_row(
                name, beq, mean, str(r["gted_above_0_9"]), str(r["compiled"]), str(r["candidates"])
            )
        out.print(ref)
    if metrics.categories:
        cats = Table(title="per category")
        for col in ("category", "problems", "compiled", "aligned"):
            cats.add_column(col, justify="left" if col == "category" else "right")
        for name, c in sorted(metrics.categories.items()):
            cats.add_row(name, str(c.problems), str(c.compiled), str(c.aligned))
        out.print(cats)


def _print_outcome(result: FormalizeResult) -> None:
    for note in result.notes:
        console.print(f"[yellow]note:[/] {note}")
    for why in result.incomplete[:10]:
        console.print(f"[yellow]unfinished:[/] {why}", markup=True)
    if result.incomplete:
        console.print("[yellow]rerun the same command to resume the unfinished problems[/]")
    console.print(
        f"{result.finished} of {result.problems} problem(s) finished in {result.elapsed:.1f}s"
    )


@app.command("formalize")
@user_errors
def formalize_command(
    problems: Annotated[
        str, typer.Argument(help="JSONL with id, informal[, solution, category]; or `example`.")
    ],
    model: Annotated[
        list[str],
        typer.Option(
            help="Translator model (repeat for an ensemble): openai:NAME or openai:NAME@URL, ..."
        ),
    ],
    record: RecordOption = None,
    backend: Annotated[
        str, typer.Option(help="coq | lean | kimina (default: coq, as for every informal input).")
    ] = "coq",
    run_dir: Annotated[
        Path | None,
        typer.Option(
            help="Where the store and log go (default: runs/formalize-<problems>-<hash of "
            "the settings>, so the same command resumes its run and another gets its own)."
        ),
    ] = None,
    samples: Annotated[int, typer.Option(callback=at_least(1), help="Translations per model.")] = 5,
    temperature: Annotated[float, typer.Option(min=0.0, help="Sampling temperature.")] = 1.0,
    repair_rounds: Annotated[
        int,
        typer.Option(
            min=0,
            help="Repair rounds fed with the checker's messages after the first translation.",
        ),
    ] = 6,
    retranslations: Annotated[
        int, typer.Option(min=0, help="Fresh translations after a failed alignment check.")
    ] = 1,
    judge: Annotated[
        str | None,
        typer.Option(
            "--judge", help="Judge model spec: decomposes, judges, ranks (default: first --model)."
        ),
    ] = None,
    judge_model: Annotated[
        str | None, typer.Option("--judge-model", hidden=True, callback=renamed("--judge"))
    ] = None,
    categories: Annotated[
        str, typer.Option(help="Comma-separated category list for labelling.")
    ] = ",".join(DEFAULT_CATEGORIES),
    context: Annotated[
        Path | None,
        typer.Option(
            callback=existing_file,
            help="Context text (or JSON category -> text) instead of retrieval.",
        ),
    ] = None,
    library: Annotated[
        list[Path] | None,
        typer.Option(
            callback=existing_folder, help="Library source folder to retrieve from (repeat)."
        ),
    ] = None,
    retriever: Annotated[
        str, typer.Option(help="How library context is ranked: bm25 | embed (--embed-model).")
    ] = "bm25",
    embed_model: Annotated[
        str | None,
        typer.Option(help="Embedding model for --retriever embed: openai:NAME or openai:NAME@URL."),
    ] = None,
    context_items: Annotated[
        int, typer.Option(min=0, help="Library declarations per category context.")
    ] = 40,
    fewshot: Annotated[int, typer.Option(min=0, help="Example pairs per prompt.")] = 2,
    split_parts: Annotated[
        bool, typer.Option(help="Split multi-part problems into `<id>#<i>` sub-problems.")
    ] = False,
    max_tokens: Annotated[
        int | None,
        typer.Option(min=1, help="Output cap of one model call (default: the provider's)."),
    ] = None,
    judge_retries: Annotated[int, typer.Option(min=0)] = 2,
    timeout: Annotated[
        float, typer.Option(callback=seconds, help="Seconds for one compile.")
    ] = 60.0,
    workers: Annotated[
        int | None,
        typer.Option(callback=at_least(1), help="Proof-assistant processes (default: the CPUs)."),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(callback=at_least(1), help="Candidates in flight (default: 4 per worker)."),
    ] = None,
    lean_project: Annotated[
        Path | None, typer.Option(callback=existing_folder, help="Lake project (Lean).")
    ] = None,
    kimina_url: Annotated[str | None, typer.Option(help="Kimina Lean Server URL.")] = None,
    index_cache: Annotated[
        Path | None, typer.Option(help="Where retrieval indexes are kept.")
    ] = None,
    run_token_budget: Annotated[
        int | None, typer.Option(min=1, help="Tokens for the whole run (default: no limit).")
    ] = None,
    quiet: Annotated[bool, typer.Option(help="No progress bar or tables.")] = False,
    toolchain: ToolchainOption = None,
) -> None:
    """Translate informal problems with an ensemble, compile with feedback, judge, rank."""
    seen: set[str] = set()
    for spec in model:
        if spec.strip() in seen:
            raise InputError(
                f"--model {spec.strip()} is given twice: name each model of the ensemble once "
                "(--samples sets the translations per model)"
            )
        seen.add(spec.strip())
    options: dict[str, object] = {}
    if lean_project is not None:
        options["project_dir"] = str(lean_project)
    if kimina_url is not None:
        options["url"] = kimina_url
    if retriever not in ("bm25", "embed"):
        raise InputError(f"--retriever: expected bm25 or embed, got {retriever!r}")
    if retriever == "embed" and not embed_model:
        raise InputError("--retriever embed needs --embed-model openai:NAME[@URL]")
    if retriever == "bm25" and embed_model:
        raise InputError("--embed-model is only used with --retriever embed")
    names = [c for c in (x.strip() for x in categories.split(",")) if c]
    if not names:
        raise InputError("--categories: give at least one category name")
    config = FormalizeConfig(
        problems=problems,
        models=model,
        backend=backend,
        backend_options=options,
        samples=samples,
        temperature=temperature,
        repair_rounds=repair_rounds,
        retranslations=retranslations,
        judge_model=pick_renamed("--judge", judge, "--judge-model", judge_model),
        judge_retries=judge_retries,
        categories=names,
        context_file=str(context) if context else None,
        library=[str(p) for p in library or []],
        retriever=retriever,  # type: ignore[arg-type]  # checked above
        embed_model=embed_model,
        context_items=context_items,
        fewshot=fewshot,
        split_parts=split_parts,
        max_tokens=max_tokens,
        timeout=timeout,
        workers=workers,
        concurrency=concurrency,
        index_cache=str(index_cache) if index_cache else None,
        run_token_budget=run_token_budget,
    )
    if run_dir is None:  # one folder per configuration (pipelines/run_dir.py)
        run_dir = default_run_dir("formalize", config.problems, config.identity())
    if quiet:
        result = run_formalize(config, run_dir)
    else:
        with LongProgress() as progress:  # on stderr: stdout keeps the tables
            result = run_formalize(config, run_dir, ChainProgress(progress))
    if not quiet:
        _print_outcome(result)
        print_formalize_report(result.metrics or load_metrics(run_dir), console)
        console.print(f"store: {result.files.store}  metrics: {result.files.metrics}")
    # A run that could not finish, or a stage in which every item failed, says why on
    # stderr (with --quiet too) and exits 1, as `eval` and `construct` do.
    if result.incomplete:
        say_error(
            f"formalbench: error: {len(result.incomplete)} problem(s) unfinished: "
            f"{result.incomplete[0]}; rerun the same command to resume"
        )
    for line in result.failed_stages:
        say_error(f"formalbench: error: {line}")
    if result.incomplete or result.failed_stages:
        raise typer.Exit(1)
