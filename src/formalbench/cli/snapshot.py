"""`formalbench snapshot put|restore|stats|gc|ls|rm`: the content-addressed snapshot store.

The store module is imported inside each command so that `formalbench --help` stays fast.
Bad input (a missing directory, an unknown id, a non-store folder) is one line and exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from formalbench.cli.main import app, user_errors

if TYPE_CHECKING:
    from formalbench.store.snapshots import SnapshotStore

snapshot_app = typer.Typer(
    help="Content-addressed snapshots of build trees (put, restore, stats, gc).",
    no_args_is_help=True,
)
app.add_typer(snapshot_app, name="snapshot")

Store = Annotated[Path, typer.Option("--store", help="The snapshot store folder (created by put).")]
Json = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of text.")]


def _open(store: Path, must_exist: bool = True) -> SnapshotStore:
    from formalbench.core.errors import InputError
    from formalbench.store.snapshots import SnapshotStore

    if must_exist and not (store / "FORMAT").is_file():
        raise InputError(
            f"{store}: not a snapshot store (no FORMAT file; `snapshot put` makes one)"
        )
    return SnapshotStore(store)


def _emit(record: dict, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(record, sort_keys=True))
    else:
        from formalbench.reporting.fmt import plain

        for key, value in record.items():
            typer.echo(f"{key}: {plain(value)}")


@snapshot_app.command("put")
@user_errors
def put(
    tree: Annotated[Path, typer.Argument(help="The directory to snapshot.")],
    store: Store,
    snapshot_id: Annotated[
        str, typer.Option("--id", help="The snapshot's id (e.g. a commit hash).")
    ],
    exclude: Annotated[
        list[str] | None,
        typer.Option("--exclude", help="A path relative to DIR to leave out (repeatable)."),
    ] = None,
    as_json: Json = False,
) -> None:
    """Store DIR under --id (idempotent for the same content)."""
    from formalbench.cli.progress import counted

    info = _open(store, must_exist=False).put(
        tree, snapshot_id, progress=None if as_json else counted, exclude=exclude or ()
    )
    _emit(info.as_dict(), as_json)


@snapshot_app.command("restore")
@user_errors
def restore(
    snapshot_id: Annotated[str, typer.Argument(help="The snapshot to restore.")],
    store: Store,
    to: Annotated[Path, typer.Option("--to", help="Destination: absent or an empty directory.")],
    mode: Annotated[
        str, typer.Option("--mode", help="auto, hardlink (read-only files), reflink or copy.")
    ] = "auto",
    verify: Annotated[bool, typer.Option("--verify", help="Check every file's hash.")] = False,
    as_json: Json = False,
) -> None:
    """Recreate snapshot ID at --to."""
    from formalbench.cli.progress import counted

    info = _open(store).restore(
        snapshot_id,
        to,
        mode=mode,  # type: ignore[arg-type]  # checked by restore
        verify=verify,
        progress=None if as_json else counted,
    )
    _emit(info.as_dict(), as_json)


@snapshot_app.command("stats")
@user_errors
def stats(store: Store, as_json: Json = False) -> None:
    """Snapshots, files, logical / unique / stored bytes and the dedup ratio."""
    _emit(_open(store).stats().as_dict(), as_json)


@snapshot_app.command("gc")
@user_errors
def gc(
    store: Store,
    drop_cache: Annotated[
        bool, typer.Option("--drop-cache", help="Empty the link cache too.")
    ] = False,
    as_json: Json = False,
) -> None:
    """Remove objects no snapshot references."""
    _emit(_open(store).gc(drop_cache=drop_cache).as_dict(), as_json)


@snapshot_app.command("ls")
@user_errors
def ls(store: Store) -> None:
    """List the snapshot ids."""
    for snapshot_id in _open(store).ids():
        typer.echo(snapshot_id)


@snapshot_app.command("rm")
@user_errors
def rm(snapshot_id: Annotated[str, typer.Argument()], store: Store) -> None:
    """Forget a snapshot (its objects go at the next gc)."""
    _open(store).remove(snapshot_id)
