"""An export of `ape export` (its folder or its `tasks.jsonl`) as the task source of
`ape eval`: read and checked line by line, then written into a run folder of its own, which
`ape eval` (and `ape synthesize`, `report`) then treat as any mined run.

The import is one SQLite file written beside the run's store and renamed into place, and it
remembers the export by the digest of its tasks file: the same export given again resumes
the run; another export, or a mined run, in that folder is refused. The repository the
tasks' commits come from is `--repo`, else the export's own `repository.bundle`, else the
path the tasks name when it exists here; every commit must be in it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from formalbench.core.errors import FormalbenchError, InputError
from formalbench.pipelines.ape.export import (
    BUNDLE_FILE,
    FORMAT,
    MANIFEST_FILE,
    TASKS_FILE,
    ExportedTask,
)
from formalbench.pipelines.ape.gitsource import GitRepo
from formalbench.pipelines.ape.task import MineConfig
from formalbench.store.ape import STORE_NAME, ApeStore

MAX_LINE_BYTES = 64 * 1024 * 1024  # one task a line; a longer line is refused, not read on


@dataclass
class LoadedExport:
    tasks: list[ExportedTask]
    tasks_file: Path
    digest: str  # sha256 of the tasks file: which export a run holds
    manifest: dict[str, Any] | None
    bundle: Path | None  # the export's own repository, when it carries one


def is_export(path: Path) -> bool:
    """A tasks file, or a folder holding one (and no run store)."""
    path = Path(path)
    if path.is_dir():
        return (path / TASKS_FILE).is_file() and not (path / STORE_NAME).exists()
    return path.is_file()


def read_export(path: Path) -> LoadedExport:
    """The tasks of an export; the first bad line is one `file:line: what` error."""
    path = Path(path)
    tasks_file = path / TASKS_FILE if path.is_dir() else path
    # the export's folder: given, or the one of its tasks.jsonl (manifest and bundle beside)
    folder = tasks_file.parent if tasks_file.name == TASKS_FILE else None
    manifest = _manifest(folder / MANIFEST_FILE) if folder else None
    digest = hashlib.sha256()
    tasks: list[ExportedTask] = []
    seen: set[str] = set()
    try:
        with tasks_file.open("rb") as handle:
            for number, raw in enumerate(iter(lambda: handle.readline(MAX_LINE_BYTES + 1), b""), 1):
                digest.update(raw)
                where = f"{tasks_file}:{number}"
                if len(raw) > MAX_LINE_BYTES:
                    raise InputError(f"{where}: a line longer than {MAX_LINE_BYTES // 2**20} MiB")
                if not raw.strip():
                    continue
                task = _task(raw, where)
                if task.id in seen:
                    raise InputError(f"{where}: task id {task.id[:200]!r} appears twice")
                seen.add(task.id)
                tasks.append(task)
    except OSError as exc:
        raise InputError(f"{tasks_file}: cannot read the tasks ({exc.strerror or exc})") from None
    if not tasks:
        raise InputError(f"{tasks_file}: no tasks")
    for field in ("repository", "language"):
        values = {getattr(t, field) for t in tasks}
        if len(values) > 1:
            raise InputError(
                f"{tasks_file}: the tasks name {len(values)} {field}s; an export holds one"
            )
    bundle = folder / BUNDLE_FILE if folder and (folder / BUNDLE_FILE).is_file() else None
    return LoadedExport(tasks, tasks_file, digest.hexdigest(), manifest, bundle)


def _task(raw: bytes, where: str) -> ExportedTask:
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(f"{where}: not UTF-8 text") from None
    except ValueError as exc:
        raise InputError(f"{where}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise InputError(f"{where}: not a task record (a JSON object)")
    try:
        return ExportedTask.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "record"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise InputError(f"{where}: {field}: {first['msg']}{more}") from None


def _manifest(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{path}: not a readable manifest ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(f"{path}: not the manifest of `ape export` (format {FORMAT!r})")
    return data


def prepare_run(source: Path, run_dir: Path | None, repo: Path | None) -> Path:
    """The run folder `ape eval SOURCE` evaluates: SOURCE itself when it is a run, else
    `run_dir` holding SOURCE's export (imported there on first use); without `run_dir`,
    `runs/ape-eval-<export>-<hash of the export and --repo>`, as every command's default."""
    source = Path(source)
    if (source / STORE_NAME).is_file():
        if run_dir is not None and Path(run_dir).resolve() != source.resolve():
            raise InputError(
                f"{source}: is a run, which keeps its own results; --run-dir is for an export"
            )
        if repo is not None:
            raise InputError(f"{source}: is a run; --repo is for an export")
        return source
    if not is_export(source):
        raise InputError(
            f"{source}: neither an ape run (no {STORE_NAME}) nor an export of `ape export` "
            f"(no {TASKS_FILE})"
        )
    loaded = read_export(source)
    home = source if source.is_dir() else source.parent
    if run_dir is None:  # the rule of every --run-dir (pipelines/run_dir.default_run_dir)
        from formalbench.pipelines.run_dir import default_run_dir

        name = home.resolve().name
        run_dir = default_run_dir("ape-eval", name, {"export": loaded.digest, "repo": str(repo)})
    if Path(run_dir).resolve() == home.resolve():
        raise InputError(f"{run_dir}: is the export's folder; give another --run-dir")
    import_export(loaded, Path(run_dir), repo)
    return Path(run_dir)


