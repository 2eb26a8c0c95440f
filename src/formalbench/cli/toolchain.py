"""`formalbench toolchain install|list|remove NAME`: provisioned Coq/Rocq toolchains.

The work is in `toolchains/provision.py`; this module only shows progress (`cli.progress`:
the downloaded MiB, the unpacked packages and the smoke files) and prints the outcome.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from formalbench.cli.main import app, user_errors
from formalbench.cli.options import seconds

toolchain_app = typer.Typer(
    help="Coq/Rocq toolchains: pinned Debian roots in the user's cache, run through bwrap.",
    no_args_is_help=True,
)
app.add_typer(toolchain_app, name="toolchain")

_PHASES = {"download": "download", "extract": "unpack", "smoke": "smoke test"}
_UNITS = {
    "download": ("MiB", "MiB"),
    "extract": ("package", "packages"),
    "smoke": ("file", "files"),
}


@toolchain_app.command("install")
@user_errors
def install_command(
    name: Annotated[str, typer.Argument(help="Toolchain to install (see `toolchain list`).")],
    force: Annotated[bool, typer.Option(help="Install again even if installed.")] = False,
    keep_downloads: Annotated[
        bool, typer.Option(help="Keep the downloaded .deb files after a successful install.")
    ] = False,
) -> None:
    """Download the toolchain's pinned packages, unpack them into a root in the user's cache,
    smoke-test it (the standard library and every library must load) and only then make it
    visible. Re-running continues an interrupted download."""
    from formalbench.cli.progress import LongProgress, Stage
    from formalbench.core.errors import InputError
    from formalbench.toolchains import manifest, provision

    if name == manifest.HOST:
        raise InputError("`host` is the coqc on PATH: there is nothing to install")
    manifest.load(name)  # an unknown name: one line before anything starts
    stages: dict[str, Stage] = {}
    resumed: dict[str, int] = {}

    def show(phase: str, done: int, total: int) -> None:
        if phase not in stages:
            unit, units = _UNITS[phase]
            stages[phase] = bars.stage(_PHASES[phase], unit=unit, units=units)
            # the download's first report, before any fetch, is what an earlier try left
            resumed[phase] = done if phase == "download" else 0
        skip = resumed[phase]
        if phase == "download":  # in MiB; all of it is all of it, however small

            def mib(n: int, whole: int = total) -> int:
                return max(whole >> 20, 1) if n >= whole else n >> 20

            done, total, skip = mib(done), mib(total), mib(skip)
        stages[phase].update(done, total, resumed=skip)

    with LongProgress() as bars:
        done = provision.install(name, progress=show, force=force, keep_downloads=keep_downloads)
    if done.already:
        sys.stdout.write(f"{name} is already installed in {done.root} (Coq {done.coq_version})\n")
        return
    sys.stdout.write(
        f"installed {name} (Coq {done.coq_version}) in {done.root}: "
        f"{done.bytes / 2**30:.2f} GiB, {done.seconds:.0f}s\n"
    )


@toolchain_app.command("list")
@user_errors
def list_command() -> None:
    """Installable and installed toolchains, and the host's coqc; `*` marks the default."""
    from formalbench.toolchains import manifest, provision
    from formalbench.toolchains.toolchain import default_name, host_version

    default = default_name()
    rows = []
    for name in manifest.names():
        record = provision.record_of(name)
        state = (
            f"installed, Coq {record['coq_version']}, {provision.root_of(name)}"
            if record
            else "not installed"
        )
        rows.append((name, state))
    host = host_version()
    rows.append((manifest.HOST, f"coqc on PATH, Coq {host}" if host else "no coqc on PATH"))
    for name, state in rows:
        mark = "*" if name == default else " "
        sys.stdout.write(f"{mark} {name:<10} {state}\n")


@toolchain_app.command("remove")
@user_errors
def remove_command(
    name: Annotated[str, typer.Argument(help="Installed toolchain to delete.")],
) -> None:
    """Delete an installed toolchain's root (and any leftover downloads)."""
    from formalbench.core.errors import InputError
    from formalbench.toolchains import manifest, provision

    if name == manifest.HOST:
        raise InputError("`host` is the coqc on PATH: formalbench does not remove it")
    if not provision.remove(name):
        raise InputError(f"toolchain {name!r} is not installed")
    sys.stdout.write(f"removed {name}\n")


@toolchain_app.command("run")
@user_errors
def run_command(
    name: Annotated[str, typer.Argument(help="Installed toolchain (or `host`).")],
    command: Annotated[
        list[str], typer.Argument(help="The command and its arguments, after `--`.")
    ],
    folder: Annotated[
        str, typer.Option("--in", help="The folder it runs in, the one it may write.")
    ] = ".",
    timeout: Annotated[
        float, typer.Option(callback=seconds, help="Seconds before it is stopped.")
    ] = 3600.0,
) -> None:
    """Run COMMAND with the toolchain's programs, e.g. build a Coq project with the coqc the
    checks use: `formalbench toolchain run rocq-9.2 --in DIR -- make` (a project's `.vo`
    files load only in the Coq that compiled them). It runs in the toolchain's sandbox: its
    root as `/`, the folder --in writable, no network; its output is printed when it ends
    and its exit code is this command's."""
    import subprocess
    from pathlib import Path

    from formalbench.core.errors import InputError
    from formalbench.toolchains.toolchain import resolve

    where = Path(folder).expanduser()
    if not where.is_dir():
        raise InputError(f"--in {folder}: no such folder")
    chain = resolve(name)
    try:
        done = chain.run(list(command), cwd=where.resolve(), timeout=timeout)
    except subprocess.TimeoutExpired:
        raise InputError(f"{' '.join(command)}: stopped after {timeout:g}s (--timeout)") from None
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    raise typer.Exit(done.returncode)
