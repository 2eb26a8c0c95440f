"""The formalize steps one at a time: problem file, statement extraction, categories,
few-shot choice, library retrieval with its disk cache, splitting, metrics."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from formalbench.core.errors import InputError
from formalbench.core.formalization import Alignment, Candidate, CompileRound, Problem
from formalbench.core.records import Language
from formalbench.judge.ranking import model_labels
from formalbench.pipelines.formalize.candidates import chain_done, finished, retranslate
from formalbench.pipelines.formalize.config import FormalizeConfig
from formalbench.pipelines.formalize.context import (
    choose_fewshot,
    load_fewshot,
    prepare_contexts,
    read_context_file,
)
from formalbench.pipelines.formalize.label import match_category
from formalbench.pipelines.formalize.metrics import compute
from formalbench.pipelines.formalize.problems import load_problems
from formalbench.pipelines.formalize.retrieval import LibraryIndex, words_of
from formalbench.pipelines.formalize.split import parts_of, read_split
from formalbench.pipelines.formalize.statement import (
    ASSISTANTS,
    FormatProblem,
    describe,
    extract_statement,
    static_diagnostics,
)
from formalbench.store.formalize import FormalizeStore

COQ, LEAN = ASSISTANTS[Language.coq], ASSISTANTS[Language.lean]


# ---- the PROBLEMS file --------------------------------------------------------------------


def test_problems_keep_extra_fields_and_report_every_bad_line(tmp_path: Path) -> None:
    good = tmp_path / "p.jsonl"
    good.write_text(
        '{"id": 7, "informal": " Show x. ", "solution": 3, "year": 2001}\n\n'
        '{"id": "b", "informal": "y", "category": "algebra"}\n',
        encoding="utf-8",
    )
    first, second = load_problems(str(good))
    assert (first.id, first.informal, first.solution, first.metadata) == (
        "7",
        "Show x.",
        "3",
        {"year": 2001},
    )
    assert second.category == "algebra" and second.solution is None

    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"id": "a", "informal": "x"}\n[1]\n{"id": "a", "informal": "y"}\n'
        '{"id": "c d", "informal": "z"}\n{"id": "e", "informal": ""}\n',
        encoding="utf-8",
    )
    with pytest.raises(InputError) as err:
        load_problems(str(bad))
    text = str(err.value)
    assert f"{bad}:2: expected a JSON object" in text
    assert f"{bad}:3: duplicate id 'a' (first on line 1)" in text
    assert f"{bad}:4: id 'c d' must not contain" in text
    assert f"{bad}:5: `informal` is empty" in text
    with pytest.raises(InputError, match="no such file"):
        load_problems(str(tmp_path / "missing.jsonl"))


def test_shipped_example_problems_load() -> None:
    problems = load_problems("example")
    assert len(problems) >= 5 and any(p.solution for p in problems)


# ---- statements ---------------------------------------------------------------------------


def test_extraction_takes_the_last_stating_block_and_names_format_failures() -> None:
    reply = (
        "First try:\n```coq\nTheorem a : True.\nAdmitted.\n```\nA helper:\n```coq\n"
        "Definition two := 2.\n```\nFinal:\n```\nTheorem b : 1 = 1.\nProof.\nAdmitted.\n```"
    )
    assert extract_statement(reply, COQ).startswith("Theorem b")
    with pytest.raises(FormatProblem, match="no fenced code block"):
        extract_statement("The statement is: forall n, n = n.", COQ)
    with pytest.raises(FormatProblem, match="tagged `lean`"):
        extract_statement("```lean\ntheorem t : True := sorry\n```", COQ)
    with pytest.raises(FormatProblem, match="wrong language"):
        extract_statement("```\ntheorem t (n : ℕ) : n = n := by sorry\n```", COQ)
    with pytest.raises(FormatProblem, match="wrong language"):
        extract_statement("```\nRequire Import Arith.\nTheorem t : True.\n```", LEAN)
    with pytest.raises(FormatProblem, match="empty"):
        extract_statement("```coq\n\n```", COQ)


def test_static_checks_allow_holes_but_not_escapes() -> None:
    ok = "Theorem t : forall n : nat, n = n.\nProof.\nAdmitted.\n"
    assert static_diagnostics(ok, COQ) == []
    cheat = "Axiom magic : forall P : Prop, P.\nTheorem t : 1 = 2.\nProof.\nAdmitted.\n"
    (found,) = static_diagnostics(cheat, COQ)
    assert "`Axiom` is not allowed" in found.message and found.line == 1
    (none,) = static_diagnostics("Definition two := 2.\n", COQ)
    assert "states no theorem" in none.message
    lean = "import Mathlib\naxiom a : False\ntheorem t : 1 = 1 := by sorry\n"
    assert [d.line for d in static_diagnostics(lean, LEAN)] == [2]
    text = describe(static_diagnostics(cheat, COQ), cheat)
    assert "line 1, column 0" in text and "at: Axiom magic" in text


def test_every_shipped_coq_example_compiles() -> None:
    if shutil.which("coqc") is None:
        pytest.skip("coqc is not installed")
    from formalbench.backends.base import CheckRequest
    from formalbench.backends.coq import CoqBackend

    pairs = load_fewshot(Language.coq)
    assert len(pairs) >= 5 and len(load_fewshot(Language.lean)) >= 5
    with CoqBackend(workers=2, timeout=60) as coq:
        results = list(coq.check_many([CheckRequest(source=p.formal) for p in pairs]))
    assert [(p.id, r.compiled) for p, r in zip(pairs, results, strict=True)] == [
        (p.id, True) for p in pairs
    ]
    assert all(len(r.holes) == 1 for r in results)


# ---- categories, few-shot, context --------------------------------------------------------


def test_category_answers_are_matched_loosely_and_unknown_is_other() -> None:
    names = ["algebra", "number_theory", "combinatorics"]
    assert match_category("Number Theory.", names) == "number_theory"
    assert match_category("`combinatorics`", names) == "combinatorics"
    assert match_category("This is a number theory problem.", names) == "number_theory"
    assert match_category("algebra or combinatorics", names) == "other"
    assert match_category("geometry", names) == "other"
    assert match_category("", names) == "other"


def test_fewshot_prefers_category_then_kind() -> None:
    pairs = load_fewshot(Language.coq)
    find = Problem(id="p", informal="Find x.", solution="2", category="Algebra")
    chosen = choose_fewshot(pairs, find, 2)
    assert [c.category for c in chosen] == ["algebra", "algebra"]
    assert chosen[0].solution is not None
    prove = Problem(id="q", informal="Show.", category="combinatorics")
    assert choose_fewshot(pairs, prove, 1)[0].category == "combinatorics"
    assert choose_fewshot(pairs, prove, 0) == []


def test_context_file_text_or_json_per_category(tmp_path: Path) -> None:
    plain = tmp_path / "c.txt"
    plain.write_text("lemma list", encoding="utf-8")
    assert read_context_file(str(plain)) == {"*": "lemma list"}
    per = tmp_path / "c.json"
    per.write_text(json.dumps({"Number Theory": "gcd", "*": "rest"}), encoding="utf-8")
    assert read_context_file(str(per)) == {"number_theory": "gcd", "*": "rest"}
    per.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(InputError, match="category -> text"):
        read_context_file(str(per))
    with pytest.raises(InputError, match="cannot read"):
        read_context_file(str(tmp_path / "none.txt"))


LIBRARY = """(** The sum of two even numbers is even. *)
Lemma even_add_even : forall a b, Nat.Even a -> Nat.Even b -> Nat.Even (a + b).
Proof. Admitted.

