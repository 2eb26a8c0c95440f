"""What a Coq source file says about itself, for the folder importer: its postulates, the
libraries it requires, and (from the folder) the Coq it was written for.

Why here and not in the verifier: these are the task's *declared* facts, read once at import
time and kept in the task record (`postulates`, `labels.library`, `toolchain`), so that a
reader of the dataset sees them and the verifier has one field to honour. Nothing here decides
a verdict: the kernel still reports what a candidate rests on, and a name listed here only
says which of the task's own assumptions are the task's.

PutnamBench-Coq is the folder this was written for (`Variable R : realType.` at the top of a
mathcomp-analysis statement is a global assumption of the task, not a gap in a proof), but
nothing depends on its path: any folder of `.v` statements gets the same reading.
"""

from __future__ import annotations

import re
from pathlib import Path

from formalbench.backends.coq_prepare import required_modules
from formalbench.checking.decls import module_body_start, split_decls
from formalbench.core.lexer import Token, words
from formalbench.core.records import Language

# The commands that add a global assumption when they stand outside every section.
ASSUMING = words(
    "Variable Variables Parameter Parameters Hypothesis Hypotheses Axiom Axioms Conjecture Context"
)
# Of those, the ones a section discharges at its end (a `Parameter` or `Axiom` inside a
# section is still a global assumption).
SECTION_LOCAL = words("Variable Variables Hypothesis Hypotheses Context")
_OPEN_OF = {"(": ")", "{": "}", "[": "]"}


def top_level_postulates(text: str) -> list[str]:
    """The names the file's top-level assumption commands bind, in order (`Module` paths
    kept: `M.x`). Inside a section a `Variable`/`Hypothesis`/`Context` is a local hypothesis
    that the section's end discharges, so it is not listed; an anonymous binder (`` `{Tarski_2D} ``,
    `[C]`) has no name written in the file and is left out (see docs/task-format.md)."""
    scopes: list[tuple[str, str]] = []  # ("Section" | "Module", name)
    names: list[str] = []
    for decl in split_decls(text, Language.coq):
        toks = decl.tokens
        head = toks[decl.head].text
        if head in ("Section", "Module") and len(toks) > decl.head + 1:
            rest = [t.text for t in toks[decl.head + 1 :]]
            # `Module M := F X.` defines, it opens nothing; the `:=` of a signature's `with
            # Module E := X` is not a body (`Module P <: S with Module E := X.` opens `P`)
            if head == "Module" and module_body_start(toks[decl.head + 1 :]) is not None:
                continue
            name = rest[1] if rest[0] in ("Type", "Import", "Export") else rest[0]
            scopes.append((head, name))
        elif head == "End" and scopes:
            scopes.pop()
        elif head in ASSUMING and not (
            head in SECTION_LOCAL and any(kind == "Section" for kind, _ in scopes)
        ):
            prefix = "".join(f"{name}." for kind, name in scopes if kind == "Module")
            names += [prefix + n for n in binder_names(toks[decl.head + 1 :])]
    return names


def binder_names(tokens: list[Token]) -> list[str]:
    """Names bound by the binders of one assumption command (after its keyword): `R :
    realType`, `(I : finType) (P : pred I)`, `d (T : measurableType d)`, `` `{T3D : C} ``.
    A group with no `:` binds its words (`(x y)`, `{A}`) unless it is an instance binder
    (`[C]`, `` `{C} ``), whose name Coq makes up."""
    texts = [t.text for t in tokens if t.kind != "end"]
    names: list[str] = []
    i = 0
    while i < len(texts):
        text = texts[i]
        backtick = text == "`"
        if backtick:
            i += 1
            text = texts[i] if i < len(texts) else ""
        if text in _OPEN_OF:
            close, depth, j = _OPEN_OF[text], 0, i
            while j < len(texts):
                depth += texts[j] == text
                depth -= texts[j] == close
                if depth == 0:
                    break
                j += 1
            group = texts[i + 1 : j]
            if ":" in group:
                names += [w for w in group[: group.index(":")] if _ident(w)]
            elif not backtick and text != "[":
                names += [w for w in group if _ident(w)]
            i = j + 1
            continue
        if text == ":":
            break  # `Variable x y : T`: the type follows, no further binder
        if _ident(text):
            names.append(text)
        i += 1
    return names


