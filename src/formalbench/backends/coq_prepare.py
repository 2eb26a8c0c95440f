"""Prepare a Coq task's header for the toolchain that checks it; the statement is never touched.

Why: a statement written for one Coq can fail on another for reasons that have nothing to do
with what it states. PutnamBench-Coq was written for Coq 8.18 (see
`shared/data/putnambench-coq/results.tsv`): on Rocq 9.2 a top-level `Variable` is an error
unless its warning is turned off, mathcomp 2.6 gives the literals 1 and 0 other types when the
deprecated `all_ssreflect` is imported after `all_algebra`, mathcomp-analysis 1.x moved modules
out of `mathcomp.analysis` and renamed `signed`, and Rocq 9's `Reals` no longer brings `fact`,
`lt_dec`, `eq_nat_dec` with it. Each rule below repairs one of these by a change to the
header alone (an import line, a `Set Warnings` line), only where the toolchain needs it, and
says what it did; the caller records the list in the task and so in the run.

What is guaranteed: `prepare` reads the statement (`formal`) to decide, never returns it; the
prepared task is `prepared.header + formal`. Rewrites that would change a definition the
statement uses (results.tsv's "small rewrites outside the statement", e.g. PutnamBench's
`[the measure _ _ of @lebesgue_measure R]`) are not made: they change what is stated.

The facts a rule reads (`ToolchainFacts`) are the toolchain's Coq version, its library
versions and the logical modules it can load; `host_facts` reads them for a coqc on PATH.
This module is the per-task step of the one place where a task's text is prepared for a
toolchain (the Stdlib/Coq prefix mapping of the toolchains is the other).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from formalbench.backends.sandbox import run_probe
from formalbench.core.lexer import Token, tokenize
from formalbench.core.records import Language, Task

Version = tuple[int, ...]


def parse_version(text: str) -> Version:
    """`8.16.1` -> (8, 16, 1); `2.6.0-1+b2` -> (2, 6, 0); Debian's epoch (`1:`) dropped."""
    text = text.split(":", 1)[-1]
    numbers = re.match(r"\d+(?:\.\d+)*", text)
    return tuple(int(n) for n in numbers.group(0).split(".")) if numbers else ()


@dataclass(frozen=True)
class ToolchainFacts:
    """What a rule may ask of a toolchain. `libraries`: library name (`mathcomp`,
    `mathcomp-analysis`, `coquelicot`) -> version; `modules`: every logical module path it
    can load (`mathcomp.analysis.reals`), empty when unknown (then the module rules, which
    need it to be sure, do nothing)."""

    name: str
    coq: Version
    libraries: Mapping[str, Version] = field(default_factory=dict)
    modules: frozenset[str] = frozenset()

    def library(self, name: str) -> Version:
        return self.libraries.get(name, ())

    def has_module(self, prefix: str, module: str) -> bool:
        """Whether `From prefix Require module` resolves here: a loadable module whose
        path starts with `prefix.` and ends with `.module` (Coq's partial qualification)."""
        dotted = f".{module}"
        return any(
            m.startswith(prefix + ".") and (m.endswith(dotted) or m == f"{prefix}{dotted}")
            for m in self.modules
        )


@dataclass(frozen=True)
class Change:
    """One preparation: the rule that made it and what it did, in words a report can show."""

    rule: str
    detail: str


@dataclass(frozen=True)
class Preparation:
    header: str
    changes: tuple[Change, ...] = ()

    def record(self, facts: ToolchainFacts) -> dict[str, Any]:
        """What a task's metadata keeps (`metadata.preparation`)."""
        return {
            "toolchain": facts.name,
            "coq": ".".join(map(str, facts.coq)),
            "changes": [{"rule": c.rule, "detail": c.detail} for c in self.changes],
        }


# ---- the rules ----------------------------------------------------------------------------
# Coq >= 8.20 made an assumption outside a section an error by default (results.tsv, SOURCE.txt
# of putnambench-coq); before it was a warning, and the command means the same either way: a
# local global assumption of the file.
_WARNING_ERROR_SINCE: Version = (8, 20)
_OUTSIDE_SECTION_WARNINGS = {
    "Variable": "declaration-outside-section",
    "Variables": "declaration-outside-section",
    "Hypothesis": "declaration-outside-section",
    "Hypotheses": "declaration-outside-section",
    "Context": "context-outside-section",
}
# mathcomp-analysis renamed modules (old -> new), applied only where the old one is gone and
# the new one is there.
_RENAMED_MODULES = {("mathcomp", "signed"): "interval_inference"}
_STDLIB_PRELUDE_SINCE: Version = (9, 0)
_STDLIB_PRELUDE = "From Stdlib Require Import Arith ZArith.\n"


