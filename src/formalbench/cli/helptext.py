"""Plain placeholders in `--help`, the same in every command.

The typer this project runs on writes a required argument as `{dataset}` in the usage line
and a repeatable option's value as `<list[str]>`: neither is how a user types the command.
`tidy(command)` rewrites them once, when the command is built (`cli.main`): an argument is its
name in capitals (`DATASET`, `[RUN_DIR]` when optional, `FILES...` when it takes many), a
repeatable option shows the value of one use (`--label <str>`) and says it is repeatable, a
bounded number is `<int>` (its bounds follow as `[x>=1]`), not `<int range>`.
"""

from __future__ import annotations

import re
from typing import Any

_LIST = re.compile(r"^<list\[(.*)\]>$")


def _usage(name: str, required: bool, many: bool) -> str:
    shown = name if required else f"[{name}]"
    return shown + ("..." if many else "")


def tidy(command: Any) -> Any:
    """`command` (and its sub-commands) with plain placeholders; returns it."""
    for sub in (getattr(command, "commands", None) or {}).values():
        tidy(sub)
    for param in getattr(command, "params", []):
        kind = getattr(param, "param_type_name", "")
        if kind == "argument" and param.metavar is None:
            name = str(param.name or "value").upper()
            many = param.nargs != 1
            usage = _usage(name, bool(param.required), many)
            param.metavar = name
            # an instance attribute wins over typer's method, which adds the braces
            param.get_usage_pieces = lambda _ctx, shown=usage: [shown]
            typed = getattr(param, "display_type", None)
            found = _LIST.match(str(typed(None) if callable(typed) else ""))
            if found:  # `COMMAND <list[str]>`: the type of one value, as for options
                one = f"<{found.group(1).lower()}>..."
                param.display_type_rich = lambda ctx=None, one=one: one
        elif kind == "option" and param.metavar is None:
            typed = getattr(param, "display_type", None)
            label = str(typed(None) if callable(typed) else "")
            found = _LIST.match(label)
            if found and getattr(param, "multiple", False):
                param.metavar = f"<{found.group(1).lower()}>"
                text = param.help or ""
                if "repeat" not in text.lower():
                    param.help = (text + " Repeatable.").strip()
            elif label.endswith(" range>"):  # `<int range>`: the range is shown as [x>=1]
                param.metavar = label.removesuffix(" range>") + ">"
    return command