Lemma triangle_ineq : forall x y : nat, x <= x + y.
Proof. Admitted.

(** Greatest common divisor, the Euclid way. *)
Definition my_gcd (a b : nat) : nat := a.
"""


def test_retrieval_finds_by_words_and_docs_and_is_cached_on_disk(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "Facts.v").write_text(LIBRARY, encoding="utf-8")
    cache = tmp_path / "cache"
    index, cached = LibraryIndex.open([lib], Language.coq, cache)
    assert not cached and len(index.entries) == 3
    assert index.entries[0].doc == "The sum of two even numbers is even."
    top = index.search(["the sum of two even integers"], 1)[0]
    assert top.name == "even_add_even"
    assert index.search(["greatest common divisor"], 1)[0].name == "my_gcd"  # by its doc
    assert "(** Greatest common divisor" in index.search(["divisor"], 1)[0].render(Language.coq)
    again, cached = LibraryIndex.open([lib], Language.coq, cache)
    assert cached and [e.name for e in again.entries] == [e.name for e in index.entries]
    assert again.search(["the sum of two even integers"], 1)[0].name == "even_add_even"
    (lib / "More.v").write_text("Lemma extra_fact : True.\nProof. Admitted.\n", encoding="utf-8")
    rebuilt, cached = LibraryIndex.open([lib], Language.coq, cache)
    assert not cached and len(rebuilt.entries) == 4
    assert words_of("Nat.Prime.two_le") == "Nat Prime two le"
    assert words_of("isOpenMap") == "is Open Map"


def test_category_context_is_retrieved_once_and_stored(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "Facts.v").write_text(LIBRARY, encoding="utf-8")
    config = FormalizeConfig(
        problems="x",
        models=["openai:m"],
        backend="coq",
        library=[str(lib)],
        context_items=2,
        index_cache=str(tmp_path / "cache"),
    )
    problems = [
        Problem(id="a", informal="Show the sum of two even numbers is even.", category="nt"),
        Problem(id="b", informal="Prove x <= x + y.", category="algebra"),
    ]
    with FormalizeStore(tmp_path / "f.sqlite") as store:
        store.add_problems(problems)
        assert asyncio.run(prepare_contexts(store, config, Language.coq, problems)) == []
        nt = store.category_context("nt")
        assert nt["source"] == "retrieval" and nt["items"][0] == "even_add_even"
        assert "Lemma even_add_even" in nt["text"] and nt["retriever"] == "bm25"
        assert "(* in Facts *)\n(** The sum of two even" in nt["text"]  # module from the root
        store.put_category_context("nt", {"source": "file", "text": "kept", "items": []})
        asyncio.run(prepare_contexts(store, config, Language.coq, problems))  # nothing to redo
        assert store.category_context("nt")["text"] == "kept"


# ---- splitting ----------------------------------------------------------------------------


def test_parts_become_problems_with_shared_conditions() -> None:
    parent = Problem(id="p", informal="...", category="algebra", solution="3; 4")
    cut = read_split({"shared": "Let n > 0.", "parts": ["Find a.", "Find b."], "solutions": []})
    one, two = parts_of(parent, cut)
    assert (one.id, two.id) == ("p#1", "p#2")
    assert one.informal == "Let n > 0.\n\nFind a." and one.solution == "3; 4"
    assert two.metadata == {"parent": "p", "part": 2, "parts": 2}
    with_answers = {**cut, "solutions": ["3", ""]}
    assert [q.solution for q in parts_of(parent, with_answers)] == ["3", None]
    assert parts_of(parent, {"shared": "", "parts": ["only"]}) == [parent]


# ---- chain state and metrics --------------------------------------------------------------


def _round(n: int, ok: bool, failure: str | None = None) -> CompileRound:
    return CompileRound(round=n, code="" if failure else "T", compiled=ok, format_failure=failure)


def _cand(pid: str, model: str, sample: int, rounds, aligned=None, t=0, error=None) -> Candidate:
    alignment = None if aligned is None else Alignment(aligned=aligned == "yes")
    if aligned == "unread":
        alignment = Alignment(aligned=False, error="unreadable")
    suffix = f"#t{t}" if t else ""
    return Candidate(
        id=f"{pid}/{model}/{sample}{suffix}",
        problem_id=pid,
        model=model,
        sample=sample,
        language=Language.coq,
        translation=t,
        rounds=rounds,
        alignment=alignment,
        error=error,
    )


def test_chain_state_decides_resume_and_retranslation() -> None:
    config = FormalizeConfig(problems="x", models=["m"], repair_rounds=1, retranslations=1)
    failing = _cand("p", "m", 0, [_round(1, False)])
    assert not finished(failing, config)
    assert finished(_cand("p", "m", 0, [_round(1, False), _round(2, False)]), config)
    compiled = _cand("p", "m", 0, [_round(1, True)])
    assert not finished(compiled, config)  # still to be judged
    misaligned = _cand("p", "m", 0, [_round(1, True)], aligned="no")
    assert finished(misaligned, config) and retranslate(misaligned, config)
    assert not retranslate(_cand("p", "m", 0, [_round(1, True)], aligned="unread"), config)
    stored = {misaligned.id: misaligned}
    assert not chain_done(stored, "p", "m", 0, config)
    second = _cand("p", "m", 0, [_round(1, True)], aligned="no", t=1)
    stored[second.id] = second
    assert chain_done(stored, "p", "m", 0, config)  # tries used up
    assert not finished(misaligned.model_copy(update={"error": "down"}), config)


def test_metrics_from_handmade_candidates(tmp_path: Path) -> None:
    problems = [
        Problem(id="a", informal="x", category="algebra"),
        Problem(id="b", informal="y", category="algebra"),
        Problem(id="c", informal="z"),
    ]
    cands = [
        _cand("a", "openai:m@http://h/v1", 0, [_round(1, True)], aligned="yes"),
        _cand("a", "openai:m@http://h/v1", 1, [_round(1, False), _round(2, True)], "no"),
        _cand("a", "openai:m@http://h/v1", 1, [_round(1, True)], aligned="unread", t=1),
        _cand("b", "openai:m@http://h/v1", 0, [_round(1, False, "no block"), _round(2, False)]),
        _cand("b", "openai:k", 0, [_round(1, True)], aligned="no"),
        _cand("c", "openai:k", 0, [], error="endpoint down"),
    ]
    with FormalizeStore(tmp_path / "f.sqlite") as store:
        store.add_problems(problems)
        for c in cands:
            store.put_candidate(c)
        metrics = compute(store)
    assert (metrics.problems, metrics.compiled, metrics.aligned) == (3, 2, 1)
    assert metrics.compiled_round1 == 2 and metrics.coverage == pytest.approx(0.6667)
    assert metrics.categories["algebra"].compiled == 2
    assert metrics.categories["unlabelled"].problems == 1
    m, k = metrics.models
    assert (m.model, m.spec, k.model) == ("openai:m", "openai:m@http://h/v1", "openai:k")
    # rates over the first translations: a/0, a/1 and b/0 (a/1#t1 is a re-translation)
    assert (m.candidates, m.compiled_round1, m.compiled, m.format_failures) == (3, 1, 2, 1)
    assert m.compile_rate_round1 == pytest.approx(0.3333) and m.compile_rate == 0.6667
    assert m.mean_rounds_to_compile == pytest.approx(3 / 2, abs=1e-3)
    assert (m.judged, m.aligned, m.alignment_pass_rate, m.judge_errors) == (2, 1, 0.5, 1)
    assert (m.retranslations, m.retranslations_compiled, m.retranslations_judged) == (1, 1, 0)
    assert m.problems_compiled == 1
    assert (k.candidates, k.unfinished, k.aligned, k.problems_compiled) == (1, 1, 0, 1)


def test_one_model_name_on_two_endpoints_keeps_two_labels(tmp_path: Path) -> None:
    one, two = "openai:m@http://a:8000/v1", "openai:m@http://b:8000/v1"
    assert model_labels([one, two, "openai:k@http://a:8000/v1", one]) == {
        one: one,
        two: two,
        "openai:k@http://a:8000/v1": "openai:k",
    }
    with FormalizeStore(tmp_path / "f.sqlite") as store:
        store.add_problems([Problem(id="a", informal="x")])
        store.put_candidate(_cand("a", one, 0, [_round(1, True)], aligned="yes"))
        store.put_candidate(_cand("a", two, 0, [_round(1, False), _round(2, False)]))
        metrics = compute(store)
    rows = {m.model: m for m in metrics.models}
    assert set(rows) == {one, two} and rows[one].compiled == 1 and rows[two].compiled == 0
