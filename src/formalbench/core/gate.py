"""The one gate in front of every proof-assistant run: no file, process or I/O command passes.

A proof assistant is a program runner. Coq can write files (`Redirect "f"`, `Extraction "f"`,
`Separate Extraction`, `Print Universes "f"`), read or load them (`Load`, `Add LoadPath`,
`Declare ML Module`, `From _ Extra Dependency "f"`, `Locate File`), change directory (`Cd`)
or drop to OCaml (`Drop`); Lean runs code while elaborating (`#eval`, `run_cmd`, `run_elab`,
`run_meta`, `run_tac`, `initialize`, an `IO` action, a native `extern`). Whoever wrote the text
(a model, a reviewer, the original task itself) and whatever the verifier policy says, text
with such a command is never given to the assistant: `Backend` runs `refusal` before every
`check`, `check_many` and `acheck` of every subclass (see `backends/base.py`), so no caller
can forget it. A refused text gets a `CheckResult` with status `refused` and one error per
command found, naming it; the verifier turns those into `forbidden_construct` findings.

The gate also refuses a text larger than `max_source_bytes()` (4 MB unless the environment
variable FORMALBENCH_MAX_SOURCE_BYTES says otherwise) before reading it further: every text
layer is linear or worse in the size of its input, and a 50 MB candidate would spend a minute
there under a 10 s limit. The limit is far above any real task (a long Mathlib file is
~300 KB).

Two more kinds of text are refused for the same reason, that the assistant would run or read
it otherwise than everything before it assumes:

* Coq options that name a file or start a program (`Set NativeCompute Profiling`, `Set
  NativeCompute Profile Filename "f"`, `Set Dump Arith "f"`; `COQ_FILE_OPTIONS` below, derived
  from Coq 8.16's own option table), in any form (`Set`, `Unset`, `Test`, with attributes);
* invisible and control characters in code (`core/hidden_chars.py`): U+00A0 inside a Coq
  name, a zero-width character inside a Lean «name» and the like. Strings and comments keep
  them; the finding names the character and where it stands.

The lists are a deny-list over code tokens (strings and comments never match, syntax
quotations and macro bodies always do), so they err towards refusing: a Lean identifier named
`IO.foo` or a Coq constant named `Load` is refused too. A deny-list cannot be complete for
Lean, whose elaborators can build commands from strings; the sandbox (`backends/sandbox.py`)
is the second line. Commands that only break soundness (`Unset Guard Checking`, `sorry`) are
the verifier's business (`checking/forbidden.py`), not the gate's: they are harmless to run.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from formalbench.core.hidden_chars import hidden_in_code
from formalbench.core.lexer import Token, plain_name, tokenize, words
from formalbench.core.records import (
    CheckResult,
    CheckStatus,
    Diagnostic,
    Finding,
    Language,
    Reason,
    Severity,
)

DEFAULT_MAX_SOURCE_BYTES = 4 * 1024 * 1024
OVERSIZED = "oversized source"  # the subject of the finding for a text over the size cap
GATE_VERSION = "2"  # part of the verifier's cache key: a kept verdict predates a stricter gate

# Coq words refused wherever they stand as code (the command itself, or a name so rare in
# mathematics that a false refusal costs nothing): word -> what the finding names.
_COQ_ANYWHERE = {
    "Redirect": "Redirect",
    "Extraction": "Extraction",  # Extraction "f", Separate/Recursive Extraction, Extraction Library
    "Load": "Load",
    "LoadPath": "Add LoadPath",  # Add [Rec] LoadPath, Remove LoadPath
    "Dependency": "Extra Dependency",  # From lib Extra Dependency "file" as id
}
# Coq 8.16 options that name a file or start a program, by the words of their name: the review
# of every option of `Print Options.` and table of `Print Tables.` (coqc 8.16.1 with every
# shipped plugin loaded: micromega, extraction, ltac2, ssreflect, funind, rtauto ...), kept
# with its verdicts in docs/decisions.md ("Gate: options and characters"). The prefixes of a
# command in 8.16 are Time, Redirect "f", Timeout n, Fail and Succeed: only Redirect names a
# file (refused above). Refused wherever the words stand in a row (Set, Unset, Test ...).
COQ_FILE_OPTIONS: dict[tuple[str, ...], str] = {
    ("NativeCompute", "Profiling"): "NativeCompute Profiling",  # runs `perf` around native code
    ("NativeCompute", "Profile", "Filename"): "NativeCompute Profile Filename",  # its output
    ("Dump", "Arith"): "Dump Arith",  # micromega writes `<f><hash>.v`; `../f` leaves the folder
}
_OPTION_STARTS = frozenset(words[0] for words in COQ_FILE_OPTIONS)

# Coq words refused only as the first word of a sentence (they make sensible variable names).
_COQ_COMMANDS = {"Cd": "Cd", "Drop": "Drop"}
_COQ_PREFIXES = words("Time Fail Succeed Timeout Local Global Export Polymorphic Monomorphic")

# Lean commands that run code at elaboration time, and names that do I/O or reach native code.
_LEAN_COMMANDS = words(
    "#eval #exit #load run_cmd run_elab run_meta run_tac initialize builtin_initialize"
)
_LEAN_NAMES = words(
    "IO EIO BaseIO unsafeIO unsafeEIO unsafeBaseIO extern implemented_by "
    "evalConst evalConstCheck evalExpr evalDecl runParserCategory runFrontend"
)
_LEAN_PREFIXES = ("IO.", "EIO.", "BaseIO.", "System.", "Lean.Elab.Frontend", "Lean.Elab.IO")
_LEAN_ATTRIBUTES = words("init builtin_init")  # @[init f]: run f when the module loads


def max_source_bytes() -> int:
    """The size cap; FORMALBENCH_MAX_SOURCE_BYTES overrides the default (a positive integer)."""
    raw = os.environ.get("FORMALBENCH_MAX_SOURCE_BYTES", "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    return DEFAULT_MAX_SOURCE_BYTES


@dataclass(frozen=True)
class Unsafe:
    """One refused command and where it starts."""

    command: str
    line: int | None = None
    column: int | None = None
    why: str | None = None  # the message, where the command-shaped one does not fit

    @property
    def message(self) -> str:
        if self.why is not None:
            return self.why
        if self.command == OVERSIZED:
            return (
                f"the text is larger than {max_source_bytes()} bytes and is not checked "
                "(FORMALBENCH_MAX_SOURCE_BYTES raises the cap)"
            )
        return (
            f"`{self.command}` at line {self.line}, column {self.column} reaches files, "
            "processes or native code: text with it is never given to the proof assistant"
        )


def _sentence_start(tokens: list[Token], i: int) -> bool:
    """Whether Coq token i begins a command (after `.`, bullets, braces and prefixes)."""
    j = i - 1
    while j >= 0:
        tok = tokens[j]
        if tok.kind == "end":
            return True
        if tok.kind == "symbol" and tok.text in ("-", "+", "*", "{", "}"):
            j -= 1
            continue
        if tok.kind == "ident" and tok.text in _COQ_PREFIXES:
            j -= 1
            continue
        if tok.kind == "number" and j > 0 and tokens[j - 1].text == "Timeout":
            j -= 1
            continue
        return False
    return True


def _coq_options(tokens: list[Token]) -> list[Unsafe]:
    """The options of `COQ_FILE_OPTIONS` named in code (a dotted name is split into words)."""
    parts = [(part, tok) for tok in tokens if tok.kind == "ident" for part in tok.text.split(".")]
    found: list[Unsafe] = []
    for i, (part, tok) in enumerate(parts):
        if part not in _OPTION_STARTS:
            continue
        for phrase, name in COQ_FILE_OPTIONS.items():
            if tuple(p for p, _ in parts[i : i + len(phrase)]) == phrase:
                found.append(Unsafe(f"option {name}", tok.line, tok.column))
    return found


def _hidden(text: str, tokens: list[Token]) -> list[Unsafe]:
    return [
        Unsafe(
            h.code_point,
            h.line,
            h.column,
            why=f"character {h.code_point} ({h.name}) at line {h.line}, column {h.column} "
            "stands in code, outside strings and comments: an invisible or control character "
            "there makes a name read as another one, and text with it is never given to the "
            "proof assistant",
        )
        for h in hidden_in_code(text, tokens)
    ]


def _coq(tokens: list[Token]) -> list[Unsafe]:
    found: list[Unsafe] = _coq_options(tokens)
    for i, tok in enumerate(tokens):
        if tok.kind != "ident":
            continue
        text = tok.text
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        name: str | None = _COQ_ANYWHERE.get(text)
        if name is None and text in _COQ_COMMANDS and _sentence_start(tokens, i):
            name = _COQ_COMMANDS[text]
        elif text == "ML" and nxt is not None and nxt.text in ("Module", "Path"):
            name = "Declare ML Module" if nxt.text == "Module" else "Add ML Path"
        elif text == "Locate" and nxt is not None and nxt.text in ("File", "Library"):
            name = f"Locate {nxt.text}"
        elif text == "Universes":
            for later in tokens[i + 1 :]:  # Print [Sorted] Universes [Subgraph (...)] "file".
                if later.kind == "end":
                    break
                if later.kind == "string":
                    name = "Print Universes to a file"
                    break
        if name is not None:
            found.append(Unsafe(name, tok.line, tok.column))
    return found


def _lean(tokens: list[Token]) -> list[Unsafe]:
    found: list[Unsafe] = []
    in_attribute = False  # inside `@[ ... ]`
    after_import = False  # the next name is a module (`import Init.System.IO` runs nothing)
    prev: Token | None = None
    for tok in tokens:
        if after_import and tok.kind == "ident" and tok.text not in ("all", "runtime"):
            after_import, prev = False, tok
            continue
        header = prev is None or prev.line != tok.line or prev.text in ("public", "meta")
        after_import = (tok.text == "import" and header) or (
            after_import and tok.text in ("all", "runtime")
        )
        prev = tok
        if tok.kind == "symbol":
            if tok.text == "@[":
                in_attribute = True
            elif tok.text == "]":
                in_attribute = False
            continue
        if tok.kind != "ident":
            continue
        text = plain_name(tok.text)
        bare = text.removeprefix("_root_.")
        name: str | None = None
        io_name = bare.startswith(_LEAN_PREFIXES) and not bare.startswith("System.Platform.")
        if text in _LEAN_COMMANDS or bare.rsplit(".", 1)[-1] in _LEAN_NAMES or io_name:
            name = text
        elif in_attribute and text in _LEAN_ATTRIBUTES:
            name = f"@[{text}]"
        if name is not None:
            found.append(Unsafe(name, tok.line, tok.column))
    return found


def unsafe_commands(text: str, language: Language) -> list[Unsafe]:
    """Every command of `text` that the gate refuses (empty: the text may be run)."""
    if len(text) > max_source_bytes() or len(text.encode("utf-8")) > max_source_bytes():
        return [Unsafe(OVERSIZED)]
    if len(text) <= _CACHED_CHARS:  # the verifier and then its backend gate the same text
        return list(_scan_cached(text, Language(language)))
    return _scan(text, Language(language))


_CACHED_CHARS = 256 * 1024  # 64 entries of at most this: the cache holds at most 16 MB


def _scan(text: str, language: Language) -> list[Unsafe]:
    every = tokenize(text, language, comments=True)
    tokens = [t for t in every if not t.is_comment]
    found = _coq(tokens) if language == Language.coq else _lean(tokens)
    found += _hidden(text, every)
    return sorted(found, key=lambda u: (u.line or 0, u.column or 0))


@functools.lru_cache(maxsize=64)
def _scan_cached(text: str, language: Language) -> tuple[Unsafe, ...]:
    return tuple(_scan(text, language))


def gate_findings(text: str, language: Language) -> list[Finding]:
    """`unsafe_commands` as verifier findings (reason forbidden_construct)."""
    return [
        Finding(
            reason=Reason.forbidden_construct,
            subject=u.command,
            line=u.line,
            column=u.column,
            message=u.message,
        )
        for u in unsafe_commands(text, language)
    ]


def refusal(text: str, language: Language, backend: str) -> CheckResult | None:
    """The result a backend returns instead of running `text`, or None when it may run it."""
    found = unsafe_commands(text, language)
    if not found:
        return None
    return CheckResult(
        backend=backend,
        status=CheckStatus.refused,
        diagnostics=[
            Diagnostic(
                severity=Severity.error,
                message=u.message,
                line=u.line,
                column=u.column,
                kind=Reason.forbidden_construct.value,
            )
            for u in found
        ],
        detail="refused before the assistant ran: "
        + ", ".join(dict.fromkeys(f"`{u.command}`" for u in found)),
    )
