"""The Lean static layer on real Mathlib code: Aesop's rule phase `unsafe` is not Lean's
`unsafe` modifier, genuine files cut into tasks pass, and a task text never passes as its own
proof. Real files: `tests/fixtures/lean_real_files/` (provenance in its SOURCE.txt); the Aesop
lines below are quoted from Mathlib (`Mathlib/Algebra/Order/Ring/Ordering/Basic.lean`,
`Mathlib/Algebra/Group/Even.lean`, `Mathlib/Algebra/Group/Subgroup/Defs.lean`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from formalbench.checking.decls import split_decls
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.gate import gate_findings
from formalbench.core.records import Language

LEAN = Language.lean
FILES = sorted((Path(__file__).parent / "fixtures" / "lean_real_files").rglob("*.lean"))
VERIFIER = StrictVerifier(None, language=LEAN)


def cut(text: str) -> list[tuple[str, str]]:
    """(name, task) for each theorem of `text` with a `:=` proof, its proof replaced by sorry."""
    out = []
    for d in split_decls(text, LEAN):
        body = d.tokens[d.body_start].text if d.body_start < len(d.tokens) else ""
        if d.kind == "theorem" and d.name and body == ":=":
            at = d.tokens[d.body_start].offset
            out.append((d.name, text[:at] + ":= sorry" + text[d.end :]))
    return out


def findings(original: str, candidate: str) -> list[str]:
    found = gate_findings(candidate, LEAN) + VERIFIER.static_findings(original, candidate)
    return [f.message for f in found]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_real_mathlib_files_cut_into_tasks(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    tasks = cut(text)
    assert len(tasks) >= 5
    for name, task in tasks:
        assert findings(task, text) == [], name
        assert findings(task, task), f"{name}: the task text passed as its own proof"


ORIGINAL = "import Mathlib\n\ntheorem t (x : Nat) : x = x := by\n  sorry\n"
AESOP = [  # (text before the target, the target's attribute line, its proof)
    ("", "@[aesop unsafe 90% apply (rule_sets := [SetLike])]\n", "rfl"),
    ("", "@[aesop unsafe 70% apply]\n", "rfl"),
    ("", "@[to_additive (attr := aesop unsafe 70% apply)]\n", "rfl"),
    (
        "attribute [to_additive (attr := aesop unsafe 5% forward)] IsSquare.exists_mul_self\n",
        "",
        "rfl",
    ),
    ("attribute [aesop unsafe 30% constructors] And Prod PProd MProd\n", "", "rfl"),
    ("attribute [local aesop unsafe 20% apply] le_refl\n", "", "rfl"),
    ("", "", "aesop (add unsafe forward Nat.le_refl)"),
]


@pytest.mark.parametrize(("before", "attribute", "proof"), AESOP)
def test_aesop_rule_phase_is_not_the_unsafe_modifier(
    before: str, attribute: str, proof: str
) -> None:
    original = ORIGINAL.replace("theorem t", before + "\n" + attribute + "theorem t")
    solved = original.replace("sorry", proof)
    assert findings(original, solved) == []


@pytest.mark.parametrize(
    "line",
    [
        "unsafe def f : Nat := 1\n",
        "@[aesop unsafe 50% apply] unsafe def f : Nat := 1\n",
        "@[simp]\nprivate unsafe def f : Nat := 1\n",
        "noncomputable unsafe instance : Inhabited Nat := ⟨1⟩\n",
        "def f : Nat := unsafe (1 : Nat)\n",
        "example : True := by\n  exact unsafe trivial\n",
    ],
)
def test_lean_unsafe_stays_refused_at_its_own_positions(line: str) -> None:
    solved = ORIGINAL.replace("sorry", "rfl") + "\n" + line
    assert [m for m in findings(ORIGINAL, solved) if "`unsafe`" in m]
