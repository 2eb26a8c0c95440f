"""Coq axioms by allow-list (checking/coq_axioms.py, checking/coq_presets.py).

The pure rule first (records from both routes, what is refused and how it is named), then
the presets against the host's real Coq (each name must be what the kernel reports, and a
renamed one must not be allowed), then verdicts with real coqc: a library's
`proof_admitted`, an installed library's admitted lemma and `Goal`, a `--coq-project`
library's admitted lemma are refused; the task's own postulates, classical logic under its
preset and the reals by default pass.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formalbench.checking import coq_presets
from formalbench.checking.coq_axioms import (
    Assumption,
    BadAssumption,
    axiom_findings,
    from_dump,
)
from formalbench.checking.coq_presets import (
    DEFAULT_PRESETS,
    PRESETS,
    Preset,
    allowed_names,
    check_axiom_name,
    expand,
    shadowed,
    verify_presets,
)
from formalbench.cli.main import app
from formalbench.core.config import VerifierPolicy
from formalbench.core.errors import InputError
from formalbench.core.records import Language, Reason, Task
from formalbench.toolchains.toolchain import resolve
from tests.suite_coq import coqc, rocq9, std

needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="needs coqc")
CLASSIC = "Coq.Logic.Classical_Prop.classic"
ADMIT = "Coq.Compat.AdmitAxiom.proof_admitted"
runner = CliRunner()


# --- the rule ----------------------------------------------------------------------------
def test_only_postulates_and_listed_axioms_pass_and_each_refusal_is_named() -> None:
    targets = {
        "t": [
            Assumption("axiom", "Candidate.p"),  # the task's own postulate
            Assumption("axiom", CLASSIC),  # listed
            Assumption("axiom", ADMIT),  # a library axiom nobody listed
            Assumption("axiom", "Candidate.helper"),  # the candidate's own
        ]
    }
    found = axiom_findings(targets, {"Candidate.p"}, {CLASSIC})
    assert [f.subject for f in found] == [ADMIT, "Candidate.helper"]
    # by full name only: a look-alike of a listed axiom in another library is refused
    look_alike = {"t": [Assumption("axiom", "MyLib.Logic.Classical_Prop.classic")]}
    assert len(axiom_findings(look_alike, set(), {CLASSIC})) == 1
    assert {f.reason for f in found} == {Reason.disallowed_axiom}
    assert all(f.message.startswith("`t` depends on") for f in found)
    assert f"--allow-axiom {ADMIT}" in found[0].message


def test_bypassed_checks_section_variables_and_holes_are_refused_whatever_is_listed() -> None:
    every = {"Candidate.loop", "x", "Candidate.u", "Candidate.s", "Candidate.t2", "Candidate.i"}
    targets = {
        "t": [
            Assumption("guarded", "Candidate.loop"),
            Assumption("variable", "x"),
            Assumption("type_in_type", "Candidate.u"),
            Assumption("uip", "Candidate.s"),
            Assumption("positive", "Candidate.i"),
            Assumption("axiom", "Candidate.t2"),  # another target, left admitted
        ]
    }
    found = axiom_findings(targets, every, every, holes={"Candidate.t2"})
    assert len(found) == 6
    messages = " | ".join(f.message for f in found)
    for words in ("guard check", "section variable", "universe", "definitional UIP"):
        assert words in messages
    assert "target of the task left unproved" in found[-1].message


def test_the_checked_files_names_never_come_from_the_allow_list() -> None:
    targets = {"t": [Assumption("axiom", "Candidate.cheat"), Assumption("axiom", "Original.x")]}
    assert len(axiom_findings(targets, set(), {"Candidate.cheat", "Original.x"})) == 2
    with pytest.raises(InputError, match="files the verifier compiles"):
        check_axiom_name("Candidate.cheat")
    with pytest.raises(InputError, match="fully qualified"):
        check_axiom_name("classic")
    assert check_axiom_name(CLASSIC) == CLASSIC


def test_assumptions_from_a_kernel_dump() -> None:
    dump = [
        {"kind": "axiom", "name": CLASSIC, "type": ["Sort", "Prop"]},
        {"kind": "guarded", "name": "Candidate.f"},
        {"kind": "variable", "name": "x"},
    ]
    read = from_dump(dump)
    assert [(a.kind, a.name) for a in read] == [
        ("axiom", CLASSIC),
        ("guarded", "Candidate.f"),
        ("variable", "x"),
    ]
    assert read[0].type == ["Sort", "Prop"]
    for bad in (
        [{"kind": "sorry", "name": "x"}],
        [{"kind": "axiom"}],
        [{"kind": "axiom", "name": "x", "extra": 1}],
        ["axiom x"],
    ):
        with pytest.raises(BadAssumption):
            from_dump(bad)  # type: ignore[arg-type]


def test_print_assumptions_of_an_axiom_used_inside_a_sealed_module_is_read() -> None:
    from formalbench.backends.coq_queries import UnreadableOutput, read_assumption_entries

    printed = ["Axioms:", "AdmitAxiom.proof_admitted : False", "used in x to prove", " 1 = 2"]
    assert read_assumption_entries(printed) == {"AdmitAxiom.proof_admitted": "axiom"}
    with pytest.raises(UnreadableOutput):  # never first: it belongs to an entry
        read_assumption_entries(["Axioms:", "used in x to prove", " 1 = 2"])
    uip = ["Axioms:", "Candidate.seq relies on definitional UIP."]
    assert read_assumption_entries(uip) == {"Candidate.seq": "uip"}


def test_presets_options_and_task_field_refuse_bad_input_in_one_line() -> None:
    assert expand(["standard"]) == list(DEFAULT_PRESETS)
    assert expand(["none"]) == []
    assert expand(["classical", "classical", "reals"]) == ["classical", "reals"]
    with pytest.raises(InputError, match="unknown axiom preset 'clasical'"):
        expand(["clasical"])
    done = runner.invoke(app, ["check", "a.v", "--against", "b.v", "--allow-axioms", "x"])
    assert done.exit_code == 2 and "unknown axiom preset 'x'" in done.output
    done = runner.invoke(app, ["check", "a.v", "--against", "b.v", "--allow-axiom", "classic"])
    assert done.exit_code == 2 and "not a fully qualified name" in done.output
    task = Task(id="t", language=Language.coq, formal="x", allowed_axioms=[CLASSIC])
    assert task.model_dump()["allowed_axioms"] == [CLASSIC]
    assert "allowed_axioms" not in Task(id="t", language=Language.coq, formal="x").model_dump()
    with pytest.raises(ValueError, match="fully qualified"):
        Task(id="t", language=Language.coq, formal="x", allowed_axioms=["classic"])
    # a task's names come on top of the policy's, for Lean too (its default list kept)
    lean = VerifierPolicy().with_axioms(["Foo.bar"], Language.lean)
    assert {"propext", "Foo.bar"} <= set(lean.allowed_axioms or [])


def test_a_planted_cache_file_cannot_add_a_name(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("FORMALBENCH_CACHE", str(tmp_path))
    file = tmp_path / "planted.json"
    file.write_text(json.dumps({"confirmed": [CLASSIC, ADMIT], "probes": {}, "problems": []}))
    loaded = coq_presets._load(file, "8.16.1", "coq8")
    assert loaded is not None and loaded.confirmed == {CLASSIC}


# --- the presets, against the host's Coq -------------------------------------------------
@needs_coq
def test_every_preset_name_is_what_the_kernel_reports() -> None:
    """Each listed name is an axiom of that full name in the running Coq, and each probe
    lemma rests on exactly the axioms written beside it (not cached: asked now)."""
    check = verify_presets("host", cached=False)
    assert check.family == "coq8" and check.complete
    assert check.problems == []
    table = PRESETS["coq8"]
    present = [p for p in table.values() if p.name not in check.skipped]
    assert {a for p in present for a in p.axioms} == check.confirmed
    assert set(check.skipped) <= {"mathcomp-classical"}  # the one preset outside Coq itself
    assert ADMIT not in check.confirmed
    assert check.probes["Coq.Reals.Raxioms.completeness"]


@needs_coq
def test_a_renamed_axiom_is_caught_and_not_allowed(monkeypatch) -> None:
    """A preset naming an axiom the kernel does not have (as a version that renamed it
    would), and a probe whose axioms differ from the written ones: both are problems, and
    the name is not allowed at run time."""
    wrong = "Coq.Logic.Classical_Prop.classic_v2"
    preset = Preset(
        "classical",
        "renamed",
        (wrong, CLASSIC),
        {"Coq.Logic.Classical_Prop.NNPP": frozenset({wrong})},
        ("Coq.Logic.Classical_Prop",),
    )
    monkeypatch.setitem(PRESETS, "coq8", {**PRESETS["coq8"], "classical": preset})
    check = verify_presets("host", cached=False)
    assert wrong not in check.confirmed and CLASSIC in check.confirmed
    said = " ".join(check.problems)
    assert f"`{wrong}` does not exist" in said and "Classical_Prop.NNPP" in said
    monkeypatch.setattr(coq_presets, "verify_presets", lambda toolchain: check)
    allowed = allowed_names(["classical"], [], resolve("host"))
    assert CLASSIC in allowed and wrong not in allowed


# --- verdicts with real coqc --------------------------------------------------------------
STATEMENT = "Theorem t : forall n : nat, n + 0 = n.\nProof.\nAdmitted.\n"


def _verdict(original: str, proof: str, policy: VerifierPolicy | None = None, **backend):
    from formalbench.backends.coq import CoqBackend
    from formalbench.checking.verifier import StrictVerifier

    candidate = original.replace("Admitted.", proof + "\nQed.")
    with CoqBackend(workers=1, timeout=120, **backend) as coq:
        return StrictVerifier(coq, policy).verify(original, candidate)


@needs_coq
def test_proof_admitted_of_the_standard_library_is_refused() -> None:
    original = "Require Coq.Compat.AdmitAxiom.\n" + STATEMENT
    verdict = _verdict(original, "exfalso. exact Coq.Compat.AdmitAxiom.proof_admitted.")
    assert verdict.reasons == [Reason.disallowed_axiom]
    assert verdict.findings[0].subject == std(ADMIT)
    assert verdict.axioms == {"t": [std(ADMIT)]}  # listed fully qualified


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A library on coqc's load path (`-Q DIR MyAx`, as an installed one is) holding an
    admitted lemma, an admitted `Goal` and a fixpoint whose guard was not checked."""
    if shutil.which("coqc") is None:
        pytest.skip("needs coqc")
    root = tmp_path_factory.mktemp("installed")
    (root / "Cheat.v").write_text(
        "Require Coq.Compat.AdmitAxiom.\n"
        "Lemma cheat : False.\nAdmitted.\nGoal 1 = 2.\nAdmitted.\n"
        "Unset Guard Checking.\nFixpoint loop (n : nat) : n + 0 = n := loop n.\n"
        "Set Guard Checking.\n"
        # behind a signature: the kernel reports the axiom `used in` the sealed field
        "Module Type T. Parameter x : False. End T.\n"
        "Module M : T. Definition x := Coq.Compat.AdmitAxiom.proof_admitted. End M.\n",
        encoding="utf-8",
    )
    coqc(["-q", "-Q", ".", "MyAx", "Cheat.v"], root)
    return root