def prepare(header: str, formal: str, facts: ToolchainFacts) -> Preparation:
    """The header `header + formal` needs on this toolchain, and what was changed."""
    changes: list[Change] = []
    sentences = _sentences(header)
    sentences = _import_changes(sentences, facts, changes)
    text = "".join(sentences)
    prelude = _stdlib_prelude(header, formal, facts, changes)
    warnings = _warning_line(header, formal, facts, changes)
    if text and warnings and not text.endswith("\n"):
        text += "\n"
    return Preparation(header=prelude + text + warnings, changes=tuple(changes))


def sentences(text: str) -> list[list[Token]]:
    """The text's sentences as token lists (comments left out), each ending with its `.`."""
    out: list[list[Token]] = [[]]
    for token in tokenize(text, Language.coq):
        out[-1].append(token)
        if token.kind == "end":
            out.append([])
    return [s for s in out if s]


def _sentences(header: str) -> list[str]:
    """The header cut into pieces that join back to it exactly: each sentence is one piece
    (with what precedes it), so a rule can rewrite it alone."""
    pieces: list[str] = []
    last = 0
    for sentence in sentences(header):
        start, end = sentence[0].offset, sentence[-1].end
        pieces += [header[last:start], header[start:end]]
        last = end
    pieces.append(header[last:])
    return pieces


def required_modules(text: str) -> list[tuple[str, str]]:
    """(root, module) for each module the file's `Require` commands name, in order: `From
    mathcomp Require Import reals` -> ("mathcomp", "reals"); `Require Import Reals
    Coquelicot.Coquelicot` -> ("Stdlib", "Reals"), ("Coquelicot", "Coquelicot"). A bare
    name with no root is the standard library's (`Coq`/`Stdlib` are one root, `Stdlib`)."""
    found: list[tuple[str, str]] = []
    for sentence in sentences(text):
        texts = [t.text for t in sentence if t.kind != "end"]
        if "Require" not in texts:
            continue
        where = texts.index("Require")
        modules = [w for w in texts[where + 1 :] if w not in ("Import", "Export", "-")]
        prefix = texts[1] if texts[0] == "From" and where >= 2 else ""
        for module in modules:
            path = f"{prefix}.{module}" if prefix else module
            root, _, rest = path.partition(".")
            if not rest:  # a bare `Require Import Reals.`
                root, rest = "Stdlib", root
            found.append(("Stdlib" if root in ("Coq", "Stdlib") else root, rest))
    return found


_FROM = re.compile(r"\AFrom(\s+)(\S+)(\s+Require\b)(.*)\Z", re.S)


def _import_changes(pieces: list[str], facts: ToolchainFacts, changes: list[Change]) -> list[str]:
    out = []
    for piece in pieces:
        match = _FROM.match(piece)
        if match is None:
            out.append(piece)
            continue
        prefix, rest = match.group(2), match.group(4)
        new_prefix, new_rest = prefix, rest
        new_rest = _order_ssreflect_first(new_prefix, new_rest, facts, changes)
        new_rest = _renamed(new_prefix, new_rest, facts, changes)
        new_prefix = _moved(new_prefix, new_rest, facts, changes)
        out.append(f"From{match.group(1)}{new_prefix}{match.group(3)}{new_rest}")
    return out


def _modules_of(rest: str) -> list[str]:
    names = re.findall(r"[\w']+(?:\.[\w']+)*", rest)
    return [w for w in names if w not in ("Import", "Export")]


def _order_ssreflect_first(
    prefix: str, rest: str, facts: ToolchainFacts, changes: list[Change]
) -> str:
    """mathcomp >= 2: `all_ssreflect` (deprecated there) imported after `all_algebra` gives
    the literals 1 and 0 the new monoid types; imported first, it leaves them as in
    mathcomp 1 and the statement means what it was written to."""
    if prefix != "mathcomp" or facts.library("mathcomp")[:1] < (2,):
        return rest
    modules = _modules_of(rest)
    if "all_ssreflect" not in modules or "all_algebra" not in modules:
        return rest
    if modules.index("all_ssreflect") < modules.index("all_algebra"):
        return rest
    without = re.sub(r"\s+all_ssreflect\b", "", rest, count=1)
    moved = re.sub(r"\ball_algebra\b", "all_ssreflect all_algebra", without, count=1)
    changes.append(
        Change(
            "mathcomp-ssreflect-first",
            f"From mathcomp Require Import: all_ssreflect moved before all_algebra (mathcomp "
            f"{_v(facts.library('mathcomp'))})",
        )
    )
    return moved