def import_export(loaded: LoadedExport, run_dir: Path, repo: Path | None = None) -> None:
    """Write `loaded` into `run_dir` as a run (once; the same export again keeps the run)."""
    store_path = run_dir / STORE_NAME
    repository = _repository(loaded, repo)
    if store_path.exists():
        with ApeStore(store_path) as store:
            mark = store.get_meta("export")
            if not isinstance(mark, dict):
                raise InputError(f"{run_dir}: holds a mined run; give another --run-dir")
            if mark.get("digest") != loaded.digest:
                raise InputError(
                    f"{run_dir}: holds another export ({mark.get('path')}); give another --run-dir"
                )
            if store.get_meta("source") != str(repository):  # the same tasks, found elsewhere
                _check_commits(loaded, repository, run_dir)
                store.set_meta("source", str(repository))
        return
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(
            f"{run_dir}: cannot create the run folder ({exc.strerror or exc})"
        ) from None
    _check_commits(loaded, repository, run_dir)
    part = run_dir / f".{STORE_NAME}.{os.getpid()}.part"
    with contextlib.suppress(FileNotFoundError):
        part.unlink()
    try:
        with ApeStore(part) as store:
            _fill(store, loaded, repository)
        os.replace(part, store_path)
    finally:
        for left in (part, part.with_name(part.name + "-wal"), part.with_name(part.name + "-shm")):
            with contextlib.suppress(FileNotFoundError):
                left.unlink()


def _repository(loaded: LoadedExport, given: Path | None) -> Path:
    if given is not None:
        if not Path(given).exists():
            raise InputError(f"{given}: no such repository or bundle (--repo)")
        return Path(given).resolve()
    if loaded.bundle is not None:
        return loaded.bundle.resolve()
    named = loaded.tasks[0].repository
    if named and Path(named).exists():
        return Path(named).resolve()
    raise InputError(
        f"{loaded.tasks_file}: the tasks' repository {named[:200]!r} is not on this machine and "
        f"the export has no {BUNDLE_FILE}; give a clone or bundle of it with --repo"
    )


def _check_commits(loaded: LoadedExport, repository: Path, run_dir: Path) -> None:
    """Every task's commit and parent must be in the repository (one `git cat-file`)."""
    repo = GitRepo.open(repository, run_dir)
    try:
        wanted = sorted({s for t in loaded.tasks for s in (t.commit_hash, t.parent_commit_hash)})
        run = subprocess.run(
            ["git", "-C", str(repo.path), "cat-file", "--batch-check"],
            input="".join(f"{sha}^{{commit}}\n" for sha in wanted),
            capture_output=True,
            text=True,
        )
    finally:
        repo.close()
    missing = [line.split()[0] for line in run.stdout.splitlines() if line.endswith(" missing")]
    if run.returncode != 0 or missing:
        first = (missing or ["?"])[0].removesuffix("^{commit}")
        raise InputError(
            f"{repository}: does not hold commit {first[:12]} of the export "
            f"({len(missing)} of {len(wanted)} missing); give the tasks' repository with --repo"
        )


def _fill(store: ApeStore, loaded: LoadedExport, repository: Path) -> None:
    tasks = loaded.tasks
    first = tasks[0]
    store.set_meta("config", MineConfig().model_dump())
    store.set_meta("source", str(repository))
    store.set_meta("language", first.language)
    store.set_meta("type_source", first.type_source)
    store.set_meta(
        "export",
        {
            "digest": loaded.digest,
            "path": str(loaded.tasks_file.resolve()),
            "manifest": loaded.manifest,
        },
    )
    commits: dict[str, list[ExportedTask]] = {}
    for task in tasks:  # the export's order: newest commit first, as mined
        commits.setdefault(task.commit_hash, []).append(task)
    for position, (sha, group) in enumerate(commits.items()):
        store.put_commit(sha, position, group[0].type, [(t.id, None, t.mined()) for t in group])
    store.set_meta("commits_total", len(commits))
    for task in tasks:
        if task.validation is not None:
            store.put_result(task.id, "validate", task.validation)
        if task.synthesis is not None:
            store.put_result(task.id, "synthesize", task.synthesis)
        elif task.instruction is not None:  # a hand-written task: its instruction is given
            store.put_result(task.id, "synthesize", {"kept": True, "instruction": task.instruction})


def toolchain_drift(run_dir: Path) -> str | None:
    """A line when the run's tasks were validated with another Coq than the one this
    evaluation uses (its compile verdicts, hence its figures, may then differ); None when
    they agree or nothing says."""
    from formalbench.toolchains.toolchain import resolve

    with ApeStore(Path(run_dir) / STORE_NAME) as store:
        checked = store.results("validate").values()
    said = set()
    for record in checked:
        after = record.get("after") if isinstance(record, dict) else None
        if isinstance(after, dict) and isinstance(after.get("version"), str):
            said.add(after["version"])
    try:
        chain = resolve()
        using = f"coq {chain.version()}"
    except FormalbenchError:  # no toolchain at all: the evaluation says so itself
        return None
    if not said or said == {using}:
        return None
    return (
        f"the tasks were validated with {', '.join(sorted(said))[:200]}; this evaluation uses "
        f"{using} ({chain.name}); --toolchain chooses another"
    )
