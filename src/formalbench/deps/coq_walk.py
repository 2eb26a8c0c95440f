"""The dependency walk of Coq statements, asked of coqc (`Set Printing All`, `About`, `Print`).

Coq 8.16 prints every global by its shortest name *in the current context* and has no
"print fully qualified names" option, so the walk resolves names where they were printed,
in three steps that each batch many queries into one coqc run:

1. the task (one run per task, cached by its text): the file up to the statement (closed
   with `Admitted.`), then `About`/`Print` of the statement and of every declaration the
   file itself makes before it. The file's own declarations are walked here.
2. the import context (one run per distinct list of `Require`/`Import` commands): `About`
   of every library name the statements printed gives its fully qualified path.
3. the library (one run per level, for all tasks together): a file that `Require`s every
   library the tasks load, without importing anything, in which `Print <qualified>` shows
   a declaration's type and, for a transparent one, its body, and `About` qualifies the
   names printed there. Library declarations are cached by qualified name (`DepsCache`),
   so a dataset shares one walk, and a second run asks coqc nothing.

Bodies of library lemmas are not shown by coqc (`*** [ c : T ]` for opaque constants and
axioms); the file's own lemmas are shown whole.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_environment import ENVIRONMENT, environment_message
from formalbench.backends.coq_print import MAX_RERUNS, Answers, ask
from formalbench.backends.coq_queries import LOCAL_MODULE
from formalbench.backends.coq_terms import Printed, parse_about, parse_print
from formalbench.checking.decls import Decl
from formalbench.checking.holes import hole_decls
from formalbench.checking.value_check import TERM_KINDS
from formalbench.core.records import Language, Task
from formalbench.store.deps_cache import DepsCache

_LOADING = frozenset({"Require", "From", "Import", "Export"})
_IMPORTING = re.compile(r"\b(Import|Export)\b")
LOCAL = LOCAL_MODULE + "."  # prefix of the names the task's own file declares


@dataclass
class StatementDeps:
    """What one task's own file says: its statement's names and its local declarations'."""

    task_id: str
    root: str = ""  # the statement, as `Candidate.<name>`
    edges: dict[str, list[str]] = field(default_factory=dict)  # local node -> names it uses
    kinds: dict[str, str] = field(default_factory=dict)  # node -> what Print showed
    context: str = ""  # the `Require`/`Import` commands before the statement
    error: str | None = None  # why the task was skipped


@dataclass
class WalkStats:
    coqc_runs: int = 0
    tasks_cached: int = 0
    library_asked: int = 0  # library declarations coqc was asked about in this run


