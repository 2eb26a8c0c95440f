"""Whether an APE answer is complete, as Coq says it (issue 23, item 1).

A compile with no error and no warning is not enough: `Program Definition cheat : False :=
_. Admit Obligations.` or a top-level `Variable cheat : False.` under `Set Warnings "-all"`
compile cleanly and prove `False`. So an edited file is complete only if

- it compiles: the assistant ran to its end (no timeout, crash, memory limit) and reported
  no error (the backend's structured diagnostics: what Coq prints as `Error:`, `Anomaly`,
  `Fatal error`). Warnings (`Warning: … [name,category]`) are recorded, never a reason: in
  Coq a hole or an axiom is read from Coq itself (below), not from a warning, and a
  history made for an older Coq warns on every file under a newer one (issue 30 item 3:
  `From Coq` deprecated in Rocq 9); a warning the project makes an error (`-w +x`) is
  printed as `Error:` and counts;
- every declaration Coq finds in it rests on no assumption that no declaration of the file
  before the edit already rested on, library axioms aside where the verifier's allow-list
  lists them (`checking.coq_presets.allowed_names`, the rule of `formalbench check`);
- it has no hole (`Admitted`, `Admit Obligations`, `admit`, `give_up` in a sentence coqc ran)
  in a declaration that had none before.

Coq's view of a file: it is compiled as the library `Candidate` (the backend's ordinary
check, gated and sandboxed), then a second file `Require Candidate.` asks `Search _ inside
Candidate` for every constant, inductive and constructor it declares (Search's blacklist
cleared, so `Private_`/`_subproof` names are listed too) with its type, and a third asks
`Print Assumptions` of each (read by the backend's own parser, `coq_queries`). Nothing is
imported there, so the answer's notations, scopes and printing options do not reach the
output. Each answer gets the same reading as the file before the edit, so the report also
says which declarations changed statement, disappeared or were added.
"""

from __future__ import annotations

import secrets
import time
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_output import is_time_line
from formalbench.backends.coq_queries import LOCAL_MODULE, parse_assumptions
from formalbench.backends.coq_source import declared_names
from formalbench.backends.sandbox import work_dir
from formalbench.checking.decls import COQ_POSTULATES, Decl, split_decls
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import CheckResult, CheckStatus, Language, Reason
from formalbench.pipelines.ape.outcome import shorten

QUERY_MODULE = "FbApeView"
LOCAL = LOCAL_MODULE + "."
_POSTULATES = COQ_POSTULATES | {"Context"}  # a top-level Context postulates too
_HOLE_WORDS = frozenset({"Admitted", "admit", "give_up", "Admit"})


@dataclass
class FileView:
    """One file as Coq sees it: its compile, and (when it compiled) every declaration with
    its type and assumptions. `problem` says why the declarations could not be read."""

    result: CheckResult
    statements: dict[str, str] = field(default_factory=dict)
    assumptions: dict[str, list[str]] = field(default_factory=dict)
    holes: list[str] = field(default_factory=list)  # one key per hole: its declaration
    problem: str | None = None


def read_view(
    backend: CoqBackend, content: str, timeout: float, guesses: Sequence[str] = ()
) -> FileView:
    """Compile `content` and read its declarations, types and assumptions from Coq.

    `guesses`: qualified names likely declared (those of the file before the edit); with
    the names the text declares, their assumptions are asked in the same run as the list of
    declarations, so a usual answer costs two runs of coqc. A guess that Coq does not know
    stops that run; the assumptions still owed are then asked in a third."""
    started = time.perf_counter()
    with work_dir("ape") as tmp:
        work = Path(tmp)
        result = backend.check(content, workdir=work, timeout=timeout)
        view = FileView(result, holes=hole_keys(content, result))
        if not result.compiled or not (work / f"{LOCAL_MODULE}.vo").is_file():
            view.problem = "the file does not compile"
            return view
        nonce = secrets.token_hex(6)
        guessed = list(dict.fromkeys([*guesses, *(LOCAL + n for n in declared_names(content))]))
        left = timeout - (time.perf_counter() - started)
        text = _search_text(nonce) + _assumptions_text(nonce, guessed)
        out = backend.compile(work, QUERY_MODULE, text, max(left, 0.1))
        blocks = _blocks(out.stdout, nonce)
        if "names" not in blocks or "types" not in blocks:
            view.problem = f"Coq could not list the declarations: {_tail(out.stderr)}"
            return view
        names = [ln.strip() for ln in blocks["names"] if ln.strip()]
        view.statements = _types(blocks["types"], names)
        asked = {n: f"q{i}" for i, n in enumerate(guessed)}
        view.assumptions = {
            n: parse_assumptions(blocks[asked[n]])
            for n in names
            if n in asked and asked[n] in blocks
        }
        owed = [n for n in names if n not in view.assumptions]
        if not owed:
            return view
        left = timeout - (time.perf_counter() - started)
        nonce = secrets.token_hex(6)
        text = f"Require {LOCAL_MODULE}.\nSet Printing Width 100000.\n"
        out = backend.compile(
            work, QUERY_MODULE, text + _assumptions_text(nonce, owed), max(left, 0.1)
        )
        blocks = _blocks(out.stdout, nonce)
        if out.status != CheckStatus.ok or out.returncode or "end" not in blocks:
            view.problem = f"Coq could not print the assumptions: {_tail(out.stderr)}"
            return view
        view.assumptions.update({n: parse_assumptions(blocks[f"q{i}"]) for i, n in enumerate(owed)})
    return view