def _renamed(prefix: str, rest: str, facts: ToolchainFacts, changes: list[Change]) -> str:
    for (root, old), new in _RENAMED_MODULES.items():
        if not (prefix == root or prefix.startswith(root + ".")):
            continue
        if old not in _modules_of(rest) or not facts.modules:
            continue
        if facts.has_module(root, old) or not facts.has_module(root, new):
            continue
        # the name as a whole word of the sentence: a `.` after it ends the sentence
        # (`... normedtype signed.`) unless a name part follows (`signed.x`)
        word = rf"(?<![\w.']){re.escape(old)}(?![\w'])(?!\.[\w'])"
        rest, count = re.subn(word, new, rest, count=1)
        if not count:
            continue
        changes.append(
            Change("module-renamed", f"From {prefix} Require: {old} -> {new} ({facts.name})")
        )
    return rest


def _moved(prefix: str, rest: str, facts: ToolchainFacts, changes: list[Change]) -> str:
    """`From mathcomp.analysis Require reals`: in analysis 1.x `reals` is under
    `mathcomp.reals`; when a module is not found under the prefix but is under a shorter one,
    the shortest prefix that finds every module of the sentence is used."""
    if not facts.modules or "." not in prefix:
        return prefix
    modules = _modules_of(rest)
    if all(facts.has_module(prefix, m) for m in modules):
        return prefix
    parts = prefix.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        shorter = ".".join(parts[:cut])
        if all(facts.has_module(shorter, m) for m in modules):
            changes.append(
                Change(
                    "module-path-moved",
                    f"From {prefix} Require -> From {shorter} Require (not under {prefix} "
                    f"in {facts.name})",
                )
            )
            return shorter
    return prefix


def _stdlib_prelude(header: str, formal: str, facts: ToolchainFacts, changes: list[Change]) -> str:
    """Rocq 9: `Reals` no longer exports Arith and ZArith (`fact`, `lt_dec`, `eq_nat_dec`,
    `neq`), which a statement written for Coq 8 uses unqualified. A file that requires the
    standard library's reals gets them back first, before anything else, as Coq 8's Reals
    loaded them."""
    if facts.coq < _STDLIB_PRELUDE_SINCE:
        return ""
    modules = required_modules(header + formal)
    if ("Stdlib", "Reals") not in modules or header.startswith(_STDLIB_PRELUDE):
        return ""  # (a header prepared before keeps its prelude: preparing is idempotent)
    changes.append(
        Change(
            "stdlib-arith-prelude",
            f"From Stdlib Require Import Arith ZArith. added first (Rocq {_v(facts.coq)}'s "
            "Reals no longer exports them)",
        )
    )
    return _STDLIB_PRELUDE


def _warning_line(header: str, formal: str, facts: ToolchainFacts, changes: list[Change]) -> str:
    """Coq >= 8.20: a `Variable`/`Context` outside a section is an error by default; it means
    a local global assumption (the task's postulate) as it did when it was a warning."""
    if facts.coq < _WARNING_ERROR_SINCE:
        return ""
    needed: list[str] = []
    depth = 0
    for sentence in sentences(formal):
        head = sentence[0].text
        if head in ("Local", "Global", "#[local]", "Polymorphic") and len(sentence) > 1:
            head = sentence[1].text
        if head == "Section":
            depth += 1
        elif head == "End" and depth:
            depth -= 1
        elif depth == 0 and head in _OUTSIDE_SECTION_WARNINGS:
            warning = _OUTSIDE_SECTION_WARNINGS[head]
            needed += [warning] if warning not in needed else []
    if not needed:
        return ""
    flags = ",".join(f"-{w}" for w in needed)
    line = f'Set Warnings "{flags}".\n'
    if header.endswith(line):
        return ""
    changes.append(
        Change(
            "assumption-outside-section",
            f'Set Warnings "{flags}". added last (an error by default since Coq 8.20)',
        )
    )
    return line


def _v(version: Version) -> str:
    return ".".join(map(str, version)) or "?"


