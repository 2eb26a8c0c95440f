"""The warm coqtop session that answers kernel dumps (`backends/coq_session.py`, `coq_dumps`).

Real coqc/coqtop: a verdict is the same with and without the session, a library named
`Candidate` is judged on its own content in every check of one session (nothing leaks from
one check to the next), a killed or stalled session falls back to the one-shot dump, and no
coqtop outlives `close_all`. Without the plugin there is no dump and no verdict but
`undecided`. The framing tests need no Coq."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from formalbench.backends import coq_session, sandbox
from formalbench.backends.coq_session import (
    SessionBroken,
    _Markers,
    _segments,
    preload_sentences,
)
from formalbench.checking.verifier import kernel_of
from tests.suite_coq import std
from tests.test_coq_identity_attacks import ATTACKS

NONCE = "0123456789ab"
MARKS = {style: _Markers(NONCE, style == "warning") for style in ("error", "warning")}


def _err(k: int, style: str = "error") -> str:
    """Marker k's stderr block as coqtop -emacs prints it (Coq 8.16's error, Rocq 9.2's
    warning), its message cut where a narrow printing width would cut it."""
    if style == "error":
        return (
            f"<prompt>Coq < {k} || 0 < </prompt>Toplevel input, characters 6-24:\n"
            f"> Check fb_{NONCE}_e{k}.\n>       ^^^^^^^^^^^^^^^^^^\n"
            f"Error: The reference fb_{NONCE}_e{k} was not found in the current\nenvironment.\n\n"
        )
    return (
        f"<prompt>Rocq < {k} || 0 < </prompt>Toplevel input, characters 0-47:\n"
        f'> #[warning="unknown-option"] Set Fb_{NONCE}_e{k}.\n> {"^" * 47}\n<warning>\n'
        f'Warning: There is no flag or option with this\nname: "Fb_{NONCE}_e{k}".\n'
        "[unknown-option,default]</warning>\n\n"
    )


def _out(k: int) -> str:
    return f"No object of basename fb_{NONCE}_o{k}\n"


STYLES = pytest.mark.parametrize("style", sorted(MARKS))


@STYLES
def test_segments_cut_both_streams_at_their_markers(style: str) -> None:
    error = "Toplevel input, characters 0-5:\n> exact.\n> ^^^^^\nError: No such goal.\n"
    out = "Welcome\n" + _out(0) + "Axioms:\nx : nat\n" + _out(1) + "Closed\n" + _out(2)
    err = _err(0, style) + _err(1, style) + error + _err(2, style)
    first, second = _segments(out, err, MARKS[style], 2)
    assert first.stdout == "Axioms:\nx : nat" and first.errors == []
    assert second.stdout == "Closed" and second.errors == ["No such goal."]


@STYLES
@pytest.mark.parametrize(
    "out, errs",
    [
        (_out(0) + _out(0) + _out(1), [0, 1]),  # a marker twice
        (_out(1) + _out(0), [0, 1]),  # out of order
        (_out(0) + _out(1), [0, "something else\n", 1]),  # not a message
        (_out(0) + _out(1), [0, 1, "late text\n"]),  # after the last marker
        (_out(0), [0, 1]),  # the end never came
        (_out(0) + _out(1), [0]),  # nor on stderr
        (_out(0) + _out(1), [1, 0]),  # stderr out of order
    ],
)
def test_anything_outside_the_frame_breaks_the_session(
    style: str, out: str, errs: list[int | str]
) -> None:
    err = "".join(_err(e, style) if isinstance(e, int) else e for e in errs)
    with pytest.raises(SessionBroken):
        _segments(out, err, MARKS[style], 1)


def test_a_stdout_marker_cut_by_a_narrow_width_still_reads() -> None:
    wrapped = f"No object of\nbasename\nfb_{NONCE}_o1\n"
    out = _out(0) + "Axioms:\nx : nat\n" + wrapped
    (segment,) = _segments(out, _err(0) + _err(1), MARKS["error"], 1)
    assert segment.stdout == "Axioms:\nx : nat"
    with pytest.raises(SessionBroken):  # inside another line it is not the marker
        _segments(_out(0) + "said: " + _out(1), _err(0) + _err(1), MARKS["error"], 1)


def test_one_style_of_marker_is_not_taken_for_the_other() -> None:
    out = _out(0) + _out(1)
    with pytest.raises(SessionBroken):
        _segments(out, _err(0, "error") + _err(1, "error"), MARKS["warning"], 1)
    with pytest.raises(SessionBroken):
        _segments(out, _err(0, "warning") + _err(1, "warning"), MARKS["error"], 1)


@pytest.mark.parametrize("style", sorted(MARKS))
def test_the_end_of_an_exchange_is_its_last_marker_then_the_prompt(style: str) -> None:
    marks = MARKS[style]
    raw = (_err(0, style) + _err(1, style)).encode()
    assert not marks.end(1).search(raw)  # its prompt not yet printed: still on its way
    assert marks.end(1).search(raw + b"<prompt>Rocq < 9 || 0 < </prompt>")
    assert not marks.end(0).search(_err(0, style).encode())


def test_fetching_messages_are_dropped_but_nothing_else() -> None:
    fetch = "<infomsg>\nFetching opaque proofs from disk for Coq.Init.Logic\n</infomsg>\n"
    out = _out(0) + fetch + "Axioms:\n" + fetch + "Candidate.a : False\n" + _out(1)
    (segment,) = _segments(out, _err(0) + _err(1), MARKS["error"], 1)
    assert segment.stdout == "Axioms:\nCandidate.a : False"


def test_preloads_are_the_tasks_requires_without_import() -> None:
    text = (
        "(* Require Fake. *)\nFrom Coq Require Import Lia.\nRequire Export Arith List.\n"
        'Require Import Candidate.\nDefinition s := "Require Nope.".\n'
    )
    assert preload_sentences(text, ("Candidate",)) == [
        "From Coq Require Lia.",
        "Require Arith List.",
    ]


# --- real coqtop ----------------------------------------------------------------------------
coq = pytest.mark.skipif(shutil.which("coqtop") is None, reason="coqtop is not installed")

ORIGINAL = "Require Import Arith.\nTheorem t : forall n, n + 0 = n.\nProof.\nAdmitted.\n"
CLEAN = "Require Import Arith.\nTheorem t : forall n, n + 0 = n.\nProof. auto. Qed.\n"
AXIOM = (  # a postulate hidden in an opaque proof: `Print Assumptions` must fetch it
    "Require Import Arith.\nAxiom a : forall n, n + 0 = n.\n"
    "Theorem t : forall n, n + 0 = n.\nProof. exact a. Qed.\n"
)
CLASSIC = (
    "Require Import Classical.\nTheorem t : forall n, n + 0 = n.\n"
    "Proof. intros n. destruct (classic (n = n)); auto. Qed.\n"
)
OPTIONS = (  # accepted, and leaves nothing behind: a plugin, global options, a universe
    "Require Import Lia.\nGlobal Unset Printing Notations.\nGlobal Set Printing All.\n"
    "Universe u.\nDefinition T := Type@{u}.\n"
    "Theorem t : forall n, n + 0 = n.\nProof. intros; lia. Qed.\n"
)
WRONG = "Theorem t : forall n, 0 + n = n.\nProof. reflexivity. Qed.\n"
CONTEXT_TASK = (
    "Inductive color := red | green.\nParameter f : nat -> nat.\n"
    "Theorem t : forall c : color, c = red \\/ c = green.\nProof.\nAdmitted.\n"
)
CONTEXT_PROOF = CONTEXT_TASK.replace("Admitted.", "destruct c; auto. Qed.")
CASES = [
    (ORIGINAL, CLEAN),
    (ORIGINAL, AXIOM),
    (ORIGINAL, CLASSIC),
    (ORIGINAL, WRONG),
    ATTACKS["Time Notation"],
    (CONTEXT_TASK, CONTEXT_PROOF),
]


@pytest.fixture(scope="module")
def judge():
    from formalbench.backends.coq import CoqBackend
    from formalbench.checking.verifier import StrictVerifier
    from formalbench.core.config import VerifierPolicy

    with CoqBackend(workers=1, timeout=60) as backend:
        # no forbidden words: the identity file, not the text pre-filter, must refuse;
        # library axioms refused by their full path
        yield StrictVerifier(backend, VerifierPolicy(forbidden=[], axiom_presets=[]))
    coq_session.close_all()


def _reasons(judge, original: str, candidate: str) -> list[str]:  # noqa: ANN001
    verdict = judge.verify(original, candidate)
    return sorted(f"{f.reason.value} {f.subject}" for f in verdict.findings)


def _answered(judge) -> int:  # noqa: ANN001
    return kernel_of(judge.backend).dumper.session_dumps


def _dumper(judge):  # noqa: ANN001, ANN202
    return kernel_of(judge.backend).dumper


@coq
def test_verdicts_equal_with_and_without_the_session(
    judge,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = _answered(judge)
    warm = [_reasons(judge, o, c) for o, c in CASES]
    assert _answered(judge) >= before + len(CASES)  # each candidate dumped by the session
    monkeypatch.setenv(coq_session.SWITCH, "0")
    after = _answered(judge)
    cold = [_reasons(judge, o, c) for o, c in CASES]
    assert _answered(judge) == after  # none: the switch turns it off
    assert warm == cold
    assert warm[0] == [] and warm[-1] == []  # genuine proofs pass
    assert "disallowed_axiom Candidate.a" in warm[1]
    assert warm[2] == [f"disallowed_axiom {std('Coq.Logic.Classical_Prop.classic')}"]
    assert [r.split()[0] for r in warm[3]] == ["statement_changed"]
    assert [r.split()[0] for r in warm[4]] == ["statement_changed"]


@coq
def test_each_check_reads_its_own_candidate_library(judge) -> None:  # noqa: ANN001
    """`Candidate` of the same name, other content, in one session, both orders: an axiom
    inside an opaque proof is found after a clean candidate, and not kept after it; global
    options and universes a candidate set are gone at the next check."""
    coq_session.close_all()  # one session for the whole sequence
    judge.verify(ORIGINAL, CLEAN)  # the task dumped
    before = _answered(judge)
    verdicts = [_reasons(judge, ORIGINAL, c) for c in (CLEAN, AXIOM, OPTIONS, AXIOM, CLEAN)]
    wrong = judge.verify(ORIGINAL, WRONG).findings
    assert _answered(judge) == before + 6
    assert coq_session.live_sessions() == 1
    assert verdicts[0] == verdicts[2] == verdicts[4] == []
    assert verdicts[1] == verdicts[3] and "disallowed_axiom Candidate.a" in verdicts[1]
    assert [f.reason.value for f in wrong] == ["statement_changed"]


NOISY = [  # settings a candidate's library carries into the session when it is `Require`d
    'Global Set Warnings "-unknown-option".',
    'Global Set Warnings "+unknown-option".',
    'Global Set Warnings "-all".',
    'Global Set Warnings "+all".',
    "Global Set Printing Width 12.",
]


@coq
@pytest.mark.parametrize("setting", NOISY)
def test_a_library_that_changes_warnings_or_width_does_not_upset_the_frame(
    judge,  # noqa: ANN001
    setting: str,
) -> None:
    """The stderr markers after `Require Candidate.` still read: the session answers the
    dump (no fallback), and the verdict is the one-shot process's."""
    candidate = CLEAN.replace("Theorem", f"{setting}\nTheorem", 1)
    judge.verify(ORIGINAL, CLEAN)  # the task dumped, a session warm
    answered, fallbacks = _answered(judge), _dumper(judge).session_fallbacks
    assert _reasons(judge, ORIGINAL, candidate) == []
    assert _answered(judge) == answered + 1
    assert _dumper(judge).session_fallbacks == fallbacks
    assert "disallowed_axiom Candidate.a" in _reasons(
        judge, ORIGINAL, AXIOM.replace("Theorem", f"{setting}\nTheorem", 1)
    )
    assert _dumper(judge).session_fallbacks == fallbacks


