"""The axioms each declaration of a compiled library rests on, read from `Print Assumptions`.

The public entry for pipelines that judge a library of their own compile (not the verifier,
which reads the kernel's assumptions from its dump, `checking/coq_kernel.py`): a query file
of ours holds only `Require <library>.` (nothing imported, so nothing of the library's scope
is active) and `Print Assumptions <library>.<d>` for each declaration, then `Locate` of each
printed basename; the answers are read with the strict grammar of `coq_queries`, and each
printed name is resolved to its full path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_output import parse_messages
from formalbench.backends.coq_queries import (
    LIBRARY_AXIOMS,
    Located,
    Query,
    QueryScript,
    UnreadableOutput,
    basename,
    parse_locate,
    read_assumption_entries,
    resolve,
)
from formalbench.backends.coq_source import SourceMap
from formalbench.core.records import CheckStatus, Severity


@dataclass
class QueryRun:
    """One run of a query file: printed axioms per declaration, `Locate` answers."""

    own: tuple[str, ...]  # libraries whose names are printed with their first word
    printed: dict[str, list[str]] = field(default_factory=dict)
    # declaration -> printed name -> the kernel check switched off for it (guarded,
    # positive, type_in_type, uip); an entry not named here is an axiom
    kinds: dict[str, dict[str, str]] = field(default_factory=dict)
    located: dict[str, list[Located]] = field(default_factory=dict)
    undecided: str | None = None

    def path(self, printed: str) -> str | None:
        """The full path of an axiom as printed (the queried library's names are printed
        with its own name first: nothing is imported there)."""
        if printed.split(".", 1)[0] in self.own:
            return printed
        for key in (printed, basename(printed)):
            found = resolve(printed, self.located.get(key, []))
            if found is not None:
                return found
        return None


def library_assumptions(
    backend: CoqBackend,
    folder: Path,
    library: str,
    declarations: Sequence[str],
    timeout: float,
) -> dict[str, list[str]]:
    """The axioms each declaration `d` (`t`, `M.t`) of the compiled `<library>` rests on, by
    full path. `folder` (a sandbox work folder) holds `<library>.vo` and the `.vo` files it
    needs. The library's own holes and postulates come back as `<library>.<name>` (an
    `Admitted` theorem is an axiom of its library). Raises `UnreadableOutput` with the reason
    when coqc's output cannot be read or a declaration does not exist."""
    text = f"Require {library}.\n"
    subjects = {f"{library}.{d}": d for d in declarations}
    names = list(LIBRARY_AXIOMS)
    for _ in range(2):
        run = query_file(
            backend, folder, "FbAssumptions", text, subjects, names, timeout, (library,)
        )
        if run.undecided is not None:
            raise UnreadableOutput(run.undecided)
        unknown = {p for ps in run.printed.values() for p in ps if run.path(p) is None}
        if unknown <= set(names):
            break
        names = sorted(set(names) | unknown)
    return {d: [run.path(p) or p for p in ps] for d, ps in run.printed.items()}


def query_file(
    backend: CoqBackend,
    work: Path,
    module: str,
    text: str,
    subjects: Mapping[str, str],
    names: Sequence[str],
    timeout: float,
    own: tuple[str, ...],
) -> QueryRun:
    """Compile `text` + `Print Assumptions` of each subject (constant -> the name its
    answer is filed under) + `Locate` of each name as `<module>.v` in `work`; any error or
    an answer outside the grammar: `undecided`. Also used to verify the axiom presets
    against the running Coq (`checking.coq_presets`)."""
    queries = [Query("assumptions", c) for c in subjects]
    queries += [Query("locate", n) for n in names]
    script = QueryScript(queries, first_line=text.count("\n") + 1)
    full = text + script.text
    outcome = backend.compile(work, module, full, timeout)
    run = QueryRun(own=own)
    if outcome.status != CheckStatus.ok:
        run.undecided = f"{module}.v ended with {outcome.status.value}"
        return run
    for message in parse_messages(outcome.stderr, SourceMap(full).line_starts):
        if message.severity == Severity.error:
            run.undecided = f"{module}.v failed: {' '.join(message.text.split())[:400]}"
            return run
    if outcome.returncode:
        run.undecided = f"{module}.v failed without a message"
        return run
    _, outputs = script.split(outcome.stdout)
    for index, query in enumerate(queries):
        if index not in outputs:
            run.undecided = f"{module}.v did not answer `{query.command}`"
            return run
        if query.kind == "locate":
            run.located[query.subject] = parse_locate(outputs[index], query.subject)
            continue
        name = subjects[query.subject]
        try:
            entries = read_assumption_entries(outputs[index])
        except UnreadableOutput as problem:
            run.undecided = f"the axioms of `{name}` cannot be read: {problem}"
            return run
        run.printed[name] = list(entries)
        run.kinds[name] = {p: kind for p, kind in entries.items() if kind != "axiom"}
    return run
