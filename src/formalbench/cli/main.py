"""The `formalbench` command. Each sub-command lives in a module of its own and registers here.

Errors the user can act on (`FormalbenchError`) become one line on stderr and exit code 2;
nothing below this layer prints. Usage errors that click finds while parsing the command line
(an unknown option, `--timeout abc`) and the shared option checks of `cli.options` (run while
parsing) get the same one-line form instead of typer's boxed panel: `FormalbenchGroup.main`
runs click in non-standalone mode and prints them itself. Help is click's plain text (no rich
panels), which wraps to the terminal, or 80 columns in a pipe, without cutting option names.

Sub-commands load lazily: `formalbench check` imports only the check module, never the
evaluation pipeline, the model SDKs or matplotlib, so a one-millisecond check does not pay
seconds of imports (see bench/bench_startup.py). `--help` imports them all to list them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import typer
import typer.main
from typer.core import TyperGroup

from formalbench.cli.helptext import tidy
from formalbench.core.errors import FormalbenchError

# pydantic looks for plugins (entry points of every installed distribution, through
# importlib.metadata) the first time it builds a model: ~0.04 s of every command's start-up
# for plugins formalbench does not use. A user who wants theirs sets the variable (e.g. to "").
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "1")


def _click_errors(name: str) -> tuple[type[BaseException], ...]:
    """Click's exception class `name`, from the click that typer runs on: recent typer
    releases vendor their own copy (`typer._click`, with `Abort` in `typer.exceptions`),
    older ones use the `click` package; typer's own class is taken when it has one, so the
    handler works with either."""
    import importlib

    found: list[type[BaseException]] = []
    for module in ("typer._click.exceptions", "typer.exceptions", "click.exceptions"):
        try:
            cls = getattr(importlib.import_module(module), name, None)
        except ImportError:
            continue
        if isinstance(cls, type) and issubclass(cls, BaseException):
            found.append(cls)
            break  # typer raises only the click it runs on (importing both costs start-up)
    return tuple(found)


def _click_message(exc: BaseException) -> str:
    """The one-line message of a click exception (`format_message`, which `BadParameter`
    overrides to name the parameter)."""
    return str(getattr(exc, "format_message", exc.__str__)())


NO_ARGS_IS_HELP = _click_errors("NoArgsIsHelpError")
USAGE_ERRORS = _click_errors("UsageError")  # BadParameter, NoSuchOption, MissingParameter...
CLICK_ERRORS = _click_errors("ClickException")
ABORTS = _click_errors("Abort")
USAGE_EXIT_CODE = 2
INTERRUPTED_EXIT_CODE = 130


def say_error(line: str) -> None:
    """One line on stderr. Plain text, not rich: rich costs a start-up import (~0.05 s) that
    `check --json` never needs, and would read `:x:` in a message as an emoji code."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


# Sub-command name -> the module under formalbench.cli that registers it on `app`.
LAZY_COMMANDS = {
    "check": "check",
    "eval": "evaluate",
    "report": "report",
    "formalize": "formalize",
    "review": "review",
    "metrics": "metrics",
    "compare": "compare",
    "snapshot": "snapshot",
    "ape": "ape",
    "stats": "stats",
    "construct": "construct",
    "library": "library",
    "toolchain": "toolchain",
    "serve": "serve",
}