def _marker(nonce: str, label: str) -> str:
    return f"Locate fb_{nonce}_{label}."


def _search_text(nonce: str) -> str:
    return "\n".join(
        [
            f"Require {LOCAL_MODULE}.",
            "Set Printing Width 100000.",
            'Remove Search Blacklist "_subterm" "_subproof" "Private_".',
            "Set Search Output Name Only.",
            _marker(nonce, "names"),
            f"Search _ inside {LOCAL_MODULE}.",
            "Unset Search Output Name Only.",
            _marker(nonce, "types"),
            f"Search _ inside {LOCAL_MODULE}.",
            "",
        ]
    )


def _assumptions_text(nonce: str, names: list[str]) -> str:
    lines = []
    for i, name in enumerate(names):
        lines += [_marker(nonce, f"q{i}"), f"Print Assumptions {name}."]
    lines += [_marker(nonce, "end"), ""]
    return "\n".join(lines)


def _blocks(stdout: str, nonce: str) -> dict[str, list[str]]:
    """The output of each finished block: the lines after a marker up to the next marker
    (a block whose next marker never came, because its command failed, is left out). The
    nonce is fresh per run, so the checked file cannot print a marker itself."""
    prefix = f"No object of basename fb_{nonce}_"
    out: dict[str, list[str]] = {}
    current: str | None = None
    buffer: list[str] = []
    for line in stdout.splitlines():
        if is_time_line(line):
            continue
        if line.startswith(prefix):
            if current is not None:
                out[current] = buffer
            current, buffer = line[len(prefix) :], []
            if current == "end":
                out["end"] = []
                break
        elif current is not None:
            buffer.append(line)
    return out


def _types(lines: list[str], names: list[str]) -> dict[str, str]:
    """`name: type` entries of `Search`; a line that starts no entry continues the last."""
    known = set(names)
    types: dict[str, str] = {}
    last: str | None = None
    for line in lines:
        head, sep, rest = line.partition(": ")
        if sep and head in known and head not in types:
            last, types[head] = head, rest.strip()
        elif last is not None:
            types[last] += " " + line.strip()
    return {n: " ".join(types.get(n, "").split()) for n in names}


def _tail(text: str) -> str:
    return " ".join(text.split())[-300:] or "no message"


def hole_keys(content: str, result: CheckResult) -> list[str]:
    """One key per hole the assistant reported: the name of the declaration holding it (or
    its text when it has no name), so holes can be compared between two versions."""
    decls = split_decls(content, Language.coq)
    starts = _line_starts(content)
    keys = []
    for hole in result.holes:
        line, column = hole.line or 0, hole.column or 0  # 1-based line, character column
        offset = starts[line - 1] + column if 0 < line <= len(starts) else -1
        owner = next((d for d in decls if d.start <= offset < d.end + 1), None)
        keys.append(_decl_key(owner) if owner else "(outside any declaration)")
    return keys


def _decl_key(decl: Decl) -> str:
    return decl.name or " ".join(t.text for t in decl.tokens)[:200]


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def text_baseline(content: str) -> FileView:
    """The file before the edit when it does not compile in the task's tree: its own
    postulates and holed declarations, read from the text, are the allowed local
    assumptions (a baseline that can only be smaller than Coq's)."""
    view = FileView(CheckResult(backend="coq"), problem="the file before does not compile here")
    allowed: list[str] = []
    for d in split_decls(content, Language.coq):
        words = {t.text for t in d.tokens}
        if d.name and (d.kind in _POSTULATES or words & _HOLE_WORDS):
            allowed.append(LOCAL + d.name)
        if words & _HOLE_WORDS:
            view.holes.append(_decl_key(d))
    view.assumptions = {"(before, from its text)": allowed}
    return view


def run_reasons(result: CheckResult) -> list[str]:
    """Why a compile failed: the run did not end normally, or an error (warnings are not
    reasons, see the module doc). Holes are compared with the file before, not refused
    outright (a library may keep its own `Admitted`)."""
    if result.status != CheckStatus.ok:
        detail = f": {result.detail}" if result.detail else ""
        return [shorten(f"the assistant ended with {result.status.value}{detail}")]
    return [shorten(f"{Reason.compile_error.value}: {d.message}") for d in result.errors]


