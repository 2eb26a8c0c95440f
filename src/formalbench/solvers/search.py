"""Offline declaration search for the agent's `search` tool.

The CAM-Bench agent looks facts up in the library before using them; here that is a plain
index of the library's own sources, built once per process: Coq's standard library and
installed packages under `coqc -where`, or the `.lean` files of a Lake project (its
`.lake/packages` included). No network, no embeddings: a query's words must all occur in a
declaration's name or statement, and name hits rank first. That is enough for a model to
find the right lemma name, which is what it most often gets wrong (hallucinated identifiers).
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from formalbench.checking.decls import module_body_start
from formalbench.core.lexer import tokenize
from formalbench.core.records import Language
from formalbench.solvers.proofs import mask

_COQ_DECL = re.compile(
    r"(?m)^[ \t]*(?:#\[[^\]]*\]\s*)?(?:(?:Local|Global|Polymorphic|Program)\s+)*"
    r"(Theorem|Lemma|Fact|Remark|Corollary|Proposition|Example|Definition|Fixpoint|CoFixpoint"
    r"|Inductive|CoInductive|Record|Structure|Class|Instance|Axiom|Parameter|Hypothesis"
    r"|Variable|Conjecture|Let)\s+([\w']+)"
)
# `Module M <: T.` spans lines; `Module M := F X.` defines a module without opening one.
_COQ_SCOPE = re.compile(
    r"(?m)^[ \t]*(?:(Module)(?:\s+(?:Import|Export))?(?!\s+Type\b)|(Section)|(End))\s+([\w']+)"
    r"((?:[^.]|\.(?!\s))*)\.(?=\s|$)"
)
_LEAN_DECL = re.compile(
    r"(?m)^(?:@\[[^\]]*\]\s*)?(?:(?:private|protected|noncomputable|nonrec|partial)\s+)*"
    r"(theorem|lemma|def|abbrev|instance|structure|class|inductive|axiom|opaque)\s+([^\s:({\[]+)"
)
_LEAN_SCOPE = re.compile(r"(?m)^(?:(namespace)|(section)|(end))(?:[ \t]+([\w.']+))?[ \t]*$")
_MAX_STATEMENT = 400


@dataclass(frozen=True)
class Declaration:
    name: str  # qualified by the enclosing modules / namespaces
    kind: str
    statement: str  # the text after the name, whitespace collapsed
    path: str
    line: int

    def render(self) -> str:
        return f"{self.kind} {self.name} {self.statement}"


class DeclarationIndex:
    """Declarations of the source files under `roots`, searchable by words."""

    def __init__(self, roots: Sequence[Path | str], language: Language) -> None:
        self.language = language
        self.roots = [Path(r) for r in roots]
        self._decls: list[Declaration] | None = None

    @property
    def declarations(self) -> list[Declaration]:
        if self._decls is None:
            self._decls = _load(tuple(str(r) for r in self.roots), self.language)
        return self._decls

    def search(self, query: str, limit: int = 20) -> list[Declaration]:
        """Declarations whose name or statement contains every word of `query`."""
        return search_declarations(self.declarations, query, limit)


def search_declarations(
    declarations: Sequence[Declaration], query: str, limit: int = 20
) -> list[Declaration]:
    """Those of `declarations` whose name or statement contains every word of `query`,
    exact name hits first, then by how many words hit the name, then shorter names."""
    words = [w.lower() for w in query.split() if w.strip()]
    if not words:
        return []
    found = _rank(declarations, words, limit)
    if not found and any("." in w for w in words):
        # names made by functor application (Coq's `Z.mul_comm`) are not in the text:
        # fall back to the unqualified name
        found = _rank(declarations, [w.rsplit(".", 1)[-1] for w in words], limit)
    return found


def _rank(declarations: Sequence[Declaration], words: list[str], limit: int) -> list[Declaration]:
    scored: list[tuple[tuple[int, int, int], Declaration]] = []
    for decl in declarations:
        name = decl.name.lower()
        hay = f"{name} {decl.statement.lower()}"
        if not all(w in hay for w in words):
            continue
        exact = 0 if name in words or name.rsplit(".", 1)[-1] in words else 1
        in_name = -sum(w in name for w in words)
        scored.append(((exact, in_name, len(decl.name)), decl))
    scored.sort(key=lambda item: item[0])
    return [d for _, d in scored[:limit]]


def coq_library() -> Path | None:
    """`coqc -where` (the standard library's folder), or None without coqc."""
    return _coq_where(shutil.which("coqc"))


@functools.lru_cache(maxsize=4)
def _coq_where(coqc: str | None) -> Path | None:
    if coqc is None:
        return None
    from formalbench.backends.sandbox import run_probe  # in the sandbox, as every coqc start

    try:
        done = run_probe([coqc, "-where"], timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    out = done.stdout.strip() if done.returncode == 0 else ""
    return Path(out).resolve() if out else None


def default_roots(language: Language, project: Path | str | None = None) -> list[Path]:
    """Where a language's library sources live on this machine."""
    if language == Language.coq:
        base = coq_library()
        if base is None:
            return []
        return [p for p in (base / "theories", base / "user-contrib") if p.is_dir()]
    return [Path(project)] if project else []


@functools.lru_cache(maxsize=8)
def _load(roots: tuple[str, ...], language: Language) -> list[Declaration]:
    suffix = ".v" if language == Language.coq else ".lean"
    decls: list[Declaration] = []
    for root in roots:
        base = Path(root)
        files = [base] if base.is_file() else sorted(base.rglob(f"*{suffix}"))
        for path in files:
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            decls.extend(scan(text, language, str(path)))
    return decls


def scan(text: str, language: Language, path: str = "") -> Iterable[Declaration]:
    """The declarations of one source file, with their enclosing scopes."""
    masked = mask(text, language)
    decl_re, scope_re = (
        (_COQ_DECL, _COQ_SCOPE) if language == Language.coq else (_LEAN_DECL, _LEAN_SCOPE)
    )
    events = [(m.start(), "scope", m) for m in scope_re.finditer(masked)]
    events += [(m.start(), "decl", m) for m in decl_re.finditer(masked)]
    events.sort(key=lambda e: e[0])
    stack: list[tuple[bool, str]] = []  # (qualifies names, scope name)
    for start, what, m in events:
        if what == "scope":
            _enter_or_leave(stack, m, language)
            continue
        kind, name = m.group(1), m.group(2).strip("«»")
        prefix = ".".join(n for q, n in stack if q and n)
        statement = _statement(masked, m.end(), language)
        yield Declaration(
            name=f"{prefix}.{name}" if prefix and not name.startswith("_root_") else name,
            kind=kind,
            statement=statement,
            path=path,
            line=text.count("\n", 0, start) + 1,
        )


def _defines(rest: str) -> bool:
    """A Coq `Module` line's text after its name defines the module (`Module M := F X.`,
    which opens nothing), not a signature's `with Module E := X` (which still opens it)."""
    return module_body_start(tokenize(rest, Language.coq)) is not None


def _enter_or_leave(stack: list[tuple[bool, str]], m: re.Match[str], language: Language) -> None:
    opens_module, opens_section, closes, name = m.group(1), m.group(2), m.group(3), m.group(4)
    if language == Language.coq and opens_module and _defines(m.group(5) or ""):
        return
    if closes:
        names = [n for _, n in stack]
        if name and name in names:
            del stack[len(names) - 1 - names[::-1].index(name) :]
        elif stack:
            stack.pop()
        return
    if language == Language.lean and opens_module:
        stack.append((True, name or ""))
    elif opens_module:
        stack.append((True, name))
    elif opens_section:
        stack.append((False, name or ""))


def _statement(masked: str, pos: int, language: Language) -> str:
    if language == Language.coq:
        end = re.compile(r"(?<!\.)\.(?=\s|$)|:=").search(masked, pos)
    else:
        end = re.compile(r":=|\n\S|\bwhere\b").search(masked, pos)
    stop = end.start() if end else len(masked)
    stop = min(stop, pos + 4 * _MAX_STATEMENT)
    collapsed = " ".join(masked[pos:stop].split())
    return collapsed[:_MAX_STATEMENT]
