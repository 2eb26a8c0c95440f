"""`formalbench library path --backend coq|lean`: where the shipped AMBER library is, so that
users can put it in their own projects (Coq: `-Q <path> Formalbench`; Lean: copy or require
the folder holding `Amber.lean`)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from formalbench.cli.main import app, user_errors
from formalbench.cli.options import toolchain as toolchain_check
from formalbench.core.errors import InputError

library_app = typer.Typer(
    help="The AMBER library (MathProblem, relaxes, LP, DualProblem) shipped with formalbench.",
    no_args_is_help=True,
)
app.add_typer(library_app, name="library")


@library_app.command("path")
@user_errors
def path_command(
    backend: Annotated[str, typer.Option(help="coq (the compiled folder) or lean (sources).")],
    toolchain: Annotated[
        str | None,
        typer.Option(
            callback=toolchain_check,
            help="Coq: compile for this toolchain (`formalbench toolchain list`); default host.",
        ),
    ] = None,
) -> None:
    """Print the library's folder: Coq, compiled for the coqc on PATH or the toolchain named
    (compiling it on first use), to pass as `-Q <folder> Formalbench`; Lean, the folder
    holding `Amber.lean`."""
    if backend == "coq":
        from formalbench.backends.coq_library import compiled_library
        from formalbench.toolchains.toolchain import HOST, resolve

        # the user's own coqc is the host's unless a toolchain is named
        sys.stdout.write(f"{compiled_library(resolve(toolchain or HOST))}\n")
    elif backend == "lean":
        from formalbench.library import LEAN_SOURCE_DIR

        sys.stdout.write(f"{LEAN_SOURCE_DIR}\n")
    else:
        raise InputError(f"--backend {backend!r}: expected coq or lean")
