"""BEq in Lean through the stand-in REPL (tests/standins/fake_repl.py): the requests sent for
each direction, and how the answers are combined into a verdict. The stand-in cannot prove
anything; a `fake:info=…` comment inside a statement makes it print what Lean's `trace` of
the winning probe branch prints (`~` for a blank), `fake:error-here` an elaboration error and
`fake:axioms=…` the axioms. With a real Lake project (FORMALBENCH_LEAN_PROJECT: Mathlib and a
built REPL) the BEq paper's 200 human-labelled pairs are run as well."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from formalbench.backends.lean.backend import LeanBackend
from formalbench.comparison.beq_human import beq_human_pairs
from formalbench.comparison.beq_lean import (
    ALONE,
    LeanBeq,
    direction_source,
    merged_header,
    parse_lean_statement,
    with_other,
)
from formalbench.comparison.compare import compare
from formalbench.core.errors import InputError
from tests.shared_data import DATA, FIXTURES, needs_shared

FAKE = Path(__file__).resolve().parent / "standins" / "fake_repl.py"
HEADER = "import Mathlib\nopen Real\n\n"


def won(hole: int, tactic: int) -> str:
    """A comment that makes the stand-in answer as if probe `hole` was won by `tactic`."""
    return f"-- fake:info=formalbench_portfolio~{hole}~{tactic}\n"


def ref(extra: str = "") -> str:
    return HEADER + f"theorem t (n : ℕ) {extra}  (h : 0 < n) : n < 2 ^ n := by sorry\n"


def cand(extra: str = "") -> str:
    return f"theorem thm_Q (m : ℕ) {extra}  (hm : m > 0) :\n  2 ^ m > m := by\n  sorry\n"


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "repl.log"


@pytest.fixture
def lean(log: Path):
    argv = [sys.executable, str(FAKE), "--fixtures", str(FIXTURES / "lean-repl"), "--log", str(log)]
    with LeanBackend(repl_command=argv, workers=1) as backend:
        yield backend


def bodies(log: Path) -> list[str]:
    """The cmds sent in an environment (the files of the directions, not headers)."""
    lines = [json.loads(line)["request"] for line in log.read_text().splitlines()]
    return [r["cmd"] for r in lines if "env" in r]


def test_each_direction_is_one_check_with_the_other_statement_as_a_hypothesis(
    lean: LeanBackend, log: Path
) -> None:
    result = LeanBeq(lean).compare(ref(won(0, 1)), cand(won(2, 0)))
    assert result.compiled and result.beq
    assert result.forward.detail == with_other(2)[1]  # `apply fb_other <;> (closers)`
    assert result.backward.detail == with_other(1)[0]
    forward, backward = bodies(log)
    assert "theorem fb_beq_with (fb_other : fb_statement_reference)" in forward
    assert "theorem fb_beq_with (fb_other : fb_statement_candidate)" in backward
    # each statement elaborated in a section of its own header: `open Real` is the
    # reference's alone (the imports are shared: the backend sends them as the header)
    assert forward.startswith("section\ndef fb_statement_candidate : Prop :=\n  ∀ (m : ℕ)")
    assert "end\nsection\nopen Real\ndef fb_statement_reference : Prop :=\n  ∀ (n" in forward
    for text, holes in ((forward, (0, 1)), (backward, (2, 3))):
        assert text.count("intros\n  first") == 2  # the probe with P, and the control without
        assert f'fail "formalbench_portfolio {holes[0]} none"' in text
        assert f'fail "formalbench_portfolio {holes[1]} none"' in text
        control = text[text.index("theorem fb_beq_alone") :]
        assert "fb_other" not in control.split("#print")[0]
        assert text.rstrip().endswith("#print axioms _root_.fb_beq_with")
        assert "sorry" not in text.replace("by sorry", "")  # no proof of the input is kept
        assert "exact?" not in text and "apply?" not in text


def test_a_statement_provable_alone_does_not_count(lean: LeanBackend) -> None:
    trivial = LeanBeq(lean).compare(ref(won(0, 1) + won(1, 6)), cand(won(2, 0)))
    assert trivial.forward.proved and trivial.forward.trivial
    assert not trivial.forward.counts and not trivial.beq


def test_one_way_and_unproved_directions(lean: LeanBackend) -> None:
    one_way = LeanBeq(lean).compare(ref(won(0, 3)), cand())
    assert one_way.forward.counts and not one_way.backward.proved and not one_way.beq


def test_a_proof_with_sorry_axioms_does_not_count(lean: LeanBackend) -> None:
    cheat = LeanBeq(lean).compare(ref(won(0, 1) + "-- fake:axioms=sorryAx\n"), cand(won(2, 0)))
    assert not cheat.forward.proved and "sorryAx" in cheat.forward.detail
    assert not cheat.beq


def test_a_candidate_that_does_not_elaborate_is_not_compiled(lean: LeanBackend, log) -> None:
    broken = LeanBeq(lean).compare(ref(won(0, 1)), cand("-- fake:error-here\n"))
    assert not broken.compiled and not broken.beq
    assert len(bodies(log)) == 1  # the backward direction is not tried
    with pytest.raises(InputError, match="reference"):
        LeanBeq(lean).compare(ref("-- fake:error-here\n"), cand())


def test_compare_reports_beq_and_gted_for_lean(lean: LeanBackend) -> None:
    out = compare(ref(won(0, 1)), cand(won(2, 0)), "lean", backend_object=lean)
    assert out["beq"] and out["forward"] and out["backward"] and out["compiled"]
    assert out["tier"] == "portfolio" and 0.5 < out["gted"] <= 1.0
    assert out["timeout"] == 120.0 and out["seconds"]["forward"] > 0


def test_statements_are_gated_and_reduced_to_their_proposition() -> None:
    p = parse_lean_statement(
        HEADER + "open scoped BigOperators\n"
        "theorem t {f : ℕ → ℕ} (a b : ℕ) -- note\n  [Fact (1 < a)] (h : f a = b) : f b = a :=\nsorry",
        "reference",
    )
    assert p.header == ["import Mathlib", "open Real", "open scoped BigOperators"]
    assert p.explicit == 3 and p.conclusion == "f b = a"
    assert p.prop.startswith("∀ {f : ℕ → ℕ} (a b : ℕ) -- note\n") and p.prop.endswith("f b = a")
    q = parse_lean_statement("import Lean\ntheorem u : True := by\n  sorry", "candidate")
    assert q.prop == "True" and merged_header(p, q).startswith("import Mathlib\nimport Lean\n")
    for bad, why in [
        ("theorem a : True := trivial\ntheorem b : True := trivial", "exactly one"),
        ("def x := 1\ntheorem a : True := sorry", "only import"),
        ("theorem a (h : sorry = 1) : True := by sorry", "sorry"),
        ("#eval 1\ntheorem a : True := by sorry", "only import"),
        ("theorem a (h : 1 = 1) := by sorry", "`:`"),
    ]:
        with pytest.raises(InputError, match=why):
            parse_lean_statement(bad, "candidate")
    text = direction_source(p, q, ("reference", "candidate"), 1).source
    assert text.count("formalbench_portfolio 3 ") == len(ALONE) + 1


LEAN_PROJECT = os.environ.get("FORMALBENCH_LEAN_PROJECT")


@needs_shared
@pytest.mark.skipif(not LEAN_PROJECT, reason="needs a Lean project (FORMALBENCH_LEAN_PROJECT)")
@pytest.mark.timeout(7200)
def test_beq_on_the_papers_human_labelled_pairs() -> None:
    """The BEq paper's figures on its 200 ProofNet pairs: precision 100 %, recall 72.86 %
    (51 of 70 equivalent pairs). Not run where this was written (no Lean toolchain)."""
    records = beq_human_pairs(DATA / "beq-human")
    with LeanBackend(project_dir=Path(str(LEAN_PROJECT))) as lean:
        beq = LeanBeq(lean)
        verdicts = []
        for r in records:
            candidate = r["label_header"] + "\n" + r["prediction_statement"]
            try:
                verdicts.append(
                    beq.compare(r["label_header"] + r["label_statement"], candidate).beq
                )
            except InputError:
                verdicts.append(False)
    labels = [r["human_equivalent"] for r in records]
    tp = sum(v and y for v, y in zip(verdicts, labels, strict=True))
    assert tp == sum(verdicts)  # precision 100 %
    assert tp / sum(labels) >= 0.7286


def test_formalize_reference_table_gets_lean_beq_from_the_backend(lean: LeanBackend) -> None:
    from formalbench.core.formalization import Candidate, CompileRound
    from formalbench.core.records import Language
    from formalbench.pipelines.formalize.reference import compare_one

    def candidate(code: str, compiled: bool = True) -> Candidate:
        rounds = [CompileRound(round=1, code=code, compiled=compiled)]
        return Candidate(
            id="p/m/0", problem_id="p", model="m", sample=0, language=Language.lean, rounds=rounds
        )

    same = compare_one(ref(won(0, 1)), candidate(cand(won(2, 0))), lean, Language.lean)
    assert same["beq"] is True and same["tier"] == "portfolio" and same["gted"] > 0.5
    one_way = compare_one(ref(won(0, 1)), candidate(cand()), lean, Language.lean)
    assert one_way["beq"] is False and one_way["forward"] and not one_way["backward"]
    broken = compare_one(ref(), candidate(cand(), compiled=False), lean, Language.lean)
    assert broken["beq"] is False


def printed(var: str) -> str:
    """A comment that makes the stand-in print, on that line, a `pp.all` term."""
    term = f"∀ ({var} : Nat), @LT.lt.{{0}} Nat instLTNat {var} (@HPow.hPow.{{0,0,0}} Nat Nat Nat"
    term += f" (@instHPow.{{0,0}} Nat Nat instPowNat) (@OfNat.ofNat.{{0}} Nat 2 (instOfNatNat 2)) {var})"
    return "-- fake:info=" + (term + " : Prop").replace(" ", "~") + "\n"


def test_gted_comes_from_the_elaborated_statements_where_lean_prints_them(
    lean: LeanBackend, log: Path
) -> None:
    out = compare(ref(printed("n")), cand(printed("m")), "lean", backend_object=lean)
    assert out["gted_source"] == "elaborated" and out["gted"] == 1.0
    (query,) = [b for b in bodies(log) if "pp.all" in b]
    assert query.count("set_option pp.all true in\n#check (∀") == 2
    text = compare(ref(), cand(), "lean", backend_object=lean)  # nothing printed: text trees
    assert text["gted_source"] == "text" and text["gted"] is not None
