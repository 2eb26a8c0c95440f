"""DiffRepair: placing and repairing model diffs, and `formalbench ape apply`."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.pipelines.ape.diffrepair import apply_answer, extract_answer

FILE = "".join(f"Lemma l{i} : {i} = {i}.\nProof.\n  reflexivity.\nQed.\n\n" for i in range(1, 30))


def _lines(text: str) -> list[str]:
    return text.splitlines()


def test_exact_diff_applies_without_repairs() -> None:
    diff = (
        "--- a/f.v\n+++ b/f.v\n@@ -6,4 +6,4 @@\n Lemma l2 : 2 = 2.\n Proof.\n"
        "-  reflexivity.\n+  easy.\n Qed.\n"
    )
    result = apply_answer(diff, FILE)
    assert result.applied
    assert _lines(result.content)[7] == "  easy."
    assert result.summary()["repaired_hunks"] == 0
    assert result.hunks[0].status == "exact"


def test_wrong_line_numbers_and_reindented_hunk_are_repaired() -> None:
    diff = (
        "@@ -90,4 +90,5 @@\n   Lemma l7 : 7 = 7.\n   Proof.\n-    reflexivity.\n"
        "+    simpl.\n+    reflexivity.\n   Qed.\n"
    )
    result = apply_answer(diff, FILE)
    assert result.applied, result.reasons
    lines = _lines(result.content)
    start = lines.index("Lemma l7 : 7 = 7.")
    assert lines[start : start + 5] == [
        "Lemma l7 : 7 = 7.",
        "Proof.",
        "  simpl.",
        "  reflexivity.",
        "Qed.",
    ]
    report = result.hunks[0]
    assert report.status == "repaired"
    assert any("re-indented" in r for r in report.repairs)
    assert any("header said line 90" in r for r in report.repairs)


def test_added_only_hunk_never_replaces_the_file() -> None:
    result = apply_answer("@@ -1,0 +1,2 @@\n+Lemma new : True.\n+Proof. exact I. Qed.\n", FILE)
    assert not result.applied
    assert result.summary()["failed_hunks"] == 1
    assert "only added lines" in result.reasons[0]


def test_ambiguous_hunk_fails_with_reason_and_is_not_skipped() -> None:
    good = "@@\n Lemma l3 : 3 = 3.\n-Proof.\n+Proof. (* three *)\n"
    bad = "@@\n Proof.\n-  reflexivity.\n+  auto.\n Qed.\n"
    result = apply_answer(good + bad, FILE)
    assert not result.applied
    summary = result.summary()
    assert summary["hunks"] == 2 and summary["failed_hunks"] == 1
    assert "ambiguous" in result.reasons[0]


def test_ambiguous_hunk_resolved_by_exact_header_line() -> None:
    result = apply_answer("@@ -12,3 +12,3 @@\n Proof.\n-  reflexivity.\n+  auto.\n Qed.\n", FILE)
    assert result.applied
    assert _lines(result.content)[12] == "  auto."


def test_missing_line_to_remove_fails() -> None:
    diff = "@@\n Lemma l4 : 4 = 4.\n Proof.\n-  lia.\n+  auto.\n Qed.\n"
    result = apply_answer(diff, FILE)
    assert not result.applied
    assert "not found" in result.reasons[0]


def test_reordered_hunks_and_hallucinated_context() -> None:
    diff = (
        "@@\n Lemma l20 : 20 = 20.\n (* made up *)\n Proof.\n-  reflexivity.\n+  trivial.\n"
        "@@\n Lemma l5 : 5 = 5.\n Proof.\n-  reflexivity.\n+  trivial.\n"
    )
    result = apply_answer(diff, FILE)
    assert result.applied, result.reasons
    lines = _lines(result.content)
    assert lines[lines.index("Lemma l20 : 20 = 20.") + 2] == "  trivial."
    assert lines[lines.index("Lemma l5 : 5 = 5.") + 2] == "  trivial."
    assert any("not in the file" in r for r in result.hunks[0].repairs)
    assert sum(ln == "  trivial." for ln in lines) == 2


def test_overlapping_hunks_fail() -> None:
    one = "@@\n Lemma l9 : 9 = 9.\n-Proof.\n+Proof. (* a *)\n"
    two = "@@\n Lemma l9 : 9 = 9.\n-Proof.\n+Proof. (* b *)\n"
    result = apply_answer(one + two, FILE)
    assert not result.applied
    assert "overlap" in result.reasons[0]


def test_search_replace_and_whole_file() -> None:
    blocks = "<<<<<<< SEARCH\nLemma l8 : 8 = 8.\n=======\nLemma l8 : 4 + 4 = 8.\n>>>>>>> REPLACE\n"
    result = apply_answer(blocks, FILE)
    assert result.applied and result.mode == "search-replace"
    assert "Lemma l8 : 4 + 4 = 8." in _lines(result.content)
    whole = apply_answer("Lemma only : True.\nProof. exact I. Qed.", FILE)
    assert whole.applied and whole.mode == "whole-file"
    assert whole.content.endswith("Qed.\n")


def test_no_repair_refuses_moved_hunk() -> None:
    diff = "@@ -40,2 +40,2 @@\n Lemma l2 : 2 = 2.\n-Proof.\n+Proof. (* x *)\n"
    assert apply_answer(diff, FILE).applied
    strict = apply_answer(diff, FILE, repair=False)
    assert not strict.applied and "needs repair" in strict.reasons[0]


def test_extract_answer_prefers_diff_block() -> None:
    reply = "Plan...\n```lean\nfoo\n```\n```diff\n@@\n-a\n+b\n```\n"
    assert extract_answer(reply) == "@@\n-a\n+b\n"


def test_cli_apply_json_and_exit_codes(tmp_path) -> None:
    target = tmp_path / "f.v"
    target.write_text(FILE)
    patch = tmp_path / "p.diff"
    patch.write_text("@@\n Lemma l2 : 2 = 2.\n-Proof.\n+Proof. (* y *)\n")
    out = tmp_path / "out.v"
    runner = CliRunner()
    res = runner.invoke(
        app, ["ape", "apply", str(patch), "--to", str(target), "--out", str(out), "--json"]
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["applied"] and data["hunks"] == 1 and data["repaired_hunks"] == 1
    assert "Proof. (* y *)" in out.read_text()
    patch.write_text("@@\n+only added\n")
    res = runner.invoke(
        app,
        [
            "ape",
            "apply",
            str(patch),
            "--to",
            str(target),
            "--out",
            str(tmp_path / "o2.v"),
            "--json",
        ],
    )
    assert res.exit_code == 1
    assert json.loads(res.output)["failed_hunks"] == 1
    assert not (tmp_path / "o2.v").exists()
    res = runner.invoke(
        app,
        ["ape", "apply", str(tmp_path / "missing.diff"), "--to", str(target), "--out", str(out)],
    )
    assert res.exit_code == 2


def test_added_lines_before_the_first_context_line_are_exact() -> None:
    diff = "@@ -1,2 +1,3 @@\n+(* header *)\n Lemma l1 : 1 = 1.\n Proof.\n"
    result = apply_answer(diff, FILE, repair=False)
    assert result.applied, result.reasons
    assert _lines(result.content)[:2] == ["(* header *)", "Lemma l1 : 1 = 1."]


# --- bounds (issue 23, item 2): behaviour, not time; figures in bench_diffrepair.py bounds


def _repetitive(n: int) -> list[str]:
    out: list[str] = []
    for k in range(n):
        out += [f"Lemma l{k} : {k} + 0 = {k}.", "Proof.", "  intros.", "  reflexivity.", "Qed.", ""]
    return out


def test_hunk_with_typos_in_repeated_lines_is_anchored_on_unique_lines() -> None:
    file = _repetitive(100)
    old = file[300:360]
    body = []
    for k, line in enumerate(old):
        shown = line.replace("intros.", "intro.") if k % 12 == 2 else line  # typos in context
        if line == "  reflexivity." and k % 12 == 3:
            body += [f"-{shown}", "+  simpl; reflexivity."]
        else:
            body.append(f" {shown}")
    result = apply_answer("@@\n" + "\n".join(body) + "\n", "\n".join(file) + "\n")
    assert result.applied, result.reasons
    expected = list(file)
    for k in range(300, 360):
        if file[k] == "  reflexivity." and (k - 300) % 12 == 3:
            expected[k] = "  simpl; reflexivity."
    assert result.content == "\n".join(expected) + "\n"


def test_identical_lines_need_the_header_to_place_a_hunk() -> None:
    file = "Qed.\n" * 3000
    hunk = "\n".join([" Qed."] * 50 + ["-Qed.", "+Proof."] + [" Qed."] * 50) + "\n"
    result = apply_answer("@@\n" + hunk, file)
    assert not result.applied and "ambiguous" in result.reasons[0]
    result = apply_answer("@@ -1001,101 +1001,101 @@\n" + hunk, file)
    assert result.applied and result.content.splitlines()[1050] == "Proof."


def test_fuzzy_search_without_unique_line_gives_up_with_reason() -> None:
    file = "Qed.\n" * 20000
    hunk = "@@\n" + " Qed .\n" * 300 + "-Qedd.\n+Proof.\n"
    result = apply_answer(hunk, file)
    assert not result.applied
    assert result.reasons[0].startswith("hunk 1: gave up: no line of the hunk occurs exactly once")


def test_an_answer_past_its_deadline_stops_with_gave_up(monkeypatch) -> None:
    from formalbench.pipelines.ape import locate

    monkeypatch.setattr(locate, "DEADLINE_S", -1.0)
    diff = "@@\n Lemma l2 : 2 = 2.\n-Proof.\n+Proof. (* a *)\n@@\n Lemma l3 : 3 = 3.\n-Proof.\n"
    result = apply_answer(diff, FILE)
    assert not result.applied and len(result.hunks) == 1  # the second hunk is not tried
    assert "gave up: placing the answer took more than" in result.reasons[0]