@needs_coq
def test_an_installed_librarys_admitted_lemma_goal_and_unguarded_fixpoint_are_refused(
    installed: Path,
) -> None:
    original = "Require MyAx.Cheat.\n" + STATEMENT
    on_path = {"args": ["-Q", str(installed), "MyAx"]}
    lemma = _verdict(original, "exfalso. exact MyAx.Cheat.cheat.", **on_path)
    assert lemma.reasons == [Reason.disallowed_axiom]
    assert lemma.findings[0].subject == "MyAx.Cheat.cheat"
    goal = _verdict(
        original, "exfalso. pose proof MyAx.Cheat.Unnamed_thm. discriminate.", **on_path
    )
    assert goal.reasons == [Reason.disallowed_axiom]
    assert goal.findings[0].subject == "MyAx.Cheat.Unnamed_thm"
    sealed = _verdict(original, "exfalso. exact MyAx.Cheat.M.x.", **on_path)
    assert sealed.reasons == [Reason.disallowed_axiom]
    assert sealed.findings[0].subject == std(ADMIT)
    # a switched-off guard check is refused even where its name is listed
    listed = VerifierPolicy(allowed_axioms=["MyAx.Cheat.loop"])
    loop = _verdict(original, "exact MyAx.Cheat.loop.", listed, **on_path)
    assert loop.reasons == [Reason.disallowed_axiom]
    assert "guard" in loop.findings[0].message
    # an axiom listed explicitly is allowed, and only that one
    allowed = VerifierPolicy(allowed_axioms=["MyAx.Cheat.cheat"])
    assert _verdict(original, "exfalso. exact MyAx.Cheat.cheat.", allowed, **on_path).passed