def _ident(word: str) -> bool:
    return re.fullmatch(r"[^\W\d][\w']*", word) is not None and word != "_"


# ---- libraries ----------------------------------------------------------------------------
def library_labels(text: str) -> dict[str, str]:
    """`libraries`: the roots the file requires (`Coquelicot,Stdlib`, `HB,mathcomp`);
    `library`: the family it is written in, as PutnamBench splits its Coq part: `stdlib`
    when it uses the standard library's reals (`Reals`, alone or under Coquelicot), else
    `mathcomp` when it requires Mathematical Components, else `stdlib`."""
    modules = required_modules(text)
    roots = sorted({root for root, _ in modules})
    if not roots:
        return {}
    reals = ("Stdlib", "Reals") in modules or "Coquelicot" in roots
    family = "mathcomp" if "mathcomp" in roots and not reals else "stdlib"
    return {"library": family, "libraries": ",".join(roots)}


# ---- the contest's own naming -----------------------------------------------------------
_CONTEST_NAME = re.compile(r"^(?P<contest>[a-z]+)_(?P<year>(?:19|20)\d\d)_(?P<problem>[a-z]\d+)$")


def contest_labels(stem: str) -> dict[str, str]:
    """`putnam_1962_a2` -> contest `putnam`, year `1962`, problem `a2` (PutnamBench's names
    in every language); {} for a name of another shape."""
    match = _CONTEST_NAME.match(stem)
    return match.groupdict() if match else {}


# ---- the Coq the folder was written for ---------------------------------------------------
_WRITTEN_FOR = [
    # opam: `opam pin coq 8.18.0` / `opam pin add coq 8.18.0` (PutnamBench's setup.sh)
    re.compile(r"opam\s+pin\s+(?:add\s+)?(?:-\S+\s+)*(?P<name>coq|rocq-prover)\s+(?P<v>\d+\.\d+)"),
    # an .opam file's dependency with a lower bound: `"coq" {>= "8.18"}`
    re.compile(r'"(?P<name>coq|rocq-prover)"\s*\{\s*>=\s*"(?P<v>\d+\.\d+)'),
    # a provenance note of the data: `written for: Coq 8.18` (shared/data/*/SOURCE.txt)
    re.compile(r"written for:\s*(?P<name>Coq|Rocq)\s+(?P<v>\d+\.\d+)", re.I),
]
_NOTE_FILES = ("setup.sh", "SOURCE.txt")
_MAX_NOTE_BYTES = 1 << 20


def written_for(folder: Path, stop: Path | None = None) -> str | None:
    """The Coq a folder of statements says it was written for, as a toolchain name
    (`coq-8.18`, `rocq-9.1`), from the folder or one above it (up to `stop`'s parent):
    its `setup.sh` pin, an `.opam` file's lower bound, or a `SOURCE.txt` provenance note.
    None when none says. The files are data: only a version number is taken from them."""
    here = folder.resolve()
    last = (stop or folder).resolve().parent
    while True:
        candidates = [here / n for n in _NOTE_FILES] + sorted(here.glob("*.opam"))
        for path in candidates:
            found = _version_in(path)
            if found:
                return found
        if here == last or here.parent == here:
            return None
        here = here.parent


def _version_in(path: Path) -> str | None:
    try:
        if not path.is_file() or path.stat().st_size > _MAX_NOTE_BYTES:
            return None
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for pattern in _WRITTEN_FOR:
        match = pattern.search(text)
        if match:
            name = "rocq" if match.group("name").lower().startswith("rocq") else "coq"
            return f"{name}-{match.group('v')}"
    return None
