"""Mine APE tasks from a git history: one candidate per (commit, library file, chunk).

Order of the funnel (each candidate is counted once, at the first filter that drops it):
commit type, deleted file, library path, then the content filters of `filters.filter_chain`.
Type, deletion and path are decided before contents are read, so those candidates are
stored without contents. State lives in `ape.sqlite`; a walk resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from formalbench.core.errors import InputError
from formalbench.pipelines.ape.coqversions import declared_at
from formalbench.pipelines.ape.filters import (
    chunks,
    conventional_type,
    counts,
    denoise,
    diff_lines,
    filter_chain,
    inferred_type,
)
from formalbench.pipelines.ape.gitsource import Commit, GitRepo
from formalbench.pipelines.ape.sources import detect_language, source_filter
from formalbench.pipelines.ape.task import ApeTask, MineConfig
from formalbench.store.ape import STORE_NAME, ApeStore

PRE_FILTERS = ["commit_type", "not_deleted", "library_path"]


@dataclass
class MineSummary:
    commits: int
    candidates: int
    funnel: dict[str, int] = field(default_factory=dict)  # tasks left after each filter
    kept: int = 0
    language: str = ""


def funnel(store: ApeStore, cfg: MineConfig) -> MineSummary:
    """Rebuild the funnel from the store alone."""
    drops = store.drop_counts()
    total = sum(drops.values())
    language = store.get_meta("language") or "lean"
    chain = filter_chain(cfg.thresholds(language))
    names = [*PRE_FILTERS, *[n for n, _ in chain if n not in PRE_FILTERS]]
    left, out = total, {}
    for name in names:
        left -= drops.get(name, 0)
        out[name] = left
    return MineSummary(
        store.commit_count(), total, out, drops.get(None, 0), store.get_meta("language") or ""
    )


def _toolchain(repo: GitRepo, rev: str, language: str) -> str:
    if language == "lean":
        return (repo.show(rev, "lean-toolchain") or "").strip()
    found = declared_at(repo, rev)  # the opam files' Coq constraint, else the CI's versions
    if found is None:
        return "coq"
    if found.formula is not None:
        return f"coq {found.formula.strip().strip('{}').strip()}"
    return f"coq {found.range} ({found.source})"


def mine(
    source: str | Path,
    run_dir: Path,
    cfg: MineConfig,
    language: str | None = None,
    on_progress: Callable[[int, int, str, int], None] | None = None,
) -> MineSummary:
    """Walk `source`'s history into `run_dir/ape.sqlite`; resumable."""
    run_dir.mkdir(parents=True, exist_ok=True)
    repo = GitRepo.open(source, run_dir)
    store = ApeStore(run_dir / STORE_NAME)
    try:
        saved = store.get_meta("config")
        if saved is not None and saved != cfg.model_dump():
            raise InputError(f"{run_dir}: already mined with other settings; use a new --run-dir")
        store.set_meta("config", cfg.model_dump())
        store.set_meta("source", str(source))
        commits = repo.commits(cfg.since)
        if cfg.limit is not None:
            commits = commits[: cfg.limit]
        if not commits:
            raise InputError(f"{source}: no commits to mine")
        lang = language or store.get_meta("language") or detect_language(repo, commits[0].sha)
        if lang not in ("coq", "lean"):
            raise InputError(
                f"{source}: neither a Coq project file (_CoqProject, Make, dune coq.theory, Makefile with -R/-Q) nor a lakefile at HEAD"
            )
        store.set_meta("language", lang)
        type_source = store.get_meta("type_source") or _type_source(commits, cfg)
        store.set_meta("type_source", type_source)
        done = store.done_commits()
        thresholds = cfg.thresholds(lang)
        store.set_meta("thresholds", thresholds.model_dump())
        chain = filter_chain(thresholds)
        resumed = 0
        for position, commit in enumerate(commits):
            if commit.sha not in done:
                store.put_commit(
                    commit.sha,
                    position,
                    _type(commit, type_source),
                    _candidates(repo, commit, lang, type_source, cfg, chain),
                )
            else:
                resumed += 1
            if on_progress:  # (done, total, status, resumed): resumed commits are not timed
                on_progress(position + 1, len(commits), "", resumed)
        store.set_meta("commits_total", len(commits))
        return funnel(store, cfg)
    finally:
        repo.close()
        store.close()


def _type_source(commits: list[Commit], cfg: MineConfig) -> str:
    if cfg.type_source != "auto":
        return cfg.type_source
    conventional = sum(conventional_type(c.message) is not None for c in commits)
    return "conventional" if conventional * 2 >= len(commits) else "inferred"


def _type(commit: Commit, type_source: str) -> str:
    if type_source == "conventional":
        return conventional_type(commit.message) or "other"
    return inferred_type(commit.message)


def _candidates(repo, commit: Commit, lang: str, type_source: str, cfg: MineConfig, chain):
    """(id, dropped_at, record) for every changed file (and chunk) of one commit."""
    if len(commit.parents) != 1:
        return []
    parent = commit.parents[0]
    kind = _type(commit, type_source)
    in_library = source_filter(repo, commit.sha, lang)
    in_library_before = source_filter(repo, parent, lang)
    toolchain = None
    out: list[tuple[str, str | None, dict[str, Any] | None]] = []
    for change in repo.changes(parent, commit.sha):
        path = change.path_after or change.path_before or ""
        base_id = f"{commit.sha[:12]}:{path}"
        if kind not in cfg.kept_types(type_source):
            out.append((base_id, "commit_type", None))
            continue
        if change.status == "deleted":
            out.append((base_id, "not_deleted", None))
            continue
        if not (
            in_library(change.path_after or "")
            or (change.path_before and in_library_before(change.path_before) and in_library(path))
        ):
            out.append((base_id, "library_path", None))
            continue
        before = repo.show(parent, change.path_before) if change.path_before else ""
        after = repo.show(commit.sha, change.path_after or "") or ""
        if toolchain is None:
            toolchain = _toolchain(repo, commit.sha, lang)
        pairs = chunks(before or "", after, change.status, lang, cfg.max_diff_lines)
        for n, (b, a) in enumerate(pairs):
            task = _record(commit, parent, kind, type_source, toolchain, lang, change, b, a, cfg)
            task.id = f"{base_id}:{n}"
            task.chunk, task.is_split_hunk = n, len(pairs) > 1
            dropped = next((name for name, keep in chain if not keep(task)), None)
            out.append((task.id, dropped, task.model_dump()))
    return out


def _record(commit, parent, kind, type_source, toolchain, lang, change, before, after, cfg):
    path = change.path_after or change.path_before or "file"
    gold = diff_lines(before, after, path)
    fdiff = diff_lines(denoise(before, lang), denoise(after, lang), path)
    return ApeTask(
        id="",
        commit_hash=commit.sha,
        parent_commit_hash=parent,
        date=commit.date,
        author=commit.author,
        message=commit.message,
        type=kind,
        type_source=type_source,
        toolchain_content=toolchain,
        language=lang,
        change_type=change.status,
        file_path_before=change.path_before,
        file_path_after=change.path_after,
        content_before=before,
        content_after=after,
        gold_diff="\n".join(gold) + ("\n" if gold else ""),
        counts=counts(gold),
        filtered_gold_diff="\n".join(fdiff) + ("\n" if fdiff else ""),
        filtered=counts(fdiff),
        input_tokens=len(before) // cfg.chars_per_token,
    )