@needs_coq
def test_a_coq_projects_admitted_lemma_is_refused_unless_allowed(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "theories").mkdir(parents=True)
    (root / "_CoqProject").write_text("-R theories MyLib\ntheories/Double.v\n")
    (root / "theories" / "Double.v").write_text(
        "Definition double (n : nat) : nat := n + n.\n"
        "Lemma double_five : double 2 = 5.\nAdmitted.\n"
    )
    coqc(["-q", "-R", "theories", "MyLib", "theories/Double.v"], root)
    header = "From MyLib Require Import Double.\nTheorem t : double 2 = 5.\nProof.\n"
    (tmp_path / "orig.v").write_text(header + "Admitted.\n")
    (tmp_path / "cand.v").write_text(header + "exact double_five.\nQed.\n")
    argv = ["check", str(tmp_path / "cand.v"), "--against", str(tmp_path / "orig.v")]
    argv += ["--coq-project", str(root), "--json"]
    done = runner.invoke(app, argv)
    assert done.exit_code == 1, done.output
    verdict = json.loads(done.output)
    assert verdict["reasons"] == ["disallowed_axiom"]
    assert verdict["findings"][0]["subject"] == "MyLib.Double.double_five"
    assert verdict["axioms"] == {"t": ["MyLib.Double.double_five"]}
    allowed = runner.invoke(app, [*argv, "--allow-axiom", "MyLib.Double.double_five"])
    assert allowed.exit_code == 0, allowed.output


