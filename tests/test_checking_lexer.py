"""The text layer: comments, strings, identifiers and positions for Lean 4 and Coq."""

from __future__ import annotations

import pytest

from formalbench.core.lexer import strip_comments, tokenize
from formalbench.core.records import Language
from tests.shared_data import ROOT, needs_shared

DATA = ROOT / "data"
LEAN, COQ = Language.lean, Language.coq


def texts(src: str, language: Language = LEAN) -> list[str]:
    return [t.text for t in tokenize(src, language)]


def kinds(src: str, language: Language = LEAN) -> list[tuple[str, str]]:
    return [(t.kind, t.text) for t in tokenize(src, language, comments=True)]


def test_lean_nested_block_comment_hides_sorry() -> None:
    src = "/- a /- nested -/ sorry still comment -/ theorem x : True := trivial"
    assert texts(src)[:2] == ["theorem", "x"]
    assert "sorry" not in texts(src)
    assert kinds(src)[0] == ("comment", "/- a /- nested -/ sorry still comment -/")


def test_lean_doc_and_module_comments_are_comments() -> None:
    src = "/-- doc sorry -/\n/-! module sorry -/\n-- line sorry\nexample := 1"
    got = kinds(src)
    assert [k for k, _ in got[:3]] == ["doc", "doc", "comment"]
    assert texts(src) == ["example", ":=", "1"]


def test_lean_empty_doc_comment_closes_at_once() -> None:
    # `/--/` opens with `/-` and closes with the `-/` that shares its dash
    assert texts("/--/ sorry") == ["sorry"]


def test_lean_unterminated_comment_runs_to_the_end() -> None:
    assert texts("theorem a : True := /- sorry") == ["theorem", "a", ":", "True", ":="]


def test_lean_strings_with_escapes_hide_sorry() -> None:
    src = r'def s := "a \"sorry\" b" ++ "c"'
    assert texts(src) == ["def", "s", ":=", r'"a \"sorry\" b"', "++", '"c"']


def test_lean_raw_string_and_comment_marker_inside_string() -> None:
    assert texts('def s := r#"sorry "quoted" -/"# ++ "/- not a comment"') == [
        "def", "s", ":=", 'r#"sorry "quoted" -/"#', "++", '"/- not a comment"',
    ]  # fmt: skip


def test_lean_interpolated_string_braces_are_code() -> None:
    toks = texts('#eval s!"value {sorry} and {f "x"}"')
    assert "sorry" in toks and '"x"' in toks and "f" in toks


def test_lean_char_literals_versus_primes() -> None:
    got = kinds("theorem t (h' : a = 'b') (h'' : c = '\\'') : f' h' = '\\n'")
    assert ("ident", "h'") in got and ("ident", "h''") in got and ("ident", "f'") in got
    assert ("char", "'b'") in got and ("char", "'\\''") in got and ("char", "'\\n'") in got


@pytest.mark.parametrize(
    "src, expected",
    [
        ("x₁ + α_2 ≤ ℝ", ["x₁", "+", "α_2", "≤", "ℝ"]),
        ("exact? ; apply?", ["exact?", ";", "apply?"]),
        ("Nat.succ_le_iff.mpr h.1", ["Nat.succ_le_iff.mpr", "h", ".", "1"]),
        ("«my lemma».foo x", ["«my lemma».foo", "x"]),
        ("λx ↦ x²", ["λ", "x", "↦", "x", "²"]),
        ("#exit #[1]", ["#exit", "#", "[", "1", "]"]),
        ("a := b => c <;> d", ["a", ":=", "b", "=>", "c", "<;>", "d"]),
        ("@[simp] x⁻¹", ["@[", "simp", "]", "x", "⁻¹"]),
    ],
)
def test_lean_identifiers_and_symbols(src: str, expected: list[str]) -> None:
    assert texts(src) == expected


def test_macro_body_sorry_is_code() -> None:
    assert "sorry" in texts('macro "foo" : tactic => `(tactic| sorry)')


def test_positions_are_one_based_lines_zero_based_columns() -> None:
    src = "theorem a :\n  True := by\n    -- c\n    trivial"
    toks = tokenize(src, LEAN)
    assert [(t.text, t.line, t.column) for t in toks][-3:] == [
        (":=", 2, 7), ("by", 2, 10), ("trivial", 4, 4),
    ]  # fmt: skip
    assert all(src[t.offset : t.end] == t.text for t in toks)


@needs_shared
def test_every_token_of_real_files_points_at_its_text() -> None:
    files = sorted((DATA / "putnambench-lean4" / "lean4" / "src").glob("*.lean"))[:150]
    files += sorted((DATA / "minif2f-coq" / "test").glob("*.v"))[:150]
    assert len(files) == 300
    for path in files:
        src = path.read_text(encoding="utf-8")
        language = COQ if path.suffix == ".v" else LEAN
        toks = tokenize(src, language, comments=True)
        assert toks, path
        lines = src.split("\n")
        for t in toks:
            assert src[t.offset : t.end] == t.text
            assert lines[t.line - 1][t.column :].startswith(t.text.split("\n")[0])
        # nothing but blanks between tokens
        gaps = [src[a.end : b.offset] for a, b in zip(toks, toks[1:], strict=False)]
        assert all(not g.strip() for g in gaps), path


def test_strip_comments_keeps_layout() -> None:
    src = "theorem a /- x\n sorry -/ : True := -- sorry\n  trivial"
    out = strip_comments(src, LEAN)
    assert len(out) == len(src) and out.count("\n") == src.count("\n")
    assert "sorry" not in out and "trivial" in out and out.index("trivial") == src.index("trivial")


def test_coq_comments_nest_and_skip_strings() -> None:
    src = '(* a (* b *) "*) inside a string" sorry *) Theorem t : True.'
    assert texts(src, COQ) == ["Theorem", "t", ":", "True", "."]


def test_coq_string_double_quote_escape() -> None:
    got = kinds('Definition s := "say ""admit"" now".', COQ)
    assert ("string", '"say ""admit"" now"') in got and ("ident", "admit") not in got


def test_coq_sentence_end_versus_qualified_names() -> None:
    got = kinds("Require Import Coq.Reals.Reals.\nCheck x.(f). Check 1.5.", COQ)
    assert ("ident", "Coq.Reals.Reals") in got
    assert [k for k, t in got if t == "."].count("end") == 3
    assert ("number", "1.5") in got


def test_coq_strip_comments() -> None:
    src = "Theorem t : True. (* Admitted. *)\nProof. exact I. Qed."
    assert "Admitted" not in strip_comments(src, COQ)
    assert len(strip_comments(src, COQ)) == len(src)