def judge_completeness(
    before: FileView,
    after: FileView,
    policy: VerifierPolicy | None = None,
    allowed: Collection[str] | None = None,
) -> dict[str, Any]:
    """The verdict on an edited file against the file before it, and what changed.
    `allowed`: the library axioms a new use of which is no reason (default: the policy's
    allow-list as the default toolchain's Coq confirms it; none without one)."""
    policy = policy or VerifierPolicy()
    if allowed is None:
        from formalbench.checking.coq_presets import allowed_names
        from formalbench.core.errors import ToolchainMissingError
        from formalbench.toolchains.toolchain import resolve

        try:
            chain = resolve()
        except ToolchainMissingError:
            chain = None
        allowed = allowed_names(policy.axiom_presets, policy.allowed_axioms or (), chain)
    reasons = run_reasons(after.result)
    if after.problem and after.result.compiled:
        reasons.append(after.problem)
    new_holes = list((Counter(after.holes) - Counter(before.holes)).elements())
    reasons += [shorten(f"a hole the file before did not have, in `{k}`") for k in new_holes]
    rested = {a for axioms in before.assumptions.values() for a in axioms}  # the file before
    local = set(after.statements)
    new_local: dict[str, list[str]] = {}
    new_library: set[str] = set()
    for name, axioms in after.assumptions.items():
        for ax in axioms:
            if ax in rested:
                continue
            if ax.startswith(LOCAL) or ax in local:
                new_local.setdefault(name, []).append(ax)
            else:
                new_library.add(ax)
    for name, axioms in sorted(new_local.items()):
        reasons.append(
            shorten(
                f"`{name}` rests on {', '.join(f'`{a}`' for a in axioms)}, "
                "which the file before did not"
            )
        )
    refused = sorted(new_library - set(allowed))
    if refused:
        reasons.append(shorten(f"new library axioms not on the allow-list: {', '.join(refused)}"))
    return {
        "complete": not reasons,
        "reasons": reasons,
        "new_axioms": sorted({a for axioms in new_local.values() for a in axioms}),
        "new_library_axioms": sorted(new_library),
        "new_holes": new_holes,
        "declarations": declaration_changes(before, after),
    }


def declaration_changes(before: FileView, after: FileView) -> dict[str, Any] | None:
    """Declarations (as Coq lists them) whose type changed, that disappeared, that were
    added; None when the file before could not be read by Coq in this tree."""
    if before.problem or after.problem:
        return None
    old, new = before.statements, after.statements
    return {
        "changed": sorted(n for n in old.keys() & new.keys() if old[n] != new[n]),
        "removed": sorted(old.keys() - new.keys()),
        "added": sorted(new.keys() - old.keys()),
    }


def backend_for(tree: Path, timeout: float = 300.0, path: str | None = None) -> CoqBackend:
    """The Coq backend with the project's flags (absolute paths; those of `path`'s library
    when the project gives libraries their own)."""
    from formalbench.pipelines.ape.project import coq_project_args

    _, flags = coq_project_args(tree, path)
    return CoqBackend(args=flags, timeout=timeout, workers=1)


def compile_record(result: CheckResult) -> dict[str, Any]:
    """A compile as results store it: status, whether it compiled (ran to its end, no
    error), the errors and the warnings, each message whole (`outcome.shorten`)."""
    return {
        "status": str(result.status),
        "compiled": result.compiled,
        "errors": [shorten(d.message) for d in result.errors],
        "warnings": [shorten(d.message) for d in result.warnings],
    }


def allowed_axioms(backend: CoqBackend, policy: VerifierPolicy) -> frozenset[str]:
    """The library axioms a new use of which is no reason, as this backend's Coq names them."""
    from formalbench.checking.coq_presets import allowed_names

    return frozenset(allowed_names(policy.axiom_presets, (), backend.toolchain, backend.args))


def baseline(tree: Path, before: str, timeout: float = 300.0) -> FileView:
    """Coq's view of the file before the edit in the task's tree, or its text's when it does
    not compile there (then only its own postulates and holed declarations are allowed)."""
    view = read_view(backend_for(tree, timeout), before, timeout)
    return text_baseline(before) if view.problem else view


def check_answer(tree: Path, before: FileView, content: str, timeout: float = 300.0) -> dict:
    """The verdict on one edited file: its compile (`compile_record`) and `complete` by
    `judge_completeness` against the file before."""
    backend = backend_for(tree, timeout)
    after = read_view(backend, content, timeout, guesses=list(before.statements))
    out: dict[str, Any] = {
        **compile_record(after.result),
        "version": " ".join(backend.version().split()[:2]),
        "baseline": "coq" if before.problem is None else "text (before does not compile)",
    }
    policy = VerifierPolicy()
    out.update(judge_completeness(before, after, policy, allowed_axioms(backend, policy)))
    return out
