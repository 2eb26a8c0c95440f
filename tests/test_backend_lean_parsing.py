"""Lean output parsing against real recorded output: REPL sessions, `lean --json` lines, headers
and `#print axioms` answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from formalbench.backends.lean.axioms import (
    append_axiom_queries,
    parse_axioms_message,
    settle_messages,
    validate_targets,
)
from formalbench.backends.lean.header import split_header
from formalbench.backends.lean.messages import SORRY_KIND, parse_json_output
from formalbench.backends.lean.repl_protocol import (
    ReplyReader,
    encode_request,
    reply_diagnostics,
    reply_error,
    reply_holes,
    split_requests,
    split_responses,
)
from formalbench.core.errors import InputError
from formalbench.core.records import Diagnostic, Severity
from tests.shared_data import ROOT, needs_shared

SHARED = ROOT
REPL_FIXTURES = SHARED / "fixtures" / "lean-repl"
LEAN_JSON = SHARED / "fixtures" / "lean-json" / "examples.jsonl"
MINIF2F = SHARED / "data" / "minif2f-lean4"
PAIRS = sorted(REPL_FIXTURES.rglob("*.in"))


def _session(request_file: Path) -> tuple[list[dict], list[dict]]:
    reply_file = request_file.with_name(request_file.stem + ".expected.out")
    return (
        split_requests(request_file.read_text(encoding="utf-8")),
        split_responses(reply_file.read_text(encoding="utf-8")),
    )


@needs_shared
def test_fixture_folder_has_every_recorded_session() -> None:
    assert len(PAIRS) >= 25
    assert any(p.parent.name == "Mathlib" for p in PAIRS)


@needs_shared
@pytest.mark.parametrize("request_file", PAIRS, ids=lambda p: str(p.relative_to(REPL_FIXTURES)))
def test_recorded_session_parses_request_for_reply(request_file: Path) -> None:
    requests, replies = _session(request_file)
    assert requests and len(requests) == len(replies)
    for request, reply in zip(requests, replies, strict=True):
        # our encoding is one line + blank line and reads back to the same request
        wire = encode_request(request)
        assert wire.endswith(b"\n\n") and wire.count(b"\n") == 2
        assert split_requests(wire.decode()) == [request]
        error = reply_error(reply)
        if error is not None:
            assert error and "env" not in reply
            continue
        diagnostics = reply_diagnostics(reply, line_offset=10)
        assert len(diagnostics) == len(reply.get("messages", []))
        for diag, raw in zip(diagnostics, reply.get("messages", []), strict=True):
            assert diag.message == raw["data"]
            assert diag.severity == {"info": Severity.info}.get(raw["severity"], raw["severity"])
            expected_line = raw["pos"]["line"] + 10 if raw["pos"]["line"] > 0 else None
            assert diag.line == expected_line
        holes = reply_holes(reply, line_offset=10)
        assert len(holes) == len(reply.get("sorries", []))
        for hole, raw in zip(holes, reply.get("sorries", []), strict=True):
            assert hole.goal == raw["goal"] and hole.proof_state == raw.get("proofState")
        if "cmd" in request:
            assert isinstance(reply.get("env"), int)


@needs_shared
@pytest.mark.parametrize("request_file", PAIRS[:8], ids=lambda p: p.name)
def test_reply_reader_reassembles_replies_from_small_chunks(request_file: Path) -> None:
    raw = request_file.with_name(request_file.stem + ".expected.out").read_bytes()
    reader = ReplyReader()
    got = []
    for i in range(0, len(raw), 7):
        reader.feed(raw[i : i + 7])
        while (reply := reader.pop()) is not None:
            got.append(reply)
    assert got == split_responses(raw.decode())


def test_reply_reader_skips_text_that_is_not_a_reply() -> None:
    reader = ReplyReader()
    reader.feed(b"Processing incremental state:\n{ apply foo }\n\n{not json}\n\n")
    assert reader.pop() is None
    reader.feed(b'{"env":\n 3}\n\n')
    assert reader.pop() == {"env": 3}
    assert "Processing" in "".join(reader.noise)


@needs_shared
def test_raw_line_break_in_a_request_glues_the_lines_like_the_repl() -> None:
    requests, replies = _session(REPL_FIXTURES / "invalid_line_break.in")
    assert requests[0]["cmd"] == "theorem foo : 1 = 1 := bysorry"
    assert "`bysorry`" in replies[0]["messages"][0]["data"]
    wire = encode_request({"cmd": "theorem foo : 1 = 1 := by\nsorry"})
    assert split_requests(wire.decode())[0]["cmd"] == "theorem foo : 1 = 1 := by\nsorry"


@needs_shared
def test_tactic_sorry_becomes_hole_and_tagged_warning() -> None:
    _, replies = _session(REPL_FIXTURES / "tactic_sorry.in")
    (hole,) = reply_holes(replies[0])
    assert (hole.line, hole.column, hole.end_line, hole.end_column) == (1, 18, 1, 23)
    assert hole.goal == "⊢ Nat" and hole.proof_state == 0
    (warning,) = reply_diagnostics(replies[0])
    assert warning.severity == Severity.warning and warning.kind == SORRY_KIND


@needs_shared
def test_error_replies_are_recognised() -> None:
    _, unknown = _session(REPL_FIXTURES / "unknown_environment.in")
    assert reply_error(unknown[0]) == "Unknown environment."
    _, mathlib = _session(REPL_FIXTURES / "Mathlib" / "exact.in")
    assert reply_error(mathlib[2]) is None  # a proof-step reply with an info message
    assert reply_error(mathlib[4]).startswith("Lean error:")


@needs_shared
def test_lean_json_lines_with_noise_and_both_severity_words() -> None:
    lines = LEAN_JSON.read_text(encoding="utf-8").splitlines()
    # the fixture README says non-JSON lines share the stream; interleave one as documented
    stream = "\n".join([lines[0], "Stack overflow detected. Aborting.", lines[1], ""])
    diagnostics, other = parse_json_output(stream)
    assert other == ["Stack overflow detected. Aborting."]
    sorry, axioms = diagnostics
    assert (sorry.severity, sorry.kind, sorry.line, sorry.column) == (
        Severity.warning,
        "hasSorry",
        3,
        8,
    )
    assert (sorry.end_line, sorry.end_column) == (3, 21)
    assert axioms.severity == Severity.info and axioms.kind is None  # "[anonymous]" is no kind
    assert parse_axioms_message(axioms.message) == ("tfl_main", ["sorryAx"])


@needs_shared
def test_lean_json_older_toolchain_shape() -> None:
    # Older toolchains (fixture README): no `kind`, `endPos` null, quote-style sorry wording.
    old = json.loads(LEAN_JSON.read_text(encoding="utf-8").splitlines()[0])
    del old["kind"]
    old["endPos"] = None
    old["data"] = "declaration uses 'sorry'"
    (diag,), _ = parse_json_output(json.dumps(old))
    assert diag.kind == SORRY_KIND and diag.end_line is None and diag.line == 3


@needs_shared
def test_minif2f_header_split_and_shared_key() -> None:
    record = json.loads((MINIF2F / "minif2f_deepseek_v15.jsonl").open().readline())
    source = record["header"] + record["formal_statement"] + "  sorry"
    split = split_header(source)
    assert split.header_key.splitlines()[0] == "import Mathlib"
    assert split.header_key.splitlines()[-1].startswith("open BigOperators")
    first_body_line = source.split("\n")[split.body_offset :][0]
    assert split.body.split("\n")[0] == first_body_line
    assert record["formal_statement"].split("\n")[0] in split.body
    commented = "-- a comment\n" + source.replace("\n\nopen", "\n/- x\n y -/\nopen", 1)
    other = split_header(commented)
    assert other.header_key == split.header_key and other.body_offset == split.body_offset + 2


def test_header_stops_at_scoped_commands_doc_comments_and_open_comments() -> None:
    assert (
        split_header("set_option maxHeartbeats 0 in\ntheorem t : True := trivial").header_key == ""
    )
    split = split_header("import Mathlib\nopen Real in\ntheorem t : True := trivial")
    assert split.header_key == "import Mathlib" and split.body_offset == 1
    assert split_header("import A\n/-- doc -/\ndef x := 1").body_offset == 1
    unclosed = split_header("import A\nopen B /- never closed\ndef x := 1")
    assert unclosed.header_key == "import A" and unclosed.body.startswith("open B /-")
    assert split_header("def x := 1").body_offset == 0
    # a scoped command on one line with the declaration it scopes over stays in the body
    one_line = split_header(
        "import A\nset_option maxHeartbeats 400000 in theorem t : True := by\n  trivial"
    )
    assert one_line.header_key == "import A" and one_line.body.startswith("set_option")


def test_axiom_answers_in_every_wording() -> None:
    assert parse_axioms_message("'a.b' does not depend on any axioms") == ("a.b", [])
    assert parse_axioms_message(
        "'t' depends on axioms: [propext,\n Classical.choice,\n Quot.sound]"
    ) == ("t", ["propext", "Classical.choice", "Quot.sound"])
    assert parse_axioms_message("declaration uses `sorry`") is None


def test_axiom_queries_are_split_from_candidate_messages() -> None:
    queries = append_axiom_queries("theorem t : True := by\n  trivial", ["t", "u"])
    assert queries.text.endswith("\n\n#print axioms _root_.t\n#print axioms _root_.u\n")
    assert queries.lines == {4: "t", 5: "u"}
    info = Severity.info
    diagnostics = [
        Diagnostic(severity=info, message="'t' does not depend on any axioms", line=4, column=0),
        Diagnostic(severity=Severity.error, message="Unknown constant `u`", line=5, column=14),
        Diagnostic(severity=Severity.error, message="unterminated comment", line=6, column=0),
        Diagnostic(severity=Severity.warning, message="w", line=1, column=0, end_line=6),
    ]
    kept, axioms, notes = settle_messages(diagnostics, queries)
    assert axioms == {"t": []}
    assert notes == ["#print axioms u: Unknown constant `u`"]
    assert [(d.message, d.line, d.column) for d in kept] == [
        ("unterminated comment", 2, 9),
        ("w", 1, 0),
    ]
    assert kept[1].end_line == 2
    with pytest.raises(InputError, match="not a Lean declaration name"):
        validate_targets(["ok", "#exit"])
