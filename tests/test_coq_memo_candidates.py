"""A warm session never answers about an earlier `Candidate` (real coqc/coqtop, every toolchain).

Every library a check dumps is named `Candidate`, and the plugin keeps process-wide state
between commands (fb_memo.ml): the walks of frozen libraries, and the implementations of
modules it read. Before this fix both were keyed by name only: a dump whose targets resolved
to nothing listed the postulates of the PREVIOUS candidate (or stopped on an anomaly about
one of its constants: "Constant Candidate.leA_Tree does not appear in the environment"),
and a `Candidate` frozen while loaded kept its walk after `Reset`, so the next candidate's
`foo`, now resting on an axiom, was reported closed. Each test below gives the wrong answer
on the code before the fix (checked), and the same answer as a fresh one-shot process after.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from formalbench.backends import coq_assumptions_plugin as plugin
from formalbench.backends import coq_kernel_dump as kd
from formalbench.backends import coq_kernel_dump_format as kf
from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_session import CoqSession, SessionBroken, close_all
from formalbench.toolchains import provision

pytestmark = [
    pytest.mark.coq,
    pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed"),
]

COQ820 = "coq-8.20"
TOOLCHAINS = [
    "host",
    pytest.param("rocq-9.2", marks=pytest.mark.rocq),
    pytest.param(
        COQ820,
        marks=pytest.mark.skipif(
            provision.record_of(COQ820) is None, reason=f"{COQ820} is not installed"
        ),
    ),
]
OUTSIDE_SECTION = ["-w", "-declaration-outside-section,-context-outside-section"]


@pytest.fixture(scope="module", params=TOOLCHAINS)
def backend(request: pytest.FixtureRequest) -> CoqBackend:
    chosen = CoqBackend(toolchain=request.param)
    if plugin.plugin_folder(chosen.toolchain) is None:
        pytest.skip(f"the Coq plugin cannot be built for {request.param} (no OCaml toolchain)")
    return chosen


@pytest.fixture(autouse=True)
def _fresh_pools() -> object:
    close_all()  # each test starts its sessions itself
    yield
    close_all()


def compiled(backend: CoqBackend, folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Candidate.v").write_text(text, encoding="utf-8")
    flags = [] if backend.toolchain.version().startswith("8.16") else OUTSIDE_SECTION
    done = backend.toolchain.run(
        [backend.coqc, "-q", *flags, "Candidate.v"], cwd=folder, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return folder


def deadline() -> float:
    return time.monotonic() + 120


def axioms(dump: kf.KernelDump, name: str = "Candidate.foo") -> list[str]:
    target = dump.targets[name]
    assert target.found
    return sorted(a.name for a in target.assumptions or [])


# `foo` (and `helper`, which it uses) of the same names, over different grounds
CLEAN = "Lemma helper : True. Proof. exact I. Qed.\nLemma foo : True. Proof. exact helper. Qed.\n"
BY_AXIOM = (
    "Axiom bad : False.\nLemma helper : True. Proof. destruct bad. Qed.\n"
    "Lemma foo : True. Proof. exact helper. Qed.\n"
)
BY_ADMITTED = (
    "Definition leA_Tree := 0.\nLemma helper : leA_Tree = 0.\nAdmitted.\n"
    "Lemma foo : True. Proof. pose proof helper. exact I. Qed.\n"
)
BY_ADMITTED_PLAIN = (  # its postulate's type names nothing of the library
    "Lemma helper : 0 = 0.\nAdmitted.\nLemma foo : True. Proof. pose proof helper. exact I. Qed.\n"
)
BY_CLASSIC = (
    "Require Coq.Logic.Classical_Prop.\n"
    "Lemma helper (P : Prop) : P \\/ ~ P. Proof. apply Coq.Logic.Classical_Prop.classic. Qed.\n"
    "Lemma foo : True. Proof. pose proof (helper True). exact I. Qed.\n"
)
# no `Candidate.foo` (it is inside a functor), and an axiom of its own
IN_FUNCTOR = (
    "Axiom sneaky : 0 = 1.\nModule Type T. Parameter x : nat. End T.\n"
    "Module F (X : T). Lemma foo : X.x = X.x. Proof. reflexivity. Qed. End F.\n"
)


@pytest.mark.parametrize("earlier", [BY_ADMITTED_PLAIN, BY_ADMITTED], ids=["silent", "anomaly"])
def test_a_dump_with_no_target_found_lists_this_candidates_postulates(
    backend: CoqBackend, tmp_path: Path, caplog: pytest.LogCaptureFixture, earlier: str
) -> None:
    """The pool route as the verifier takes it: a candidate with an admitted lemma, then one
    whose target resolves to nothing. Before the fix the second warm dump walked the first
    candidate's module structure: `Candidate.helper` as its postulate and `Candidate.sneaky`
    missing (silent), or an anomaly about `Candidate.leA_Tree` where the old postulate's
    type names a constant the new candidate lacks."""
    first = compiled(backend, tmp_path / "first", earlier)
    second = compiled(backend, tmp_path / "second", IN_FUNCTOR)
    with caplog.at_level("INFO", logger=kd.__name__):
        before = kd.dump_targets_warm(backend, first, ["Candidate.foo"])
        after = kd.dump_targets_warm(backend, second, ["Candidate.foo"])
    assert "one-shot" not in caplog.text  # the session answered both
    assert sorted(before.postulates) == ["Candidate.helper"]
    # (and the module type's own parameter, listed since a target inside it may rest on it)
    assert sorted(after.postulates) == ["Candidate.T.x", "Candidate.sneaky"]
    assert not after.targets["Candidate.foo"].found
    assert after == kd.dump_targets(backend, second, ["Candidate.foo"])


def test_session_and_one_shot_dumps_agree_over_candidates_of_one_name(
    backend: CoqBackend, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A sequence of different `Candidate`s through one warm session, the preloads changing
    between checks (so the session loads and freezes again): every warm dump equals the
    one-shot dump of a fresh process, and every one was the session's own answer."""
    sequence = [
        (CLEAN, []),
        (BY_AXIOM, ["Require Coq.Lists.List."]),
        (CLEAN, ["Require Coq.Lists.List.", "Require Coq.Logic.Classical_Prop."]),
        (BY_CLASSIC, ["Require Coq.Arith.PeanoNat."]),
        (BY_ADMITTED, []),
        (IN_FUNCTOR, ["Require Coq.Bool.Bool."]),
        (BY_AXIOM, []),
        (CLEAN, ["Require Coq.Lists.List."]),
    ]
    seen = []
    for k, (text, preload) in enumerate(sequence):
        folder = compiled(backend, tmp_path / str(k), text)
        names = ["Candidate.foo", "Candidate.helper"]
        with caplog.at_level("INFO", logger=kd.__name__):
            warm = kd.dump_targets_warm(backend, folder, names, preload=preload)
        assert "one-shot" not in caplog.text, k  # the session answered
        assert warm == kd.dump_targets(backend, folder, names), k
        if warm.targets["Candidate.foo"].found:
            seen.append(axioms(warm))
    classic = [a for a in seen[3] if a.endswith("Classical_Prop.classic")]
    assert seen[:3] == [[], ["Candidate.bad"], []] and classic == seen[3]
    assert seen[4:] == [["Candidate.helper"], ["Candidate.bad"], []]


