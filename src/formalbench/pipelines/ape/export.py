"""`formalbench ape export RUN --out DIR`: a run's validated tasks as a dataset that can be
published and evaluated elsewhere (`ape eval DIR`).

The tasks live only in the run's `ape.sqlite`; this writes them out as `DIR/tasks.jsonl`,
one `ExportedTask` a line (the mined record under the APE-Bench field names, plus its
repository, validation, instruction, toolchain and snapshot ids), and `DIR/manifest.json`
(counts, source run, formalbench version, toolchains). With `bundle=True` the repository
itself goes along as `DIR/repository.bundle`, so the export is evaluable on its own.

The folder appears whole or not at all: it is written beside DIR and renamed into place. A
run folder is hostile input like any dataset: its records are validated as they are written,
and the store is opened read-only.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from formalbench.core.errors import InputError
from formalbench.pipelines.ape.project import INDEX_NAME
from formalbench.pipelines.ape.task import ApeTask
from formalbench.store.ape import STORE_NAME, ApeStore

FORMAT = "formalbench-ape-export"
FORMAT_VERSION = 1
TASKS_FILE = "tasks.jsonl"
MANIFEST_FILE = "manifest.json"
BUNDLE_FILE = "repository.bundle"

_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")  # SHA-1 or SHA-256 object names
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class Snapshot(BaseModel):
    """A compiled project tree of the task in the run's snapshot store (`formalbench
    snapshot`): the tree at the commit (`after`) or its parent (`before`) with the file's
    dependencies built by `built_by` (toolchain and Coq version)."""

    model_config = ConfigDict(extra="forbid")
    revision: Literal["after", "before"]
    id: str
    built_by: str = ""


class ExportedTask(ApeTask):
    """One line of an export: the mined task (`ApeTask`'s fields, APE-Bench's names) and
    what the run learnt about it. Unknown fields are refused, and every field that later
    names a revision or a path is checked, since an export comes from someone else."""

    model_config = ConfigDict(extra="forbid")
    repository: str
    toolchain: str | None = None  # the Coq that validated it, as validation recorded it
    validation: dict[str, Any] | None = None
    instruction: str | None = None
    synthesis: dict[str, Any] | None = None
    snapshots: list[Snapshot] = []

    @field_validator("id")
    @classmethod
    def _plain_id(cls, value: str) -> str:
        if not value or len(value) > 1000 or _CONTROL.search(value):
            raise ValueError("must be 1 to 1000 characters with no control character")
        return value

    @field_validator("commit_hash", "parent_commit_hash")
    @classmethod
    def _object_name(cls, value: str) -> str:
        if not _SHA.fullmatch(value):
            raise ValueError("must be a full commit hash (40 or 64 lower-case hex digits)")
        return value

    @field_validator("file_path_before", "file_path_after")
    @classmethod
    def _inside_repository(cls, value: str | None) -> str | None:
        if value is None:
            return value
        parts = PurePosixPath(value).parts
        if (
            not parts
            or value.startswith("/")
            or ".." in parts
            or "\\" in value
            or _CONTROL.search(value)
        ):
            raise ValueError("must be a relative path inside the repository")
        return value

    @field_validator("language")
    @classmethod
    def _known_language(cls, value: str) -> str:
        if value not in ("coq", "lean"):
            raise ValueError("must be coq or lean")
        return value

    @model_validator(mode="after")
    def _usable(self) -> ExportedTask:
        if self.file_path_after is None:
            raise ValueError("file_path_after: a task edits a file that exists after the commit")
        synthesis = self.synthesis
        if synthesis is not None:
            if not isinstance(synthesis.get("kept", False), bool):
                raise ValueError("synthesis.kept must be true or false")
            said = synthesis.get("instruction")
            if synthesis.get("kept") and not isinstance(said, str):
                raise ValueError("synthesis: a kept task needs its instruction")
            if said is not None and said != self.instruction:
                raise ValueError("instruction differs from synthesis.instruction")
        if self.validation is not None and not isinstance(self.validation.get("kept"), bool):
            raise ValueError("validation.kept must be true or false")
        return self

    def mined(self) -> dict[str, Any]:
        """The mined record alone, as `ape mine` stores it."""
        return ApeTask.model_validate(
            self.model_dump(include=set(ApeTask.model_fields))
        ).model_dump()

    def benchmark(self) -> bool:
        """Whether `ape eval` attempts it: its synthesis kept it, or it carries an
        instruction and no synthesis record (a hand-written task)."""
        if self.synthesis is not None:
            return bool(self.synthesis.get("kept"))
        return self.instruction is not None


def export_run(
    run_dir: Path,
    out: Path,
    *,
    force: bool = False,
    bundle: bool = False,
    unvalidated: bool = False,
    repository: str | None = None,
) -> dict[str, Any]:
    """Write the run's validated tasks to `out` (`tasks.jsonl`, `manifest.json`, and with
    `bundle` the repository); the manifest. A run never validated is refused unless
    `unvalidated` (its filtered tasks then go out marked so); `repository` names the
    repository in the records instead of the path `ape mine` was given."""
    run_dir = Path(run_dir)
    store_path = run_dir / STORE_NAME
    if not store_path.is_file():
        raise InputError(f"{run_dir}: not an ape run (no {STORE_NAME}); run `ape mine` first")
    out = Path(out)
    _check_target(out, run_dir, force)
    with ApeStore(store_path, readonly=True) as store:
        records, manifest = _collect(store, run_dir, unvalidated, repository)
        source = store.get_meta("source")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        part = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".part", dir=out.parent))
    except OSError as exc:
        raise InputError(f"{out}: cannot write the export ({exc.strerror or exc})") from None
    try:
        with (part / TASKS_FILE).open("w", encoding="utf-8", newline="\n") as handle:
            for record in records:
                handle.write(record.model_dump_json() + "\n")
        if bundle:
            _write_bundle(run_dir, str(source or ""), part / BUNDLE_FILE)
            manifest["bundle"] = BUNDLE_FILE
        text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
        (part / MANIFEST_FILE).write_text(text, encoding="utf-8")
        part.chmod(0o755)  # mkdtemp's 0700 would keep the published folder private
        _put_in_place(part, out, force)
    except OSError as exc:
        shutil.rmtree(part, ignore_errors=True)
        raise InputError(f"{out}: cannot write the export ({exc.strerror or exc})") from None
    except BaseException:
        shutil.rmtree(part, ignore_errors=True)
        raise
    return manifest


def _check_target(out: Path, run_dir: Path, force: bool) -> None:
    """Refuse, before any work, a target that is a file, non-empty without `force`, or the
    run itself (or a folder holding it), which `force` would delete."""
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: exists and is not a folder")
    target, run = out.resolve(), run_dir.resolve()
    if target == run or target in run.parents:
        raise InputError(f"{out}: is the run folder or holds it; export to another folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise InputError(f"{out}: not empty; give --force to replace it")


def _put_in_place(part: Path, out: Path, force: bool) -> None:
    """`part` becomes `out` by rename: an empty `out` is replaced at once; a non-empty one
    (with `force`) is moved aside first and removed after."""
    try:
        os.rename(part, out)  # a missing or empty folder: one atomic step
        return
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise InputError(f"{out}: cannot write the export ({exc.strerror or exc})") from None
        if not force:
            raise InputError(f"{out}: not empty; give --force to replace it") from None
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
    os.rename(out, old / out.name)
    os.rename(part, out)
    shutil.rmtree(old, ignore_errors=True)


def _dicts(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A stage's stored results that are records (a damaged store may hold anything)."""
    return {k: v for k, v in results.items() if isinstance(v, dict)}


def _collect(
    store: ApeStore, run_dir: Path, unvalidated: bool, repository: str | None
) -> tuple[list[ExportedTask], dict[str, Any]]:
    try:
        mined = list(store.kept_tasks())
        validation = _dicts(store.results("validate"))
        synthesis = _dicts(store.results("synthesize"))
    except (ValueError, TypeError) as exc:  # JSON that is not ours
        raise InputError(f"{run_dir}: the run's store is damaged ({exc})") from None
    if validation:
        tasks = [t for t in mined if validation.get(str(t.get("id")), {}).get("kept")]
        if not tasks:
            raise InputError(
                f"{run_dir}: no validated task to export ({len(validation)} checked, none "
                f"kept; `formalbench report {run_dir}` counts why)"
            )
    elif not unvalidated:
        raise InputError(
            f"{run_dir}: no task has been validated (`ape mine --backend coq`); "
            "--unvalidated exports the tasks the filters kept, marked as not validated"
        )
    elif not mined:
        raise InputError(f"{run_dir}: the filters kept no task; nothing to export")
    else:
        tasks = mined
    named = repository or str(store.get_meta("source") or "")
    snapshots = _snapshot_index(run_dir)
    records = []
    for task in tasks:
        tid = str(task.get("id"))
        checked = validation.get(tid)
        synth = synthesis.get(tid)
        after = (checked or {}).get("after")
        toolchain = after.get("version") if isinstance(after, dict) else None
        try:
            records.append(
                ExportedTask.model_validate(
                    {
                        **task,
                        "repository": named,
                        "toolchain": toolchain if isinstance(toolchain, str) else None,
                        "validation": checked,
                        "instruction": (synth or {}).get("instruction"),
                        "synthesis": synth,
                        "snapshots": list(_snapshots_of(task, snapshots)),
                    }
                )
            )
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "record"
            raise InputError(
                f"{run_dir}: task {tid[:200]}: not an APE task record ({where}: {first['msg']})"
            ) from None
    return records, _manifest(store, run_dir, records, len(mined), validation, named)


def _snapshot_index(run_dir: Path) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(revision, file) -> [(snapshot id, built by)] from the trees' index, keeping only
    snapshots the run's store still holds (`BuiltTrees` writes the index)."""
    from formalbench.store.snapshots import SnapshotStore

    index = run_dir / "trees" / INDEX_NAME
    store = SnapshotStore(run_dir / "snapshots")
    found: dict[tuple[str, str], list[tuple[str, str]]] = {}
    try:
        lines = index.read_text(encoding="utf-8").splitlines() if index.is_file() else []
    except (OSError, UnicodeDecodeError):
        return found
    for line in lines:
        try:
            row = json.loads(line)
            key, value = (row["rev"], row["file"]), (row["snapshot"], row.get("built_by", ""))
        except (ValueError, TypeError, KeyError):
            continue  # a damaged line names nothing
        if not all(isinstance(x, str) for x in (*key, *value)) or not store.has(value[0]):
            continue
        if value not in found.setdefault(key, []):
            found[key].append(value)
    return found


def _snapshots_of(
    task: dict[str, Any], index: dict[tuple[str, str], list[tuple[str, str]]]
) -> Iterable[dict[str, str]]:
    for revision, rev, path in (
        ("after", task.get("commit_hash"), task.get("file_path_after")),
        ("before", task.get("parent_commit_hash"), task.get("file_path_before")),
    ):
        for snap, built_by in index.get((str(rev), str(path)), []):
            yield {"revision": revision, "id": snap, "built_by": built_by}


def _manifest(
    store: ApeStore,
    run_dir: Path,
    records: list[ExportedTask],
    kept_by_filters: int,
    validation: dict[str, dict[str, Any]],
    repository: str,
) -> dict[str, Any]:
    from formalbench import __version__

    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "formalbench": __version__,
        "source_run": str(run_dir.resolve()),
        "repository": repository,
        "bundle": None,
        "language": store.get_meta("language"),
        "tasks_file": TASKS_FILE,
        "validated": bool(validation),
        "counts": {
            "tasks": len(records),
            "commits": len({r.commit_hash for r in records}),
            "benchmark_tasks": sum(r.benchmark() for r in records),
            "with_instruction": sum(r.instruction is not None for r in records),
            "with_snapshots": sum(bool(r.snapshots) for r in records),
            "mined_commits": store.commit_count(),
            "kept_by_filters": kept_by_filters,
            "validation_checked": len(validation),
            "validation_kept": sum(bool(v.get("kept")) for v in validation.values()),
        },
        "toolchain": {
            "declared": sorted({r.toolchain_content for r in records if r.toolchain_content}),
            "validated_with": sorted({r.toolchain for r in records if r.toolchain}),
        },
        "mine_config": store.get_meta("config"),
    }


def _write_bundle(run_dir: Path, source: str, dest: Path) -> None:
    """The run's repository as one git bundle of all its refs: the clone `ape mine` made of
    a bundle, else the repository folder it was given."""
    clone = run_dir / "repo.git"
    repo = clone if (clone / "HEAD").is_file() else Path(source)
    if repo.is_file():  # a bundle given to `ape mine` and not cloned (yet): itself
        shutil.copyfile(repo, dest)
        return
    if not repo.is_dir():
        raise InputError(f"{run_dir}: its repository {source!r} is not here; cannot --bundle it")
    run = subprocess.run(
        ["git", "-C", str(repo), "bundle", "create", str(dest.resolve()), "--all"],
        capture_output=True,
        text=True,
    )
    if run.returncode != 0:
        why = (run.stderr.strip().splitlines() or ["git bundle failed"])[-1]
        raise InputError(f"{repo}: cannot bundle the repository ({why[:200]})")