@coq
def test_a_killed_session_falls_back_and_a_fresh_one_follows(judge) -> None:  # noqa: ANN001
    import psutil

    _reasons(judge, ORIGINAL, CLEAN)  # a warm session now waits in the pool
    pool = _dumper(judge).pool
    (session,) = pool.idle
    procs = [psutil.Process(session.proc.pid), *psutil.Process(session.proc.pid).children(True)]
    os.killpg(session.proc.pid, 9)
    fallbacks = _dumper(judge).session_fallbacks
    assert "disallowed_axiom Candidate.a" in _reasons(judge, ORIGINAL, AXIOM)
    assert _dumper(judge).session_fallbacks == fallbacks + 1
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in procs)
    answered = _answered(judge)
    assert _reasons(judge, ORIGINAL, CLEAN) == []
    assert _answered(judge) == answered + 1  # a fresh session answered
    # an idle session is not a check in flight (what `stop_all` and a stop's count see)
    assert coq_session.live_sessions() >= 1 and sandbox.live_count() == 0


@coq
def test_a_stalled_session_is_killed_and_none_outlives_close(judge) -> None:  # noqa: ANN001
    import psutil

    pool = _dumper(judge).pool
    with pool.session([]) as session:
        session.prepare([], time.monotonic() + 30)
        procs = [psutil.Process(session.proc.pid), *psutil.Process(session.proc.pid).children(True)]
        assert any("coqtop" in " ".join(p.cmdline()) for p in procs)
        with pytest.raises(SessionBroken):  # Reals takes far longer than 10 ms to load
            session.exchange(["Require Coq.Reals.Reals."], time.monotonic() + 0.01)
        assert session.proc is None and not session.folder.exists()
    _reasons(judge, ORIGINAL, CLEAN)
    procs += [p for s in pool.idle for p in [psutil.Process(s.proc.pid)]]
    coq_session.close_all()
    assert coq_session.live_sessions() == 0
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in procs)


@coq
def test_without_the_plugin_no_verdict_but_undecided(
    judge,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The dump is the plugin's: turned off, a genuine proof is `undecided` (never a pass,
    never a verdict read another way), and an attack is still not passed."""
    judge.verify(ORIGINAL, CLEAN)  # the task's dump is cached: only the candidate's is missing
    monkeypatch.setenv("FORMALBENCH_COQ_PLUGIN", "0")
    coq_session.close_all()
    for candidate in (CLEAN, AXIOM):
        verdict = judge.verify(ORIGINAL, candidate)
        assert not verdict.passed
        assert verdict.reasons == ["undecided"], verdict.findings