def _status(session: CoqSession) -> tuple[int, list[str]]:
    """(objects remembered, libraries frozen) as the plugin reports them."""
    said = session.exchange([plugin.MEMO_STATUS], deadline())[0].stdout.split()
    assert said[:1] == ["Fb_memo:"] and said[2] == "remembered;", said[:4]
    return int(said[1]), said[3:]


def test_a_candidate_frozen_while_loaded_is_not_trusted_after_reset(
    backend: CoqBackend, tmp_path: Path
) -> None:
    """The plugin itself, whoever calls its freeze: `Candidate` frozen while loaded above the
    mark; after `Reset` another `Candidate` whose `foo` rests on an axiom is loaded. Before
    the fix `Fb_Print_Assumptions Candidate.foo` answered "Closed under the global context"
    from the first one's walk; now it answers as `Print Assumptions`. The preloads' walk,
    frozen below the mark, is kept across the `Reset` (the memo still pays off)."""
    clean = compiled(backend, tmp_path / "clean", CLEAN)
    dirty = compiled(backend, tmp_path / "dirty", BY_AXIOM)
    session = CoqSession(backend, backend.toolchain.program("coqtop"))
    try:
        session.start()
        session.prepare(["Require Coq.Logic.Classical_Prop."], deadline())
        remembered, frozen = _status(session)
        assert remembered == 0 and frozen and "Candidate" not in frozen
        query = f"{plugin.QUERY_VERB} Coq.Logic.Classical_Prop.NNPP."
        session.run_check([], [query], deadline())
        kept, _ = _status(session)
        assert kept > 0  # the library walk is remembered ...
        parts = ["Require Candidate.", plugin.FREEZE, f"{plugin.QUERY_VERB} Candidate.foo."]
        first = session.run_check(
            [clean / "Candidate.vo"], [*parts, plugin.MEMO_STATUS], deadline()
        )
        assert "Closed under the global context" in first[2].stdout
        assert " Candidate " in f"{first[3].stdout} "  # frozen while loaded
        remembered, frozen = _status(session)
        assert "Candidate" not in frozen and remembered == 0  # gone with its walks
        asked = ["Require Candidate.", f"{plugin.QUERY_VERB} Candidate.foo."]
        second = session.run_check(
            [dirty / "Candidate.vo"], [*asked, "Print Assumptions Candidate.foo."], deadline()
        )
        assert "Candidate.bad : False" in second[1].stdout
        assert second[1].stdout == second[2].stdout and not second[1].errors
        session.run_check([], [query], deadline())
        assert _status(session)[0] > 0  # ... and remembered again across later checks
    finally:
        session.close()


