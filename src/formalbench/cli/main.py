"""The `formalbench` command. Each sub-command lives in a module of its own and registers here.

Errors the user can act on (`FormalbenchError`) become one line on stderr and exit code 2;
nothing below this layer prints.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import typer
from rich.console import Console

from formalbench.core.errors import FormalbenchError

app = typer.Typer(
    name="formalbench",
    help="Build and evaluate formal-mathematics benchmarks under a strict verifier.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)

F = TypeVar("F", bound=Callable[..., Any])


def user_errors(func: F) -> F:
    """Turn a FormalbenchError into one stderr line and its exit code, never a traceback."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except FormalbenchError as exc:
            err_console.print(f"formalbench: error: {exc}", markup=False)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            err_console.print("formalbench: interrupted", markup=False)
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


def _register() -> None:
    """Import the sub-command modules; each adds its command to `app`."""
    import importlib

    for module in ("check", "evaluate", "report", "formalize", "review"):
        try:
            importlib.import_module(f"formalbench.cli.{module}")
        except ModuleNotFoundError as exc:  # a command still being written is simply absent
            if exc.name != f"formalbench.cli.{module}":
                raise


_register()


def main() -> None:  # pragma: no cover - thin wrapper for `python -m formalbench`
    sys.exit(app())