# ---- facts of a coqc --------------------------------------------------------------------
# Debian packages -> the library names the rules ask for.
DEBIAN_LIBRARIES = {
    "libcoq-mathcomp-ssreflect": "mathcomp",
    "libcoq-mathcomp-analysis": "mathcomp-analysis",
    "libcoq-coquelicot": "coquelicot",
}


def debian_versions(status: Path) -> dict[str, str]:
    """Installed package -> version from a dpkg status file (the host's, or a root's)."""
    versions: dict[str, str] = {}
    try:
        text = status.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return versions
    for paragraph in text.split("\n\n"):
        fields = dict(re.findall(r"^(Package|Version|Status): (.*)$", paragraph, re.M))
        if "Package" in fields and "installed" in fields.get("Status", "").split():
            versions[fields["Package"]] = fields.get("Version", "")
    return versions


def library_versions(packages: Mapping[str, str]) -> dict[str, Version]:
    return {
        name: parse_version(packages[package])
        for package, name in DEBIAN_LIBRARIES.items()
        if package in packages
    }


def loadable_modules(user_contrib: Iterable[Path]) -> frozenset[str]:
    """Every `.vo` under the given `user-contrib` folders as a dotted logical path."""
    found: set[str] = set()
    for folder in user_contrib:
        if not folder.is_dir():
            continue
        for path in folder.rglob("*.vo"):
            found.add(".".join(path.relative_to(folder).with_suffix("").parts))
    return frozenset(found)


@functools.lru_cache(maxsize=8)
def host_facts(coqc: str = "coqc") -> ToolchainFacts:
    """The facts of a coqc on this machine (the `host` toolchain)."""
    return facts_of([coqc], name="host")


def facts_of(coqc: list[str], *, name: str, root: Path = Path("/")) -> ToolchainFacts:
    """The facts of a coqc (a command: a wrapper that runs it inside a Debian root `root`
    gives root-relative paths): its version, the library packages the root's dpkg lists, the
    modules under its `user-contrib`."""
    # asked in the sandbox, as every start of coqc is (backends/sandbox.py)
    version = run_probe([*coqc, "--print-version"], timeout=120).stdout.split()
    where = run_probe([*coqc, "-where"], timeout=120)
    lib = root / where.stdout.strip().lstrip("/")
    return facts_for(
        name,
        version[0] if version else "",
        debian_versions(root / "var/lib/dpkg/status"),
        [lib / "user-contrib"],
    )


def facts_for(
    name: str, coq_version: str, packages: Mapping[str, str], user_contrib: Iterable[Path]
) -> ToolchainFacts:
    """The facts from what a toolchain records: its Coq version, its Debian library
    packages with their versions, the `user-contrib` folders it loads from."""
    return ToolchainFacts(
        name=name,
        coq=parse_version(coq_version),
        libraries=library_versions(packages),
        modules=loadable_modules(user_contrib),
    )


# ---- tasks ----------------------------------------------------------------------------------
def prepare_task(task: Task, facts: ToolchainFacts) -> Task:
    """The task as it is checked on this toolchain: the same task when nothing is needed,
    else a copy with the prepared header and `metadata.preparation` (the toolchain, the
    changes, the header as given), which the run stores with the task."""
    if task.language != Language.coq:
        return task
    prepared = prepare(task.header, task.formal, facts)
    if not prepared.changes:
        return task
    record = {**prepared.record(facts), "header_as_given": task.header}
    metadata = {**task.metadata, "preparation": record}
    return task.model_copy(update={"header": prepared.header, "metadata": metadata})


def prepare_tasks(tasks: Iterable[Task], facts: ToolchainFacts) -> tuple[list[Task], str | None]:
    """Every task prepared for the toolchain, and a one-line note of what was done (None
    when nothing was)."""
    out = [prepare_task(t, facts) for t in tasks]
    return out, preparation_note(out, facts.name)


def preparation_note(tasks: Iterable[Task], toolchain: str) -> str | None:
    """How many of `tasks` carry a preparation, and by which rules (None: none does)."""
    prepared = [t for t in tasks if "preparation" in t.metadata]
    rules = Counter(
        change["rule"] for t in prepared for change in t.metadata["preparation"]["changes"]
    )
    if not prepared:
        return None
    listed = ", ".join(f"{rule} {n}" for rule, n in rules.most_common())
    return (
        f"{len(prepared)} task(s) prepared for toolchain {toolchain} (header only, statements "
        f"untouched; metadata.preparation): {listed}"
    )
