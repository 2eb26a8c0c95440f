"""The one validation layer for options that many commands share: counts (workers, samples,
limits, folds), time limits and input paths.

Each check is a click parameter callback, so a bad value is refused while the command line is
parsed, before any work starts, and every command words it the same way: one line naming the
option and what is wrong, exit 2 (`FormalbenchGroup.main` prints it). A command declares an
option with the helpers below instead of its own `if workers < 1` test:

    workers: Annotated[int, typer.Option(callback=at_least(1), help=...)] = 2
    timeout: Annotated[float, typer.Option(callback=seconds, help=...)] = 60.0
    pairs: Annotated[Path, typer.Argument(callback=existing_file, help=...)]

`tests/test_cli_options.py` walks every command and fails when an option with a shared name
(see SHARED) is declared without one of these checks.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from formalbench.core.errors import InputError

#: Option names (click's parameter names) whose values every command must check here.
SHARED = {
    "workers": "count",
    "concurrency": "count",
    "model_concurrency": "count",
    "samples": "count",
    "limit": "count",
    "validate_limit": "count",
    "sample_tasks": "count",
    "folds": "count",
    "timeout": "seconds",
    "toolchain": "toolchain",
}


def _label(param: Any) -> str:
    """How a message names the parameter: `--workers` for an option, `candidate` for an
    argument (as `check` names its files)."""
    opts = getattr(param, "opts", None) or []
    if getattr(param, "param_type_name", "") == "option" and opts:
        return str(max(opts, key=len))
    return str(param.name or "value").replace("_", " ")


def at_least(low: int) -> Callable[[Any, Any, Any], Any]:
    """A callback refusing a whole number below `low` (None, an option left out, passes)."""

    def check(_ctx: Any, param: Any, value: Any) -> Any:
        if value is None:
            return value
        values = value if isinstance(value, (list, tuple)) else [value]
        for item in values:
            if item < low:
                raise InputError(f"{_label(param)} {item}: must be at least {low}")
        return value

    check.formalbench_check = "count"  # type: ignore[attr-defined]  # read by the tests
    return check


def fraction(_ctx: Any, param: Any, value: float | None) -> float | None:
    """A callback for a share or threshold: a number from 0 to 1."""
    if value is not None and not 0.0 <= value <= 1.0:
        raise InputError(f"{_label(param)} {value:g}: must be between 0 and 1")
    return value


fraction.formalbench_check = "fraction"  # type: ignore[attr-defined]


def port(_ctx: Any, param: Any, value: int | None) -> int | None:
    """A callback for a TCP port: 0 (any free one) to 65535."""
    if value is not None and not 0 <= value <= 65535:
        raise InputError(
            f"{_label(param)} {value}: not a port number (0-65535; 0 picks a free one)"
        )
    return value


port.formalbench_check = "port"  # type: ignore[attr-defined]


def seconds(_ctx: Any, param: Any, value: float | None) -> float | None:
    """A callback for a time limit option: a positive, finite number of seconds
    (`pipelines.run_config.check_seconds`, imported here only when a time is given, so that
    commands without one do not load pydantic at start-up); None passes."""
    if value is None:
        return None
    from formalbench.pipelines.run_config import check_seconds

    return check_seconds(_label(param), value)


seconds.formalbench_check = "seconds"  # type: ignore[attr-defined]


def path_problem(path: Path, *, folder: bool = False, either: bool = False) -> str | None:
    """What is wrong with an input path (a file; a folder; `either`), in the words every
    command uses, or None."""
    if not path.exists():
        return (
            "no such file or folder" if either else "no such folder" if folder else "no such file"
        )
    if either:
        return None
    if folder and not path.is_dir():
        return "is a file, not a folder"
    if not folder and path.is_dir():
        return "is a directory, not a file"
    return None


def _path_check(folder: bool, either: bool) -> Callable[[Any, Any, Any], Any]:
    def check(_ctx: Any, param: Any, value: Any) -> Any:
        if value is None:
            return value
        for item in value if isinstance(value, (list, tuple)) else [value]:
            problem = path_problem(Path(item), folder=folder, either=either)
            if problem is not None:
                raise InputError(f"{_label(param)} {str(item)!r}: {problem}")
        return value

    check.formalbench_check = "path"  # type: ignore[attr-defined]
    return check


#: Callbacks for an input that must exist: a file, a folder, or either.
existing_file = _path_check(folder=False, either=False)
existing_folder = _path_check(folder=True, either=False)
existing_path = _path_check(folder=False, either=True)


def read_text(path: Path | str, role: str) -> str:
    """The UTF-8 text of an input file, or an InputError in the same words as `check`'s
    (`role 'path': no such file`, `... is empty`, ...): the shared path check, then
    `pipelines.pairs.read_source`."""
    from formalbench.pipelines.pairs import read_source

    problem = path_problem(Path(path))
    if problem is not None:
        raise InputError(f"{role} {str(path)!r}: {problem}")
    return read_source(path, role)


def axiom_policy(
    allow_axiom: list[str] | None, allow_axioms: list[str] | None
) -> tuple[list[str], list[str] | None]:
    """`--allow-axiom NAME` (repeatable: fully qualified axiom names) and `--allow-axioms
    PRESET` (repeatable, or comma-separated: presets of `checking/coq_presets.py`, `none`
    for no preset, `standard` for the default ones) as (names, presets; None: the default),
    each checked here: a bad one is one line naming it."""
    from formalbench.checking.coq_presets import check_axiom_name, expand

    names = [check_axiom_name(n.strip()) for n in allow_axiom or []]
    if not allow_axioms:
        return names, None
    given = [p.strip() for item in allow_axioms for p in item.split(",") if p.strip()]
    try:
        return names, expand(given)
    except InputError as bad:
        raise InputError(f"--allow-axioms: {bad}") from None


ALLOW_AXIOM_HELP = (
    "Coq: a library axiom proofs may rest on besides the presets, fully qualified "
    "(e.g. Coq.Logic.Classical_Prop.classic); repeatable."
)
ALLOW_AXIOMS_HELP = (
    "Coq: the axiom presets proofs may rest on, replacing the default (standard: classical, "
    "extensionality, proof-irrelevance, uip, choice, reals, primitive, mathcomp-classical); "
    "none for no preset; repeatable or comma-separated."
)


def toolchain(_ctx: Any, param: Any, value: str | None) -> str | None:
    """A callback for `--toolchain NAME` (a provisioned toolchain, or `host`): the name must be
    installed, and it becomes the toolchain of every Coq run of this command (it is put in
    FORMALBENCH_TOOLCHAIN, which `toolchains.toolchain.resolve` reads, so the backends a
    command makes deep inside, BEq's and APE's included, and its worker processes use it)."""
    if value is None:
        return None
    import os

    from formalbench.toolchains.toolchain import ENV_VAR, resolve

    name = value.strip()
    resolve(name)  # unknown or not installed: one line, before any work starts
    os.environ[ENV_VAR] = name
    return name


toolchain.formalbench_check = "toolchain"  # type: ignore[attr-defined]

TOOLCHAIN_HELP = (
    "Coq toolchain for every check: an installed one (`formalbench toolchain list`) or "
    "`host` (the coqc on PATH). Default: the tasks' own `toolchain` field where all name "
    "one, else FORMALBENCH_TOOLCHAIN, else the newest installed, else host."
)


# The options every Coq command spells alike (one declaration, so the wording stays one).
AllowAxiomOption = Annotated[list[str] | None, typer.Option("--allow-axiom", help=ALLOW_AXIOM_HELP)]
AllowAxiomsOption = Annotated[
    list[str] | None, typer.Option("--allow-axioms", help=ALLOW_AXIOMS_HELP)
]
ToolchainOption = Annotated[str | None, typer.Option(callback=toolchain, help=TOOLCHAIN_HELP)]


def record(_ctx: Any, param: Any, value: Path | None) -> Path | None:
    """A callback for `--record FILE`, the file every model of the command (the prover, a
    judge, an ensemble's) appends each request it answers to, in the format `replay:FILE`
    reads (`cli.main.user_errors` turns the recording on for the length of the command).
    FILE must be a file that can be appended to, or be creatable: a folder, or a place that
    cannot be written, is one line now, not an error after the first paid call. Nothing is
    created here (parsing a command line has no side effect)."""
    if value is None:
        return None
    import os

    path = Path(value)
    if path.is_dir():
        raise InputError(f"{_label(param)} {str(path)!r}: is a directory, not a file")
    if path.exists():
        writable = os.access(path, os.W_OK)
    else:  # the nearest folder that exists must let the missing ones be made
        folder = path.parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        writable = folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)
    if not writable:
        raise InputError(f"{_label(param)} {str(path)!r}: cannot be written")
    return path


record.formalbench_check = "record"  # type: ignore[attr-defined]

RECORD_HELP = (
    "Append every model request and its answer to FILE (JSON Lines), so that "
    "`--model replay:FILE` replays the run offline; appends to an existing file."
)
RecordOption = Annotated[
    Path | None, typer.Option("--record", metavar="FILE", callback=record, help=RECORD_HELP)
]


def renamed(new: str) -> Callable[[Any, Any, Any], Any]:
    """A callback for the old, hidden spelling of an option now called `new`: it still
    works, with a one-line note on stderr saying the new name (the command merges the two
    values, see `pick_renamed`)."""

    def note(_ctx: Any, param: Any, value: Any) -> Any:
        if value is not None and value != [] and value != ():
            import sys

            sys.stderr.write(
                f"formalbench: note: {_label(param)} is now {new} (the old name still works)\n"
            )
        return value

    note.formalbench_check = "renamed"  # type: ignore[attr-defined]
    return note


def pick_renamed(new: str, value: Any, old: str, old_value: Any) -> Any:
    """The value of an option given under its new name `new` or its old one `old`; both,
    with different values, is one line."""
    if old_value is None:
        return value
    if value is not None and value != old_value:
        raise InputError(
            f"{new} {value} and {old} {old_value}: give one ({old} is {new}'s old name)"
        )
    return old_value