def test_the_session_freezes_only_what_it_preloaded(backend: CoqBackend, tmp_path: Path) -> None:
    """The session names the libraries it freezes: those loaded at its mark, never one a
    check copied in. Checks leave `Candidate` out of the frozen set; a check's library found
    loaded at the mark (below it) breaks the session instead of being frozen."""
    folder = compiled(backend, tmp_path / "c", BY_AXIOM)
    session = CoqSession(backend, backend.toolchain.program("coqtop"))
    try:
        session.start()
        session.prepare([], deadline())
        for preload in (["Require Coq.Lists.List."], ["Require Coq.Bool.Bool."]):
            kd.session_dump_targets(
                session, [folder / "Candidate.vo"], ["Candidate.foo"], deadline()
            )
            session.prepare(preload, deadline())
            _, frozen = _status(session)
            assert "Candidate" not in frozen and any(n.endswith("Lists.List") for n in frozen)
        shutil.copyfile(folder / "Candidate.vo", session.folder / "Candidate.vo")
        session.exchange(["Require Candidate."], deadline())  # below the mark, by hand
        with pytest.raises(SessionBroken, match="check's library is loaded at the mark"):
            session.prepare(["Require Coq.Arith.PeanoNat."], deadline())
        assert not session.alive()
    finally:
        session.close()


def test_freeze_names_only_coq_library_names() -> None:
    assert plugin.freeze_sentence(["B.c", "A", "B.c"]) == 'Fb_Freeze_Assumptions "A" "B.c".'
    with pytest.raises(ValueError):
        plugin.freeze_sentence(['A" "B'])