@needs_coq
def test_the_tasks_own_postulates_pass_and_the_candidates_own_do_not() -> None:
    original = (
        "Parameter f : nat -> nat.\nAxiom f_spec : forall n, f n = n.\n"
        "Theorem t : forall n, f n + 0 = n.\nProof.\nAdmitted.\n"
    )
    lenient = VerifierPolicy(forbidden=[], axiom_presets=[])  # postulates need no preset
    own = _verdict(original, "intros n. rewrite f_spec. auto.", lenient)
    assert own.passed, own.findings
    assert set(own.axioms["t"]) == {"Candidate.f", "Candidate.f_spec"}
    # the task's postulate stated otherwise: not the task's any more
    changed = original.replace("f n = n.", "f n = n + 0.")
    from formalbench.backends.coq import CoqBackend
    from formalbench.checking.verifier import StrictVerifier

    with CoqBackend(workers=1, timeout=120) as coq:
        verifier = StrictVerifier(coq, lenient)
        candidate = changed.replace("Admitted.", "intros n. rewrite f_spec. auto.\nQed.")
        assert not verifier.verify(original, candidate).passed
        # a postulate of the candidate's own, the task's kept: refused by name
        extra = original.replace(
            "Theorem t", "Axiom cheat : forall n, f n + 0 = n.\nTheorem t"
        ).replace("Admitted.", "exact cheat.\nQed.")
        verdict = verifier.verify(original, extra)
        assert verdict.reasons == [Reason.disallowed_axiom]
        assert verdict.findings[0].subject == "Candidate.cheat"


@needs_coq
def test_classical_logic_passes_under_its_preset_only() -> None:
    original = "Require Coq.Logic.Classical_Prop.\n" + STATEMENT
    proof = "intros n. destruct (Coq.Logic.Classical_Prop.classic (n = n)); auto."
    assert _verdict(original, proof).passed  # the default holds the preset
    assert _verdict(original, proof, VerifierPolicy(axiom_presets=["classical"])).passed
    without = _verdict(original, proof, VerifierPolicy(axiom_presets=["reals", "choice"]))
    assert without.reasons == [Reason.disallowed_axiom]
    assert without.findings[0].subject == std(CLASSIC)
    by_name = VerifierPolicy(axiom_presets=[], allowed_axioms=[CLASSIC])
    assert _verdict(original, proof, by_name).passed


@needs_coq
def test_a_reals_proof_passes_by_default_and_names_its_axioms() -> None:
    original = (
        "Require Import Reals.\nOpen Scope R_scope.\n"
        "Theorem t : forall x : R, x + 0 = x.\nProof.\nAdmitted.\n"
    )
    verdict = _verdict(original, "intros x. ring.")
    assert verdict.passed, verdict.findings
    assert std("Coq.Reals.ClassicalDedekindReals.sig_forall_dec") in verdict.axioms["t"]
    strict = _verdict(original, "intros x. ring.", VerifierPolicy(axiom_presets=[]))
    assert strict.reasons == [Reason.disallowed_axiom]


@needs_coq
def test_a_tasks_allowed_axioms_reach_its_verdict(installed: Path) -> None:
    from formalbench.backends.coq import CoqBackend
    from formalbench.checking.verifier import StrictVerifier

    original = "Require MyAx.Cheat.\n" + STATEMENT
    candidate = original.replace("Admitted.", "exfalso. exact MyAx.Cheat.cheat.\nQed.")
    with CoqBackend(workers=1, timeout=120, args=["-Q", str(installed), "MyAx"]) as coq:
        verifier = StrictVerifier(coq)
        assert not verifier.verify(original, candidate).passed
        assert verifier.verify(original, candidate, axioms=["MyAx.Cheat.cheat"]).passed