class FormalbenchGroup(TyperGroup):
    """The command group, with click's own errors printed as one line (exit 2), whose
    sub-commands are imported only when they are looked up (see LAZY_COMMANDS), each with plain
    placeholders in its help (`cli.helptext`)."""

    def list_commands(self, ctx: Any) -> list[str]:
        names = [name for name in LAZY_COMMANDS if self.get_command(ctx, name) is not None]
        return names + [name for name in super().list_commands(ctx) if name not in names]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        found = super().get_command(ctx, cmd_name)
        if found is not None or cmd_name not in LAZY_COMMANDS:
            return None if found is None else tidy(found)
        if not _load(LAZY_COMMANDS[cmd_name]):
            return None
        for info in app.registered_commands:
            if info.name == cmd_name:
                command = typer.main.get_command_from_info(
                    info,
                    pretty_exceptions_short=app.pretty_exceptions_short,
                    rich_markup_mode=app.rich_markup_mode,
                )
                self.add_command(tidy(command), cmd_name)
                return command
        for group in app.registered_groups:  # a command with sub-commands (`snapshot put` …)
            if group.name == cmd_name:
                command = typer.main.get_group_from_info(
                    group,
                    pretty_exceptions_short=app.pretty_exceptions_short,
                    suggest_commands=True,
                    rich_markup_mode=app.rich_markup_mode,
                )
                self.add_command(tidy(command), cmd_name)
                return command
        return None

    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:  # a caller that handles click's exceptions itself
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            outcome = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except NO_ARGS_IS_HELP as exc:  # `formalbench` or `formalbench ape` alone: the help
            exc.show()  # type: ignore[attr-defined]  # found by name (see _click_errors)
            sys.exit(getattr(exc, "exit_code", USAGE_EXIT_CODE))
        except USAGE_ERRORS as exc:
            hint = ""
            ctx = getattr(exc, "ctx", None)  # the classes are found by name: read them as Any
            if ctx is not None and ctx.command.get_help_option(ctx) is not None:
                hint = f" (see `{ctx.command_path} {ctx.help_option_names[0]}`)"
            say_error(f"formalbench: error: {_click_message(exc)}{hint}")
            sys.exit(USAGE_EXIT_CODE)
        except CLICK_ERRORS as exc:  # e.g. a FileError of a file argument
            say_error(f"formalbench: error: {_click_message(exc)}")
            sys.exit(getattr(exc, "exit_code", 1))
        except FormalbenchError as exc:  # an option check of cli.options, run while parsing
            say_error(f"formalbench: error: {exc}")
            sys.exit(exc.exit_code)
        except ABORTS:  # end of input at a prompt
            say_error("formalbench: interrupted")
            sys.exit(INTERRUPTED_EXIT_CODE)
        # Non-standalone click returns the exit code of a `typer.Exit`/`ctx.exit` (our
        # commands return None on success).
        sys.exit(outcome if isinstance(outcome, int) else 0)


app = typer.Typer(
    name="formalbench",
    cls=FormalbenchGroup,
    help="Build and evaluate formal-mathematics benchmarks under a strict verifier.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)

F = TypeVar("F", bound=Callable[..., Any])


def user_errors(func: F) -> F:
    """Turn a FormalbenchError into one stderr line and its exit code, never a traceback.

    A command with a `record` parameter (`cli.options.RecordOption`, `--record FILE`) has
    every model it makes record to FILE while it runs, and no longer (the recording is
    switched off however the command ends)."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            if kwargs.get("record") is None:
                return func(*args, **kwargs)
            from formalbench.llm.registry import record_every_model

            record_every_model(kwargs["record"])
            try:
                return func(*args, **kwargs)
            finally:
                record_every_model(None)
        except FormalbenchError as exc:
            say_error(f"formalbench: error: {exc}")
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt as exc:  # a run stopped by a signal has said so already
            if not hasattr(exc, "exit_code"):
                say_error("formalbench: interrupted")
            raise typer.Exit(getattr(exc, "exit_code", INTERRUPTED_EXIT_CODE)) from None

    return wrapper  # type: ignore[return-value]


def _show_version(value: bool) -> None:
    """`formalbench --version`: the installed distribution's version (the source tree's
    `__version__` when run from a checkout that is not installed)."""
    if not value:
        return
    from importlib.metadata import PackageNotFoundError, version

    from formalbench import __version__

    try:
        found = version("formalbench")
    except PackageNotFoundError:
        found = __version__
    sys.stdout.write(f"formalbench {found}\n")
    raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        is_eager=True,
        callback=_show_version,
        help="Print the version and exit.",
    ),
) -> None:
    """Build and evaluate formal-mathematics benchmarks under a strict verifier."""


def _load(module: str) -> bool:
    """Import the sub-command module `module` (it adds its command to `app`); False when it
    does not exist (a command still being written is simply absent)."""
    import importlib

    try:
        importlib.import_module(f"formalbench.cli.{module}")
    except ModuleNotFoundError as exc:
        if exc.name != f"formalbench.cli.{module}":
            raise
        return False
    return True


def main() -> None:  # pragma: no cover - thin wrapper for `python -m formalbench`
    sys.exit(app())