def _sha(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()


def _statement_decl(decls: list[Decl], holes: Iterable[int]) -> Decl | None:
    """The statement to measure: the first theorem with a hole, else the first named hole."""
    named = [decls[i] for i in sorted(holes) if decls[i].name]
    theorems = [d for d in named if d.kind == "Theorem"]
    chosen = theorems or named
    return chosen[0] if chosen else None


def _closed_prefix(text: str, decl: Decl) -> str | None:
    """The file up to the end of `decl`'s statement sentence, closed with `Admitted.`."""
    for tok in decl.tokens[decl.head :]:
        if tok.kind == "end":
            return text[: tok.end] + "\nAdmitted.\n"
    return None


class CoqDependencyWalker:
    """Walks statements to distance k; see the module doc for the three steps."""

    def __init__(
        self,
        backend: CoqBackend,
        cache: DepsCache | None = None,
        *,
        workers: int = 2,
        timeout: float = 120.0,
        batch: int = 40,
    ) -> None:
        self.backend = backend
        self.cache = cache or DepsCache()
        self.workers = max(1, workers)
        self.timeout = timeout
        self.batch = max(1, batch)  # tasks of one import context per coqc run
        self.version = backend.version()
        self.stats = WalkStats()

    def _ask(self, source: str, queries: list[str], reruns: int = MAX_RERUNS) -> Answers:
        answers = ask(self.backend, source, queries, self.timeout, reruns=reruns)
        self.stats.coqc_runs += answers.runs
        return answers

    def _not_compiled(self, error: str) -> str:
        """Why a task is skipped: coqc's error, led by what is missing and how to fix it
        when a library cannot be loaded (`backends/coq_environment`; issue 30 item 8)."""
        if ENVIRONMENT.search(error):
            project, chain = self.backend.project, self.backend.toolchain
            return f"does not compile here: {environment_message(error, project, chain)}"
        return f"does not compile: {error}"

    # --- step 1: the task's own file ------------------------------------------------------
    def _prepare(self, task: Task) -> StatementDeps | _Pending:
        """The task's statement from the cache, or what to ask coqc about it."""
        out = StatementDeps(task.id)
        text = task.source_text
        try:
            decls, holes = hole_decls(text, Language.coq)
        except Exception as exc:  # a text our splitter cannot read is skipped, not fatal
            out.error = f"unreadable: {exc}"[:300]
            return out
        target = _statement_decl(decls, holes)
        prefix = _closed_prefix(text, target) if target is not None else None
        if target is None or prefix is None:
            out.error = "no statement with a hole"
            return out
        before = decls[: target.index]
        out.context = "\n".join(
            " ".join(text[d.start : d.end].split()) for d in before if d.kind in _LOADING
        )  # one sentence a line
        own = list(dict.fromkeys(d.name for d in before if d.name and d.kind in TERM_KINDS))
        names = [target.name or "", *own]
        key = _sha("statement-1", self.version, prefix, *names)
        payload = self.cache.statement(key)
        if payload is None:
            return _Pending(out, prefix, names, key)
        self.stats.tasks_cached += 1
        return _filled(out, payload)

    def statement(self, task: Task) -> StatementDeps:
        """The statement of `task` and its own file's declarations (cached by text)."""
        prepared = self._prepare(task)
        return prepared if isinstance(prepared, StatementDeps) else self._single(prepared)

    def _single(self, pending: _Pending) -> StatementDeps:
        answers = self._ask(pending.prefix, _queries(pending.names, ""))
        if answers.source_error is not None:
            # a file that does not compile here (a missing library, another Coq) stays so
            payload = {"error": self._not_compiled(answers.source_error), "cacheable": True}
        elif answers.status.value != "ok":
            payload = {"error": f"coqc ended with {answers.status.value}"}
        else:
            payload = _payload(answers.outputs, 0, pending.names, "")
        return self._keep(pending, payload)

    def _keep(self, pending: _Pending, payload: dict[str, Any]) -> StatementDeps:
        if payload.get("error") is None or payload.get("cacheable"):
            self.cache.put_statement(pending.key, payload)
        return _filled(pending.deps, payload)

    def _batch(self, context: str, pendings: list[_Pending]) -> list[StatementDeps]:
        """Tasks of one import context in one coqc run, each in its own module (`fbT<i>`):
        the context is loaded once. A task that breaks the file is asked alone, the others
        again together; a context that does not load fails all of them."""
        if len(pendings) == 1:
            return [self._single(pendings[0])]
        head = context + "\n"
        parts = [head]
        line = head.count("\n") + 1
        spans: list[tuple[int, int]] = []
        queries: list[str] = []
        for i, p in enumerate(pendings):
            block = f"Module fbT{i}.\n{p.prefix}\nEnd fbT{i}.\n"
            spans.append((line, line + block.count("\n") - 1))
            line += block.count("\n")
            parts.append(block)
            queries += _queries(p.names, f"fbT{i}.")
        answers = self._ask("".join(parts), queries)
        if answers.source_error is not None:
            where = answers.source_line or 0
            broken = next((i for i, (a, b) in enumerate(spans) if a <= where <= b), None)
            if broken is None:  # the shared context itself
                payload = {"error": self._not_compiled(answers.source_error), "cacheable": True}
                return [self._keep(p, payload) for p in pendings]
            alone = self._single(pendings[broken])
            rest = self._batch(context, pendings[:broken] + pendings[broken + 1 :])
            return rest[:broken] + [alone] + rest[broken:]
        if answers.status.value != "ok":
            return [self._single(p) for p in pendings]
        out = []
        at = 0
        for i, p in enumerate(pendings):
            out.append(self._keep(p, _payload(answers.outputs, at, p.names, f"fbT{i}.")))
            at += 2 * len(p.names)
        return out

    # --- step 2: library names in each import context -------------------------------------
    def resolve(self, statements: Sequence[StatementDeps]) -> None:
        """Replace the library names each statement's file printed by qualified paths."""
        groups: dict[str, list[StatementDeps]] = {}
        for s in statements:
            if s.error is None:
                groups.setdefault(s.context, []).append(s)

        known: dict[str, dict[str, str | None]] = {}
        wanted: dict[str, list[str]] = {}
        for context, members in groups.items():
            printed = sorted(
                {
                    r
                    for s in members
                    for refs in s.edges.values()
                    for r in refs
                    if not r.startswith(LOCAL)
                }
            )
            known[context] = self.cache.names(_sha("context-1", self.version, context), printed)
            todo = [n for n in printed if n not in known[context]]
            if todo:
                wanted[context] = todo
        contexts = sorted(wanted)
        size = max(1, -(-len(contexts) // self.workers))
        chunks = [contexts[i : i + size] for i in range(0, len(contexts), size)]
        with ThreadPoolExecutor(self.workers) as pool:
            for found in pool.map(lambda chunk: self._about_in(chunk, wanted), chunks):
                for context, names in found.items():
                    self.cache.put_names(_sha("context-1", self.version, context), names)
                    known[context].update(names)
        resolved = known
        for context, members in groups.items():
            names = resolved[context]
            for s in members:
                s.edges = {
                    node: _dedupe(r if r.startswith(LOCAL) else names.get(r) for r in refs)
                    for node, refs in s.edges.items()
                }

    def _about_in(
        self, contexts: list[str], wanted: dict[str, list[str]]
    ) -> dict[str, dict[str, str | None]]:
        """`About` each wanted name in its context, every context in its own module of one
        file (an `Import` inside a module ends with it); one run per context if that fails."""
        items: list[str] = []
        where: dict[int, tuple[str, str]] = {}
        for i, context in enumerate(contexts):
            items.append(f"Module fbC{i}. " + " ".join(context.split("\n")))
            for name in wanted[context]:
                where[len(items)] = (context, name)
                items.append(f"About {name}.")
            items.append(f"End fbC{i}.")
        answers = self._ask("", items, reruns=0)
        found: dict[str, dict[str, str | None]] = {c: {} for c in contexts}
        if answers.failed or answers.source_error or len(answers.outputs) < len(items):
            for context in contexts:
                names = wanted[context]
                alone = self._ask(context + "\n", [f"About {n}." for n in names])
                found[context] = {
                    n: _qualified(alone.outputs.get(i))
                    for i, n in enumerate(names)
                    if i in alone.outputs
                }
            return found
        for index, (context, name) in where.items():
            found[context][name] = _qualified(answers.outputs.get(index))
        return found

    # --- step 3: the library, shared by all tasks -----------------------------------------
    def library(
        self, roots: Iterable[str], depth: int, requires: Iterable[str]
    ) -> dict[str, tuple[str, list[str]]]:
        """Library declarations within `depth` - 1 hops of `roots` (qualified), with the
        qualified names each uses; what the cache lacks is asked of coqc level by level."""
        universe = _universe(requires)
        ukey = _sha("universe-1", self.version, universe)
        known: dict[str, tuple[str, list[str]]] = {}
        frontier = set(roots)
        seen = set(frontier)
        for _level in range(1, depth):
            todo = []
            for name in sorted(frontier):
                hit = self.cache.decl(self.version, name)
                if hit is None:
                    todo.append(name)
                else:
                    known[name] = hit
            if todo:
                self.stats.library_asked += len(todo)
                known.update(self._ask_library(universe, ukey, todo))
            frontier = {r for n in frontier for r in known.get(n, ("", []))[1]} - seen
            seen |= frontier
            if not frontier:
                break
        return known

    def _ask_library(
        self, universe: str, ukey: str, names: list[str]
    ) -> dict[str, tuple[str, list[str]]]:
        answers = self._ask(universe, [f"Print {n}." for n in names])
        if answers.source_error is not None:
            raise RuntimeError(f"the libraries of the tasks do not load together: "
                               f"{answers.source_error}")  # fmt: skip
        shown = {n: parse_print(answers.outputs.get(i, [])) for i, n in enumerate(names)}
        printed = sorted({r for p in shown.values() if p for r in [*p.refs, p.name]})
        resolved = self.cache.names(ukey, printed)
        todo = [n for n in printed if n not in resolved]
        if todo:
            about = self._ask(universe, [f"About {n}." for n in todo])
            found = {n: _qualified(about.outputs.get(i)) for i, n in enumerate(todo)}
            self.cache.put_names(ukey, found)
            resolved.update(found)
        decls: dict[str, tuple[str, list[str]]] = {}
        for name, p in shown.items():
            if p is None:
                decls[name] = ("unprinted", [])  # a real declaration (About found it)
                continue
            refs = [*p.refs, p.name] if p.kind == "inductive" else p.refs
            qualified = [q for q in _dedupe(resolved.get(r) for r in refs) if q != name]
            decls[name] = (p.kind, qualified)
        self.cache.put_decls(self.version, decls)
        return decls

    # --- everything -----------------------------------------------------------------------
    def walk(
        self,
        tasks: Sequence[Task],
        depth: int,
        progress: Callable[[int, bool], None] | None = None,
    ) -> tuple[list[StatementDeps], dict[str, tuple[str, list[str]]]]:
        """Each task's own part and the library part of the walk to distance `depth`;
        `progress(n, cached)` counts the statements done."""

        prepared = [self._prepare(task) for task in tasks]
        groups: dict[str, list[_Pending]] = {}
        for p in prepared:
            if isinstance(p, _Pending):
                groups.setdefault(p.deps.context, []).append(p)
        batches = [
            (context, members[i : i + self.batch])
            for context, members in groups.items()
            for i in range(0, len(members), self.batch)
        ]
        if progress is not None:
            progress(sum(isinstance(p, StatementDeps) for p in prepared), True)

        def one(item: tuple[str, list[_Pending]]) -> list[StatementDeps]:
            done = self._batch(*item)
            if progress is not None:
                progress(len(done), False)
            return done

        with ThreadPoolExecutor(self.workers) as pool:
            answered = {s.task_id: s for group in pool.map(one, batches) for s in group}
        statements = [
            p if isinstance(p, StatementDeps) else answered.get(p.deps.task_id, p.deps)
            for p in prepared
        ]
        self.resolve(statements)
        roots = {
            r
            for s in statements
            if s.error is None
            for refs in s.edges.values()
            for r in refs
            if not r.startswith(LOCAL)
        }
        requires = {s.context for s in statements if s.error is None}
        library = self.library(roots, depth, requires) if roots else {}
        return statements, library


@dataclass
class _Pending:
    """A task whose statement coqc must be asked about."""

    deps: StatementDeps
    prefix: str  # the file up to the statement, closed with `Admitted.`
    names: list[str]  # the statement, then the file's own declarations before it
    key: str


def _queries(names: list[str], module: str) -> list[str]:
    return [q for n in names for q in (f"About {module}{n}.", f"Print {module}{n}.")]


def _filled(out: StatementDeps, payload: dict[str, Any]) -> StatementDeps:
    out.error = payload.get("error")
    out.root = payload.get("root", "")
    out.edges = {k: list(v) for k, v in payload.get("edges", {}).items()}
    out.kinds = dict(payload.get("kinds", {}))
    return out


def _payload(
    outputs: dict[int, list[str]], at: int, names: list[str], module: str
) -> dict[str, Any]:
    try:
        return _read_payload(outputs, at, names, module)
    except Exception as exc:  # one odd answer skips its task, never the run
        return {"error": f"could not read coqc's answer: {exc!r}"[:300]}


def _read_payload(
    outputs: dict[int, list[str]], at: int, names: list[str], module: str
) -> dict[str, Any]:
    """The statement's part of the graph from the answers at `at`.. (About, Print per name);
    `module`: the `fbT<i>.` the task sat in, dropped from paths so that a task's entry is
    the same whether it was asked alone or in a batch."""
    printed: dict[str, Printed] = {}
    local: dict[str, str] = {}  # name as printed (constructors too) -> Candidate.<...>
    root = ""
    inner = LOCAL + module
    for j, name in enumerate(names):
        about = parse_about(outputs.get(at + 2 * j, []))
        shown = parse_print(outputs.get(at + 2 * j + 1, []))
        if about is None or shown is None:
            continue
        path = about[1]
        if module:
            path = LOCAL + path.split(inner, 1)[1] if inner in path else path
        printed[path] = shown
        root = root or (path if j == 0 else "")
        for alias in {name, shown.name, *shown.declares}:
            local[alias] = path
            local[module + alias] = path
    if not root.startswith(LOCAL):
        return {"error": "coqc did not print the statement"}
    edges: dict[str, list[str]] = {}
    kinds: dict[str, str] = {}
    for path, shown in printed.items():
        edges[path] = [local.get(r, r) for r in shown.refs if local.get(r) != path]
        kinds[path] = shown.kind
    return {"root": root, "edges": edges, "kinds": kinds, "error": None}


def _qualified(lines: list[str] | None) -> str | None:
    about = parse_about(lines or [])
    return about[1] if about else None


def _dedupe(names: Iterable[str | None]) -> list[str]:
    return list(dict.fromkeys(n for n in names if n))


def _universe(contexts: Iterable[str]) -> str:
    """One file that loads every library the contexts load and imports none of them."""
    lines: list[str] = []
    for context in sorted(contexts):
        for sentence in context.split("\n"):
            sentence = sentence.strip()
            if "Require" not in sentence:
                continue
            plain = _IMPORTING.sub("", sentence)
            plain = " ".join(plain.split())
            if plain not in lines:
                lines.append(plain)
    return "\n".join(lines) + "\n"