def test_an_eval_runs_policy_carries_the_options_and_old_runs_resume() -> None:
    from formalbench.pipelines.run_config import EvalConfig

    plain = EvalConfig(dataset="d")
    assert "allowed_axioms" not in plain.identity() and "axiom_presets" not in plain.identity()
    assert plain.policy(Language.coq).axiom_presets is None  # the default presets
    given = EvalConfig(dataset="d", allowed_axioms=[CLASSIC], axiom_presets=["reals"])
    assert given.identity()["allowed_axioms"] == [CLASSIC]
    policy = given.policy(Language.coq)
    assert policy.allowed_axioms == [CLASSIC] and policy.axiom_presets == ["reals"]


def test_a_load_path_that_can_stand_in_for_a_presets_library_voids_its_names() -> None:
    assert shadowed(CLASSIC, ["-Q", "/p", "Coq.Logic"])
    assert shadowed(CLASSIC, ["-R", "/p", "Coq"])
    assert shadowed(CLASSIC, ["-R", "/p", ""])  # every logical name below the folder
    assert shadowed(CLASSIC, ["-coqlib", "/elsewhere"])
    assert not shadowed(CLASSIC, ["-Q", "/p", "Co"])  # a prefix by components only
    assert not shadowed(CLASSIC, ["-Q", "/p", "MyLib", "-I", "/ml"])


@needs_coq
def test_a_project_shadowing_the_standard_library_cannot_pass_as_its_axiom(
    tmp_path: Path,
) -> None:
    """`-Q DIR Coq.Logic` with a `Classical_Prop.v` of its own, `classic : False` in it:
    the kernel reports `Coq.Logic.Classical_Prop.classic`, the name of the preset, but
    from another file; the preset's names under that binding are not allowed."""
    fake = tmp_path / "Logic"
    fake.mkdir()
    (fake / "Classical_Prop.v").write_text("Axiom classic : False.\n")
    coqc(["-q", "-Q", ".", "Coq.Logic", "Classical_Prop.v"], fake)
    original = "Require Coq.Logic.Classical_Prop.\nTheorem t : 1 = 2.\nProof.\nAdmitted.\n"
    verdict = _verdict(
        original,
        "exfalso. exact Coq.Logic.Classical_Prop.classic.",
        args=["-Q", str(fake), "Coq.Logic"],
    )
    if rocq9():  # Rocq 9 reads `Coq.Logic` as its alias of Stdlib's: the project's file is
        # never loaded, `classic` is the real one and does not prove `1 = 2`
        assert verdict.reasons == [Reason.compile_error]
        return
    assert verdict.reasons == [Reason.disallowed_axiom]
    assert verdict.findings[0].subject == CLASSIC  # the project's file, by the name it binds


@pytest.mark.rocq
def test_every_rocq_9_preset_name_is_what_its_kernel_reports() -> None:
    """The `rocq9` table against Rocq 9.2 itself (the provisioned toolchain, its coqc run
    in its root): every name confirmed (the primitive types and their axioms under
    `Corelib`, the rest under `Stdlib`), every probe exact."""
    check = verify_presets("rocq-9.2", cached=False)
    assert check.family == "rocq9" and check.complete
    assert check.problems == []
    present = [p for p in PRESETS["rocq9"].values() if p.name not in check.skipped]
    assert {a for p in present for a in p.axioms} == check.confirmed
    assert "Corelib.Numbers.Cyclic.Int63.Uint63Axioms.add_spec" in check.confirmed


def test_the_coq_8_table_holds_on_coq_8_20_too() -> None:
    """The `coq8` table is one for every Coq 8: checked on the provisioned Coq 8.20 too."""
    from formalbench.toolchains import provision

    if provision.record_of("coq-8.20") is None:
        pytest.skip("coq-8.20 is not installed (`formalbench toolchain install coq-8.20`)")
    check = verify_presets("coq-8.20", cached=False)
    assert check.family == "coq8" and check.problems == [] and len(check.confirmed) == 141


def test_ape_refuses_a_new_library_axiom_off_the_allow_list() -> None:
    """APE's compile pass: an answer that makes a declaration rest on a library axiom the
    file before did not use is incomplete unless the axiom is on the allow-list."""
    from formalbench.core.records import CheckResult
    from formalbench.pipelines.ape.completeness import FileView, judge_completeness

    before = FileView(CheckResult(backend="coq"), {"Candidate.foo": "1 = 1"}, {"foo": []})
    after = FileView(CheckResult(backend="coq"), {"Candidate.foo": "1 = 1"}, {"foo": [ADMIT]})
    refused = judge_completeness(before, after, allowed={CLASSIC})
    assert not refused["complete"] and ADMIT in " ".join(refused["reasons"])
    assert judge_completeness(before, after, allowed={ADMIT})["complete"]
