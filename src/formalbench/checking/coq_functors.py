"""Targets inside a functor or a module type: what the identity file applies, and to what.

A lemma of `Module F (X : T) ... End F.` or of `Module Type P (X : T) ... End P.` is not a
constant of the compiled library but a field of a function on modules. The identity file
(`backends.coq_identity.identity_text`) makes it one: it declares a generic module of each
parameter's type (`Declare Module A1 : T.`, every field abstract) and applies both sides to
the same arguments. That is sound only if `T` is the module type the *original* meant, so
`T` is never read from text in another scope: each name of a parameter's type is located by
Coq itself, in a file that is the original's own text up to the header followed by
`Locate Module <name>.` (the task's text, never the candidate's), and the identity file
names it by that full path. A name Coq cannot locate there, or a parameter type in a form
not read here (`with`, a functor inside a functor), leaves the target `undecided`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import secrets
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_identity import (
    CONTEXT_MODULE,
    ORIGINAL_MODULE,
    Instance,
    TargetPlan,
    split_source,
)
from formalbench.backends.coq_queries import Located, parse_locate
from formalbench.backends.sandbox import work_dir
from formalbench.checking.decls import Decl
from formalbench.core.records import CheckStatus


class Undecided(Exception):
    """The kernel route cannot decide this task; the message says why."""


_MARKS = ("Import", "Export")
_SYMBOLS = ("(", ")", "<", "+")


def _header(d: Decl) -> tuple[list[str], int]:
    """The header's words from `Module`, and where its name is (`Module Type T`, `Module
    Import M`, `Module Export M`)."""
    texts = [t.text for t in d.tokens[d.head :]]
    return texts, 2 if texts[1:2] in (["Type"], ["Import"], ["Export"]) else 1


def header_name(d: Decl) -> str:
    """The name a `Module`/`Module Type` header declares."""
    texts, at = _header(d)
    return texts[at]


def instance_of(d: Decl, path: str) -> Instance:
    """The functor or module type `d` opens (its full name in the original: `path`), its
    parameters' types as tokens: an earlier parameter as `#k`, other names as written
    (`resolved` replaces them by full paths). Raises `Undecided` for a header not read here."""
    texts, at = _header(d)
    module_type = texts[1:2] == ["Type"]
    at += 1
    names: list[str] = []
    params: list[tuple[str, ...]] = []
    while at < len(texts) and texts[at] == "(":
        close = _closing(texts, at)
        inner = texts[at + 1 : close]
        if ":" not in inner:
            raise Undecided(
                f"the header of `{path}` has a parameter `{' '.join(inner)}` without a type"
            )
        colon = inner.index(":")
        bound = [w for w in inner[:colon] if w not in _MARKS]
        kind = tuple(_param_word(w, names, path) for w in inner[colon + 1 :])
        if not bound or not kind:
            raise Undecided(
                f"the header of `{path}` has a parameter `{' '.join(inner)}` not read here"
            )
        for name in bound:
            names.append(name)
            params.append(kind)
        at = close + 1
    return Instance(path, module_type, tuple(params), header=d.start)


def _closing(texts: list[str], at: int) -> int:
    depth = 0
    for i in range(at, len(texts)):
        depth += {"(": 1, ")": -1}.get(texts[i], 0)
        if depth == 0:
            return i
    raise Undecided("a functor header without its closing parenthesis")


def _param_word(word: str, earlier: list[str], path: str) -> str:
    if word in earlier:
        return f"#{len(earlier) - 1 - earlier[::-1].index(word)}"
    if word in _SYMBOLS:
        return word
    head = word.split(".", 1)[0]
    if head in earlier or not all(
        part.replace("'", "_").isidentifier() for part in word.split(".")
    ):
        raise Undecided(
            f"a parameter type of `{path}` has `{word}`, not a module type name or a parameter"
        )
    return word


_cache: dict[str, dict[tuple[str, str], str]] = {}
_guard = threading.Lock()


def resolved(
    backend: CoqBackend,
    original: str,
    plans: Sequence[TargetPlan],
    timeout: float,
    shared: tuple[str, str, Path] | None = None,
) -> list[TargetPlan]:
    """`plans` with every name of their instances' parameter types replaced by its full
    path, as Coq locates it in the original's scope just before each header. `shared`:
    the original is compiled on top of its shared context (text, replayed commands, the
    folder holding its `FbContext.vo`), and so is the scope read here."""
    wanted = {p.instance.header: p.instance for p in plans if p.instance is not None}
    if not wanted:
        return list(plans)
    paths = {
        header: _locate(backend, original, header, _names(instance), timeout, shared)
        for header, instance in wanted.items()
    }
    out = []
    for plan in plans:
        if plan.instance is None:
            out.append(plan)
            continue
        full = paths[plan.instance.header]
        params = tuple(
            tuple(full.get(named, named[0]) for named in _roles(param))
            for param in plan.instance.params
        )
        out.append(
            dataclasses.replace(plan, instance=dataclasses.replace(plan.instance, params=params))
        )
    return out


def _roles(param: tuple[str, ...]) -> list[tuple[str, str]]:
    """Each word of a parameter type with what it names there: a module type at the head
    of the type or of a `<+` part (`T`, `T <+ U`), a module as an argument (`T M`)."""
    out = []
    for i, word in enumerate(param):
        before = param[i - 1] if i else "("
        out.append((word, "Module Type" if before in ("(", "+") else "Module"))
    return out


def _names(instance: Instance) -> list[tuple[str, str]]:
    return sorted(
        {
            (w, role)
            for p in instance.params
            for w, role in _roles(p)
            if w not in _SYMBOLS and not w.startswith("#")
        }
    )


def _locate(
    backend: CoqBackend,
    original: str,
    header: int,
    names: list[tuple[str, str]],
    timeout: float,
    shared: tuple[str, str, Path] | None,
) -> dict[tuple[str, str], str]:
    """name -> full path of the module or module type it means at `header` in `original`.

    The file compiled is the original's text before the header, then one `Locate Module`
    per name between markers with a fresh nonce (which the text cannot print); what comes
    after the last marker (e.g. coqc's complaint about a module still open at the end of
    this cut) does not matter. Compiled as `Original.v` (on `FbContext` where the original
    is), so a module type the task itself declares is named as the identity file knows it."""
    text = original[:header]
    if shared is not None:
        context, replay, _ = shared
        if not text.startswith(context):
            raise Undecided("a functor header inside the task's shared context")
        text = split_source(text, context, replay)
    key = hashlib.sha256(
        "\x01".join([backend.version(), "\0".join(backend.args), text, repr(names)]).encode()
    ).hexdigest()
    with _guard:
        if key in _cache:
            return _cache[key]
    nonce = secrets.token_hex(6)
    lines = [text.rstrip(), ""]
    for i, (name, _) in enumerate(names):
        lines += [f"Locate fb_{nonce}_q{i}.", f"Locate Module {name}."]
    lines.append(f"Locate fb_{nonce}_end.")
    with work_dir("coq") as tmp:
        if shared is not None:
            shutil.copy(shared[2] / f"{CONTEXT_MODULE}.vo", tmp)
        outcome = backend.compile(Path(tmp), ORIGINAL_MODULE, "\n".join(lines) + "\n", timeout)
    if outcome.status != CheckStatus.ok:
        raise Undecided(
            f"the original's scope could not be read for its functor header: {outcome.status.value}"
        )
    answers = _answers(outcome.stdout, nonce, len(names))
    found: dict[tuple[str, str], str] = {}
    for i, (name, role) in enumerate(names):
        located = _meant(name, role, parse_locate(answers.get(i, []), name))
        if located is None:
            raise Undecided(
                f"Coq does not locate the {role.lower()} `{name}` of a functor parameter's "
                "type in the original's scope before its header"
            )
        found[name, role] = located.path
    with _guard:
        _cache[key] = found
    return found


def _meant(name: str, role: str, located: list[Located]) -> Located | None:
    """Which of the modules `Locate Module name` lists (every module and module type with
    that basename, each with its shortest name there) `name` means as a `role` (modules and
    module types are two namespaces): the one whose shortest name it is; else (`name` is
    longer than needed) the only one whose shortest name ends it."""
    modules = [o for o in located if o.kind == role]
    exact = [o for o in modules if o.shortest == name]
    if len(exact) == 1:
        return exact[0]
    within = [o for o in modules if name.endswith("." + o.shortest)]
    return within[0] if not exact and len(within) == 1 else None


def _answers(stdout: str, nonce: str, count: int) -> dict[int, list[str]]:
    marks = {f"No object of basename fb_{nonce}_q{i}": i for i in range(count)}
    end = f"No object of basename fb_{nonce}_end"
    out: dict[int, list[str]] = {}
    current: int | None = None
    for line in stdout.splitlines():
        if line in marks:
            current = marks[line]
            out[current] = []
        elif line == end:
            return out
        elif current is not None:
            out[current].append(line)
    return {}  # the end marker never came: nothing is trusted
