"""BEq and GTED (Coq, tier 1, real coqc) on the miniF2F-Coq statements against mutated
copies of themselves: does every pair get a verdict, and is it the right one?

Mutations of each statement (`forall binders, H1 -> ... -> Hn -> C` as written):

- header:  itself under a different header (`Require Import Lia.`, `Set Implicit
           Arguments.` added): equivalent
- curried: `A /\\ B -> C` <-> `A -> B -> C` (the first hypothesis that is a conjunction,
           else the first two hypotheses joined): equivalent
- reorder: the first two hypotheses swapped: equivalent
- scope:   the same text under another scope (`Open Scope Z_scope`, or `R_scope` where Z's
           is open): equivalent exactly when Coq elaborates both to the same term (both
           printed terms are compared), else not
- type:    binder types changed (nat -> Z, Z -> R, R -> Z): not equivalent
- drop:    the last hypothesis dropped: not equivalent
- weaken:  a strict bound in a hypothesis made non-strict (`<` -> `<=`, `>` -> `>=`): not
           equivalent

A statement the portfolio proves alone is "trivial": BEq refuses it by design (it would
match everything), so its equivalent mutations are counted apart, not as wrong. A pair is
"decided" when both directions got a verdict (a candidate that does not type-check in its
own header is decided: not equivalent), "undecided" when coqc stopped before a check,
"crashed" when the comparison raised (an `InputError` is what `compare` would exit 2 on).
References coqc refuses here (Coquelicot, Rocq 9's `Stdlib`) are skipped and counted.

    python bench/bench_beq_mutations.py --limit 20 [--data ../shared/data] [--kinds a,b]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from formalbench.backends.coq import CoqBackend
from formalbench.comparison.beq_coq import BeqResult, CoqBeq, parse_statement
from formalbench.comparison.compare import coq_gted
from formalbench.comparison.coq_sides import local_names
from formalbench.core.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.shared_data import DATA  # noqa: E402

EQUIVALENT = {"header": True, "curried": True, "reorder": True, "type": False}
EQUIVALENT |= {"drop": False, "weaken": False}


def split_top(text: str, sep: str) -> list[str]:
    """`text` cut at `sep` outside brackets (`->` never inside `<->`)."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i) and not (sep == "->" and text[i - 1] == "<"):
            parts.append(text[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def shape(term: str) -> tuple[str, list[str], str] | None:
    """`forall B, H1 -> ... -> C` as (the `forall B,` prefix or "", [H1, ...], C); None when
    a hypothesis binds names (a `,` at its top level) or the text has no arrows."""
    prefix, body = "", term.strip()
    if body.startswith("forall"):
        cut = split_top(body, ",")
        if len(cut) < 2:
            return None
        prefix, body = cut[0] + ",", ",".join(cut[1:]).strip()
    pieces = split_top(body, "->")
    hyps, concl = pieces[:-1], pieces[-1]
    if any(len(split_top(h, ",")) > 1 for h in hyps):
        return None
    return prefix, hyps, concl


def build(prefix: str, hyps: list[str], concl: str) -> str:
    return f"{prefix} " + "".join(f"({h}) -> " for h in hyps) + concl


def curried(term: str) -> str | None:
    found = shape(term)
    if found is None:
        return None
    prefix, hyps, concl = found
    for k, h in enumerate(hyps):
        parts = split_top(h, "/\\")
        if len(parts) == 2 and all(len(split_top(p, "\\/")) == 1 for p in parts):
            return build(prefix, [*hyps[:k], *parts, *hyps[k + 1 :]], concl)
    if len(hyps) >= 2:
        return build(prefix, [f"({hyps[0]}) /\\ ({hyps[1]})", *hyps[2:]], concl)
    return None


def reorder(term: str) -> str | None:
    found = shape(term)
    if found is None or len(found[1]) < 2:
        return None
    prefix, hyps, concl = found
    return build(prefix, [hyps[1], hyps[0], *hyps[2:]], concl)


def drop(term: str) -> str | None:
    found = shape(term)
    if found is None or not found[1]:
        return None
    prefix, hyps, concl = found
    return build(prefix, hyps[:-1], concl)


def weaken(term: str) -> str | None:
    found = shape(term)
    if found is None:
        return None
    prefix, hyps, concl = found
    for k, h in enumerate(hyps):
        strict = re.sub(r"(?<![<>=-])([<>])(?![=>-])", r"\1=", h, count=1)
        if strict != h and "<->" not in h:
            return build(prefix, [*hyps[:k], strict, *hyps[k + 1 :]], concl)
    return None


_TYPES = {"nat": "Z", "Z": "R", "R": "Z"}


def retype(term: str) -> str | None:
    changed = re.sub(r":\s*(nat|Z|R)\b", lambda m: f": {_TYPES[m.group(1)]}", term)
    return changed if changed != term else None


def mutations(text: str) -> dict[str, tuple[str, str]]:
    """kind -> (header, term) of the candidate, for the kinds that apply to `text`."""
    s = parse_statement(text, "reference")
    out: dict[str, tuple[str, str]] = {
        "header": ("Require Import Lia.\n" + s.header + "Set Implicit Arguments.\n", s.term)
    }
    term_kinds: dict[str, Callable[[str], str | None]] = {
        "curried": curried,
        "reorder": reorder,
        "drop": drop,
        "weaken": weaken,
        "type": retype,
    }
    for kind, mutate in term_kinds.items():
        changed = mutate(s.term)
        if changed is not None:
            header = s.header
            if kind == "type":
                header = "Require Import ZArith Reals.\n" + header
            out[kind] = (header, changed)
    opened = "Z_scope" if "Z_scope" not in s.header else "R_scope"
    library = "ZArith" if opened == "Z_scope" else "Reals"
    out["scope"] = (f"{s.header}Require Import {library}.\nOpen Scope {opened}.\n", s.term)
    return out


def theorem(header: str, term: str) -> str:
    return f"{header}Theorem fb_mutated : {term}.\nProof.\nAdmitted.\n"


def expected(kind: str, result: BeqResult, text: str) -> bool | None:
    """The right verdict; None where the bench cannot tell (a scope change of a statement
    with its own definitions: the statement reads the same, the definitions may not)."""
    if kind != "scope":
        return EQUIVALENT[kind]
    if not result.compiled or result.printed is None:
        return False
    same = local_names(result.printed[0]) == local_names(result.printed[1])
    own = re.search(r"(?m)^\s*(Definition|Fixpoint)\b", text)
    return None if same and own else same


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--limit", type=int, default=0, help="N statements spread over all 488")
    ap.add_argument("--kinds", default="", help="comma-separated mutation kinds (default all)")
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args()
    if args.data is None:
        sys.exit("no data folder: pass --data (the shared data/ folder)")
    files = sorted((Path(args.data) / "minif2f-coq").glob("*/*.v"))
    if 0 < args.limit < len(files):  # evenly spaced: every competition and both splits
        files = [files[k * len(files) // args.limit] for k in range(args.limit)]
    kinds = [k for k in args.kinds.split(",") if k]
    beq = CoqBeq(CoqBackend(workers=1, timeout=args.timeout), timeout=args.timeout)
    counts: dict[str, Counter[str]] = {}
    skipped: Counter[str] = Counter()
    wrong: list[str] = []
    t0 = time.perf_counter()
    for path in files:
        text = path.read_text(encoding="utf-8")
        try:
            todo = {k: v for k, v in mutations(text).items() if not kinds or k in kinds}
        except InputError as exc:
            skipped[f"statement refused: {str(exc)[:60]}"] += 1
            continue
        pairs = [(text, theorem(h, t)) for h, t in todo.values()]
        try:
            results: list[BeqResult | Exception] = list(beq.compare_many(pairs))
        except InputError as exc:
            if str(exc).startswith("reference: Coq does not accept"):
                skipped["reference not accepted by coqc here"] += 1
                continue
            results = []
            for pair in pairs:  # tell which pair raised
                try:
                    results.append(beq.compare(*pair))
                except Exception as one:  # noqa: BLE001 - counted as a crash
                    results.append(one)
        for kind, result in zip(todo, results, strict=True):
            c = counts.setdefault(kind, Counter())
            c["pairs"] += 1
            if isinstance(result, Exception):
                c["crashed"] += 1
                wrong.append(f"{path.stem} {kind}: crashed: {result}")
                continue
            undecided = [n for n in result.notes if "undecided" in n]
            c["undecided" if undecided else "decided"] += 1
            if undecided:
                wrong.append(f"{path.stem} {kind}: {undecided[0][:160]}")
            if result.compiled and coq_gted(result)["gted"] is None:
                c["gted unavailable"] += 1
            if undecided:
                continue
            want = expected(kind, result, text)
            if want is None:
                c["unlabelled"] += 1
            elif want and result.compiled and (result.forward.trivial or result.backward.trivial):
                c["trivial"] += 1
            elif result.beq == want:
                c["right"] += 1
            else:
                c["wrong"] += 1
                wrong.append(f"{path.stem} {kind}: BEq {result.beq}, expected {want}")
    seconds = time.perf_counter() - t0
    columns = ["pairs", "decided", "undecided", "crashed", "right", "wrong", "trivial"]
    columns += ["unlabelled", "gted unavailable"]
    print(f"{len(files)} statements, {seconds:.0f} s")
    print("| kind | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for kind, c in counts.items():
        print(f"| {kind} | " + " | ".join(str(c[col]) for col in columns) + " |")
    for why, n in skipped.items():
        print(f"skipped {n}: {why}")
    for line in wrong:
        print("  " + line)


if __name__ == "__main__":
    main()
