"""The gate's last gaps (issues 18 and 22): Coq options that name a file or start a program,
and invisible or control characters in code (core/gate.py, core/hidden_chars.py)."""

from __future__ import annotations

import shutil
import sys
import unicodedata
from pathlib import Path

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.gate import unsafe_commands
from formalbench.core.hidden_chars import HIDDEN
from formalbench.core.records import CheckStatus, Language, Reason

needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")


@pytest.mark.parametrize(
    ("text", "option"),
    [
        ("Set NativeCompute Profiling.", "NativeCompute Profiling"),
        ('Set NativeCompute Profile Filename "/tmp/p".', "NativeCompute Profile Filename"),
        ("#[local] Unset NativeCompute (* a comment *) Profiling.", "NativeCompute Profiling"),
        ("Time Set NativeCompute.Profiling.", "NativeCompute Profiling"),
        ('Local Set Dump Arith "../escaped".', "Dump Arith"),
        ("Test Dump Arith.", "Dump Arith"),
    ],
)
def test_coq_options_that_name_a_file_or_a_program_are_refused(text: str, option: str) -> None:
    assert [u.command for u in unsafe_commands(text, Language.coq)] == [f"option {option}"]


@pytest.mark.parametrize(
    "text",
    [
        "Set NativeCompute Timing.",  # prints timings: no file, no program
        "Unset Lia Cache.",  # a fixed cache file in the throw-away folder
        'Set Warnings "-notation-overridden".',
        "Definition Dump := 1. Definition Arith := Dump.",
        '(* Set Dump Arith "x". *) Check "NativeCompute Profiling".',
    ],
)
def test_harmless_options_and_names_pass(text: str) -> None:
    assert unsafe_commands(text, Language.coq) == []


def test_the_table_holds_every_blank_control_and_format_character() -> None:
    """HIDDEN is written out (a regex built at import would scan 1.1 M code points): it must
    cover what Python's Unicode database says, whatever its version adds."""
    missing = [
        f"U+{cp:04X}"
        for cp in range(sys.maxunicode + 1)
        if (
            (unicodedata.category(chr(cp)) in ("Zs", "Zl", "Zp", "Cf") and cp != 0x20)
            or (unicodedata.category(chr(cp)) == "Cc" and chr(cp) not in "\t\n\r")
        )
        and not HIDDEN.match(chr(cp))
    ]
    assert missing == []
    assert not HIDDEN.search(" \t\r\nabcℕ→∀λ«»'_x₁")


NBSP = "\u00a0"


@pytest.mark.parametrize(
    ("text", "char", "line", "column"),
    [
        (f"Definition x := 1.\nTheorem t : classic{NBSP}z = 1.", "U+00A0", 2, 19),
        (f"Definition {NBSP}classic := 1.", "U+00A0", 1, 11),
        ("Definition x\u3164 := 1.", "U+3164", 1, 12),  # a Hangul filler: a letter to Coq
        ("Definition a := 1 +\u200b1.", "U+200B", 1, 19),
        ("Definition a :=\u20031.", "U+2003", 1, 15),
        ("Definition a :=\x0b1.", "U+000B", 1, 15),
        ("Definition \u202ea := 1.", "U+202E", 1, 11),
    ],
)
def test_hidden_characters_in_coq_code_are_named_with_their_place(
    text: str, char: str, line: int, column: int
) -> None:
    (found,) = unsafe_commands(text, Language.coq)
    assert (found.command, found.line, found.column) == (char, line, column)
    assert char in found.message and f"line {line}, column {column}" in found.message


@pytest.mark.parametrize(
    ("text", "char"),
    [
        ("theorem «sorry\u200b» : True := trivial", "U+200B"),
        (f"theorem t :{NBSP}True := trivial", "U+00A0"),
        ("theorem t : True := by\n  exact\u2060trivial", "U+2060"),
    ],
)
def test_hidden_characters_in_lean_code_are_refused(text: str, char: str) -> None:
    assert [u.command for u in unsafe_commands(text, Language.lean)] == [char]


@pytest.mark.parametrize(
    ("text", "language"),
    [
        (f'Definition s := "a{NBSP}b\x07".\n(* \u202e {NBSP} *)', Language.coq),
        ("\ufeffDefinition a := 1.", Language.coq),  # a leading BOM: coqc skips it
        ("def s := \"\u200b\" -- \u202e\n/- \u00a0 -/ def c := '\u3000'", Language.lean),
        ("theorem «my lemma» : True := trivial", Language.lean),
    ],
)
def test_strings_comments_and_a_leading_bom_keep_them(text: str, language: Language) -> None:
    assert unsafe_commands(text, language) == []


def test_one_finding_per_distinct_character() -> None:
    text = "".join(f"Definition a{i}{NBSP} := 1.\n" for i in range(50)) + "Definition b\u2003:= 1."
    assert [u.command for u in unsafe_commands(text, Language.coq)] == ["U+00A0", "U+2003"]


def test_the_verifier_refuses_a_name_with_a_blank_as_forbidden_construct() -> None:
    original = "Theorem t : 1 = 1.\nProof.\nAdmitted.\n"
    candidate = f"Axiom classic{NBSP}z : False.\nTheorem t : 1 = 1.\nProof.\nreflexivity.\nQed.\n"
    verdict = StrictVerifier(None, language=Language.coq).verify(original, candidate)
    found = [f for f in verdict.findings if f.subject == "U+00A0"]
    assert not verdict.passed and found and found[0].reason == Reason.forbidden_construct
    assert (found[0].line, found[0].column) == (1, 13)


@needs_coq
def test_coqc_never_writes_the_dump_arith_file(tmp_path: Path) -> None:
    """Without the gate, micromega writes `<name><hash>.v` relative to coqc's folder."""
    target = tmp_path / "leak"
    text = (
        f'Require Import Lia.\nSet Dump Arith "{target}".\n'
        "Goal forall x : nat, x < x + 1 -> False. Proof. Fail lia. Abort.\n"
    )
    with CoqBackend(workers=1) as coq:
        result = coq.check(text, timeout=60)
    assert result.status == CheckStatus.refused and "Dump Arith" in (result.detail or "")
    assert list(tmp_path.iterdir()) == []
