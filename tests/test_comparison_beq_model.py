"""BEq tier 2: the scripts a model may use, and model proofs checked by the strict verifier
with real coqc (the model is scripted, then replayed through `formalbench compare`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.comparison.beq_model import script_problem, tactic_heads
from formalbench.comparison.compare import compare
from formalbench.core.records import Language
from formalbench.llm.replay import RecordingModel, ScriptedCall, ScriptedModel

COQ, LEAN = Language.coq, Language.lean


def test_tactic_heads_read_combinators_bullets_and_comments() -> None:
    script = "intros n h.\n- destruct h as [a | b]; [apply fb_other | lia].\n  (* note. *) exact a."
    assert tactic_heads(script, COQ) == ["intros", "destruct", "apply", "lia", "exact"]
    lean = "intros\n· rcases h with ⟨a, b⟩ <;> (apply fb_other; linarith) -- done.\nexact a"
    assert tactic_heads(lean, LEAN) == ["intros", "rcases", "apply", "linarith", "exact"]


@pytest.mark.parametrize(
    ("script", "language", "problem"),
    [
        ("intros. apply fb_other. lia.", COQ, None),
        ("intros. lia.", COQ, "never uses `fb_other`"),
        ("apply fb_other. admit.", COQ, "uses `admit`"),
        ("apply fb_other. Admitted.", COQ, "uses `Admitted`"),
        ("apply fb_other; nia.", COQ, "`nia` is not on the allowed list"),
        ("first [apply fb_other | auto].", COQ, "`first` is not on the allowed list"),
        ("exact fb_other _ (Nat.lt_le_incl _ _ h).", COQ, None),
        ("apply fb_other\nlinarith", LEAN, None),
        ("exact? using fb_other", LEAN, "search tactic `exact?`"),
        ("by_contra h\nexact fb_other", LEAN, "uses `by_contra`"),
        ("simp [fb_other]", LEAN, "`simp` is not on the allowed list"),
        ("apply fb_other\n  sorry", LEAN, "uses `sorry`"),
        ("", LEAN, "empty script"),
    ],
)
def test_scripts_are_refused_before_any_check(
    script: str, language: Language, problem: str | None
) -> None:
    found = script_problem(script, language)
    assert found == problem if problem is None else problem in (found or "")


def thm(body: str) -> str:
    return f"Require Import Arith.\nTheorem t {body}.\nProof. Admitted.\n"


# n + 1 and S n are not the same term: no portfolio branch unifies them, a rewrite does
REF = thm("(n : nat) : n + 1 < 2 ^ (n + 1)")
CAND = thm("(m : nat) : S m < 2 ^ S m")


def answer(call: ScriptedCall) -> str:
    """Sample 0 does not use the other statement, sample 1 is wrong, sample 2 is right."""
    forward = "(forall (n : nat), n + 1 < 2 ^ (n + 1)) ->" in call.messages[-1].content
    scripts = [
        "intro k. lia.",
        "intro k. apply fb_other.",
        "intro k. rewrite <- Nat.add_1_r. apply fb_other."
        if forward
        else "intro k. rewrite Nat.add_1_r. apply fb_other.",
    ]
    return f"Here it is:\n```coq\n{scripts[min(call.seed or 0, 2)]}\n```\n"


@pytest.mark.coq
@pytest.mark.skipif(shutil.which("coqc") is None, reason="needs coqc")
def test_model_proofs_decide_what_the_portfolio_left_open(tmp_path: Path) -> None:
    replay = tmp_path / "answers.jsonl"
    model = RecordingModel(ScriptedModel(answer), replay)
    out = compare(REF, CAND, "coq", timeout=60, model=model, samples=3)
    assert out["beq"] and out["tier"] == "model"
    assert out["tactics"]["forward"].startswith("model sample 2: intro k. rewrite <-")
    assert "k=3" in out["notes"][0] and "rewrite" in out["notes"][0]
    # two samples are not enough: the wrong ones never pass the verifier, and tier 1 alone
    # proves neither direction
    few = compare(REF, CAND, "coq", timeout=60, model=ScriptedModel(answer), samples=2)
    assert not few["beq"] and few["tier"] == "portfolio" and not few["backward"]
    assert few["tactics"]["forward"] == "" and "sample 1" in few["reason"]
    # the same through the command line, the answers replayed from the recording
    ref, cand = tmp_path / "ref.v", tmp_path / "cand.v"
    ref.write_text(REF, encoding="utf-8")
    cand.write_text(CAND, encoding="utf-8")
    args = ["compare", str(ref), str(cand), "--model", f"replay:{replay}", "--samples", "3"]
    result = CliRunner().invoke(app, [*args, "--json", "--timeout", "60"])
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    assert got["beq"] and got["forward"] and got["backward"] and got["tier"] == "model"
