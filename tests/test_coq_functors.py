"""Targets inside a functor or a module type (issue 28), real coqc and the kernel-dump plugin.

A field of a functor body or of a module type is no constant of the environment until the
functor is applied; the plugin finds it in the library's structure and dumps it as it dumps
a constant (kind, type, universes, the closure of its statement), with its assumptions
(an object of a functor body or module type without a body is an axiom of the library; a
field of a parameter's signature is a hypothesis of the functor) and the parameters that
bind it, each with every object of its signature (docs/kdump-format.md, "Functor bodies and
module types"). Genuine proofs pass; each attack is refused by the comparison itself (the
text pre-filter is off: `forbidden=[]`), on every toolchain the plugin builds for."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from formalbench.backends import coq_assumptions_plugin as plugin
from formalbench.backends import coq_kernel_dump as kd
from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_queries import UnreadableOutput, read_assumptions
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Reason
from formalbench.toolchains import provision

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

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

# an inductive before the module types: a field type of the parameter, so both functors must
# take the same `color`
SIG = (
    "Inductive color := red | green.\n"
    "Module Type Sig.\nParameter t : Type.\nParameter f : t -> t.\nParameter paint : t -> color.\n"
    "Axiom f_id : forall x, f x = x.\nEnd Sig.\n"
    "Module Type Sig2 (X : Sig).\nParameter g : X.t -> X.t.\nEnd Sig2.\n"
)
TWICE = "Lemma twice : forall x, f (f x) = x."
PROOF = "Proof. intros; unfold f; rewrite !X.f_id; reflexivity. Qed."
FUNCTOR = "Module F (Import X : Sig) (Y : Sig2 X) <: Sig.\nDefinition t := X.t.\n"
FUNCTOR += "Definition paint := X.paint.\nDefinition f x := X.f (X.f x).\nLemma f_id : forall x, f x = x.\n"
MODTYPE = "Module Type P (Import X : Sig) (Y : Sig2 X).\n"
GAP = "Lemma gap : forall x y : t, f x = f y -> x = y."
GAP_PROOF = "Proof. intros x y E; rewrite !f_id in E; exact E. Qed."


def functor(proof: str, header: str = FUNCTOR, end: str = "End F.\n", sig: str = SIG) -> str:
    return sig + header + proof + "\n" + end


def modtype(proof: str, before: str = "", sig: str = SIG, header: str = MODTYPE) -> str:
    return sig + header + before + GAP + "\n" + proof + "\nEnd P.\n"


TASK_F = functor("Proof.\nAdmitted.")
TASK_P = modtype("Proof.\nAdmitted.")
GENUINE = {
    "a functor with a dependent second parameter": (TASK_F, functor(PROOF)),
    "a module type with a proof": (
        SIG + MODTYPE + TWICE + "\nProof.\nAdmitted.\nEnd P.\n",
        SIG + MODTYPE + TWICE + "\nProof. intros; rewrite !f_id; reflexivity. Qed.\nEnd P.\n",
    ),
    # sealing changes what an application shows, not what the body proves about `f`
    "a functor sealed by its signature": (TASK_F, functor(PROOF, FUNCTOR.replace("<:", ":"))),
    "a module type's lemma over its parameter's fields": (TASK_P, modtype(GAP_PROOF)),
}
# a field the signature needs comes after the target (NZCyclic.v)
LATE = FUNCTOR.replace("Definition paint := X.paint.\n", "")
GENUINE["a functor whose signature needs a field after the target"] = (
    SIG + LATE + "Proof.\nAdmitted.\nDefinition paint := X.paint.\nEnd F.\n",
    SIG + LATE + PROOF + "\nDefinition paint := X.paint.\nEnd F.\n",
)
# the module type's own `Parameter`/`Axiom` before the target: the task's, pinned
OWN = "Module Type Q (Import X : Sig).\nParameter u : t.\nAxiom u_fix : f u = u.\n"
FIX = "Lemma fix2 : f (f u) = u."
TASK_Q = SIG + OWN + FIX + "\nProof.\nAdmitted.\nEnd Q.\n"
GENUINE["a module type with its own parameter and axiom"] = (
    TASK_Q,
    SIG + OWN + FIX + "\nProof. rewrite !u_fix; reflexivity. Qed.\nEnd Q.\n",
)
# the same in a functor body: a `Parameter` of the task before the target
BODY_PARAM = "Module H (Import X : Sig).\nParameter c : t.\nAxiom c_fix : f c = c.\n"
TASK_H = SIG + BODY_PARAM + FIX.replace("u", "c") + "\nProof.\nAdmitted.\nEnd H.\n"
GENUINE["a functor body's own parameter, the task's"] = (
    TASK_H,
    TASK_H.replace("Proof.\nAdmitted.", "Proof. rewrite !c_fix; reflexivity. Qed."),
)
# Numbers/NatInt style: module types with parameters over module types with parameters, and
# a functor nested in a functor
NESTED_TYPES = (
    SIG + "Module Type Ops (Import X : Sig).\nDefinition ff x := f (f x).\nEnd Ops.\n"
    "Module Type OpsProp (Import X : Sig) (Import O : Ops X).\n"
    "Lemma ff_id : forall x, ff x = x.\nProof.\nAdmitted.\nEnd OpsProp.\n"
)
GENUINE["a module type over a module type with parameters"] = (
    NESTED_TYPES,
    NESTED_TYPES.replace(
        "Proof.\nAdmitted.", "Proof. intros; unfold ff; rewrite !f_id; reflexivity. Qed."
    ),
)
NESTED_FUNCTORS = (
    SIG + "Module F (Import X : Sig).\nDefinition h x := f x.\n"
    "Module G (Y : Sig2 X).\nLemma h_g : forall x, h (Y.g x) = Y.g x.\nProof.\nAdmitted.\n"
    "End G.\nEnd F.\n"
)
GENUINE["a functor nested in a functor"] = (
    NESTED_FUNCTORS,
    NESTED_FUNCTORS.replace("Proof.\nAdmitted.", "Proof. intros; unfold h; apply f_id. Qed."),
)
# `Include` of a module type with lemmas, the target resting on an included lemma
INCLUDED = (
    SIG + "Module Type Props (Import X : Sig).\n"
    "Lemma f_f : forall x, f (f x) = x.\nProof. intros; rewrite !f_id; reflexivity. Qed.\n"
    "End Props.\n"
    "Module I (Import X : Sig).\nInclude Props X.\n"
    "Lemma f3 : forall x, f (f (f x)) = x.\nProof.\nAdmitted.\nEnd I.\n"
)
GENUINE["a functor including a module type with lemmas"] = (
    INCLUDED,
    INCLUDED.replace("Proof.\nAdmitted.", "Proof. intros; rewrite f_f; apply f_id. Qed."),
)
# a section lemma admitted in the task abstracts every section variable, the candidate's
# `Qed` only those it uses; the functor defined by an application after it (MSets'
# `Module WEqProperties (M : WSets) := WEqPropertiesOn M.E M.`) copies the field: no
# postulate of the task (its origin is the target)
COPIED = (
    SIG + "Module F (Import X : Sig).\nSection S.\nVariable n : nat.\n"
    "Lemma l : forall x, f (f x) = x.\nProof.\nAdmitted.\nEnd S.\nEnd F.\n"
    "Module G (X : Sig) := F X.\nModule H := G.\n"
)
GENUINE["a section lemma of a functor copied by an applied functor after it"] = (
    COPIED,
    COPIED.replace("Proof.\nAdmitted.", "Proof. intros; rewrite !f_id; reflexivity. Qed."),
)

STRONG = SIG.replace("End Sig.\n", "Parameter bad : False.\nEnd Sig.\n", 1)
SWAP = (
    SIG + "Module D (X : Sig) (Y : Sig).\n"
    "Lemma d : forall a : X.t, X.f a = a.\nProof.\nAdmitted.\nEnd D.\n"
)
SHADOW = (
    SIG + "Module F (X : Sig).\nModule G (Z : Sig).\n"
    "Lemma k : forall a : X.t, X.f a = a.\nProof.\nAdmitted.\nEnd G.\nEnd F.\n"
)
UNIV = (
    SIG + "Module U (X : Sig).\nDefinition Lo := Type.\nDefinition Hi := Type.\n"
    "Lemma lift : Lo -> Hi.\nProof.\nAdmitted.\nEnd U.\n"
)
ATTACKS: dict[str, tuple[str, str, Reason]] = {
    # the parameter's module type: a field added, made stronger, or another module type
    "a field added to the parameter's module type": (
        TASK_P,
        modtype("Proof. destruct X.bad. Qed.", sig=STRONG),
        Reason.statement_changed,
    ),
    "a field added to a functor's parameter type": (
        TASK_H,
        STRONG + BODY_PARAM + FIX.replace("u", "c") + "\nProof. destruct X.bad. Qed.\nEnd H.\n",
        Reason.statement_changed,
    ),
    "an axiom of the parameter's module type made stronger": (
        TASK_P,
        modtype(
            "Proof. intros x y _; apply X.f_id. Qed.",
            sig=SIG.replace(
                "Axiom f_id : forall x, f x = x.", "Axiom f_id : forall x y : t, x = y."
            ),
        ),
        Reason.statement_changed,
    ),
    "another module type for the parameter": (
        TASK_P,
        SIG + "Module Type Strong.\nInclude Sig.\nAxiom gap : forall x y : t, f x = f y -> x = y.\n"
        "End Strong.\n"
        + MODTYPE.replace("(Import X : Sig)", "(Import X : Strong)")
        + GAP
        + "\nProof. exact gap. Qed.\nEnd P.\n",
        Reason.statement_changed,
    ),
    "one more parameter": (
        TASK_F,
        functor(PROOF, FUNCTOR.replace("(Y : Sig2 X)", "(Y : Sig2 X) (Z : Sig)")),
        Reason.statement_changed,
    ),
    # postulates of the candidate's own inside the functor body or the module type
    "an Admitted helper inside the functor": (
        TASK_F,
        functor(
            "Proof. apply helper. Qed.",
            FUNCTOR.replace(
                "Lemma f_id", "Lemma helper : forall x, f x = x.\nAdmitted.\nLemma f_id"
            ),
        ),
        Reason.disallowed_axiom,
    ),
    "an Axiom inside the functor": (
        TASK_F,
        functor(
            "Proof. apply ax. Qed.",
            FUNCTOR.replace("Lemma f_id", "Axiom ax : forall x, f x = x.\nLemma f_id"),
        ),
        Reason.disallowed_axiom,
    ),
    "a Parameter False inside the functor": (
        TASK_F,
        functor(
            "Proof. destruct no. Qed.",
            FUNCTOR.replace("Lemma f_id", "Parameter no : False.\nLemma f_id"),
        ),
        Reason.disallowed_axiom,
    ),
    "a Declare Module inside the functor": (
        TASK_F,
        functor(
            "Proof. destruct Z.bad. Qed.",
            FUNCTOR.replace("Lemma f_id", "Declare Module Z : Bad.\nLemma f_id"),
            sig=SIG + "Module Type Bad.\nParameter bad : False.\nEnd Bad.\n",
        ),
        Reason.disallowed_axiom,
    ),
    "an axiom added to the module type of the target": (
        TASK_P,
        modtype(
            "Proof. exact cheat. Qed.", before="Axiom cheat : forall x y : t, f x = f y -> x = y.\n"
        ),
        Reason.disallowed_axiom,
    ),
    "the module type's own axiom made stronger": (
        TASK_Q,
        SIG
        + OWN.replace("f u = u", "forall y, f y = y")
        + FIX
        + "\nProof. rewrite !u_fix; reflexivity. Qed.\nEnd Q.\n",
        Reason.statement_changed,
    ),
    "an included module type with an admitted lemma": (
        INCLUDED,
        INCLUDED.replace("Proof. intros; rewrite !f_id; reflexivity. Qed.", "Admitted.").replace(
            "Proof.\nAdmitted.", "Proof. intros; rewrite f_f; apply f_id. Qed."
        ),
        Reason.disallowed_axiom,
    ),
    # what the statement uses, changed
    "a definition of the functor body changed": (
        TASK_F,
        functor(
            "Proof. reflexivity. Qed.",
            FUNCTOR.replace("Definition f x := X.f (X.f x).", "Definition f (x : t) := x."),
        ),
        Reason.statement_changed,
    ),
    "the target's statement changed": (
        TASK_P,
        modtype("Proof. intros x y E; exact E. Qed.").replace(
            GAP, GAP.replace("f x = f y", "x = y")
        ),
        Reason.statement_changed,
    ),
    # parameters of the same name, or of the same type, swapped
    "the other parameter of the same type": (
        SWAP,
        SWAP.replace("forall a : X.t, X.f a = a", "forall a : Y.t, Y.f a = a").replace(
            "Proof.\nAdmitted.", "Proof. apply Y.f_id. Qed."
        ),
        Reason.statement_changed,
    ),
    "the parameters' order swapped": (
        SWAP,
        SWAP.replace("(X : Sig) (Y : Sig)", "(Y : Sig) (X : Sig)").replace(
            "Proof.\nAdmitted.", "Proof. apply X.f_id. Qed."
        ),
        Reason.statement_changed,
    ),
    "the inner functor's parameter for the outer's": (
        SHADOW,
        SHADOW.replace("X.t, X.f", "Z.t, Z.f").replace(
            "Proof.\nAdmitted.", "Proof. apply Z.f_id. Qed."
        ),
        Reason.statement_changed,
    ),
    # a universe trick inside a functor: the proof forces Lo <= Hi
    "a universe constraint added inside a functor": (
        UNIV,
        UNIV.replace("Proof.\nAdmitted.", "Proof. intro x; exact x. Qed."),
        Reason.statement_changed,
    ),
    # the task's own text: its hole stays a hole
    "the task text itself": (TASK_F, TASK_F, Reason.forbidden_construct),
}


@pytest.fixture(scope="module", params=TOOLCHAINS)
def verifier(request: pytest.FixtureRequest) -> Iterator[StrictVerifier]:
    with CoqBackend(workers=1, timeout=60, toolchain=request.param) as backend:
        if plugin.plugin_folder(backend.toolchain) is None:
            pytest.skip(f"the Coq plugin cannot be built for {request.param}")
        yield StrictVerifier(backend, VerifierPolicy(forbidden=[]))


@pytest.mark.parametrize("name", list(GENUINE))
def test_genuine_proofs_inside_functors_and_module_types_pass(
    verifier: StrictVerifier, name: str
) -> None:
    original, candidate = GENUINE[name]
    verdict = verifier.verify(original, candidate, timeout=60)
    assert verdict.passed, (name, verdict.findings)


@pytest.mark.parametrize("name", list(ATTACKS))
def test_functor_attacks_are_refused_by_the_comparison(verifier: StrictVerifier, name: str) -> None:
    original, candidate, reason = ATTACKS[name]
    verdict = verifier.verify(original, candidate, timeout=60)
    assert not verdict.passed, name
    assert reason in verdict.reasons, (name, verdict.findings)
    assert Reason.undecided not in verdict.reasons, (name, verdict.findings)


TWO_X = (
    SIG + "Module Type Sig3.\nInclude Sig.\nParameter extra : nat.\nEnd Sig3.\n"
    "Module F (X : Sig).\nLemma a : forall v : X.t, X.f v = v.\nProof. apply X.f_id. Qed.\nEnd F.\n"
    "Module G (X : Sig3).\nLemma b : forall v : X.t, X.f v = v.\nProof. apply X.f_id. Qed.\nEnd G.\n"
)


@pytest.mark.parametrize("toolchain", TOOLCHAINS)
def test_parameters_of_the_same_name_get_distinct_deterministic_names(
    toolchain: str, tmp_path: Path
) -> None:
    """Coq prints both functors' `X` as `Candidate.X`; the dump names each by its functor
    and position, the same on two compiles of the same source, and lists each signature
    whole (G's has the extra field, F's not), every field in the closure."""
    backend = CoqBackend(toolchain=toolchain)
    if plugin.plugin_folder(backend.toolchain) is None:
        pytest.skip(f"the Coq plugin cannot be built for {toolchain}")
    dumps = []
    for side in ("one", "two"):
        folder = tmp_path / side
        folder.mkdir()
        (folder / "Candidate.v").write_text(TWO_X, encoding="utf-8")
        done = backend.toolchain.run([backend.coqc, "-q", "Candidate.v"], cwd=folder, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        dumps.append(kd.dump_targets(backend, folder, ["Candidate.F.a", "Candidate.G.b"]))
    a, b = dumps[0].targets["Candidate.F.a"], dumps[0].targets["Candidate.G.b"]
    assert a.where == b.where == "functor" and a.kind == "opaque" and a.assumptions == []
    assert [x.name for x in a.binders or []] == ["Candidate.F.(1:X)"]
    assert [x.name for x in b.binders or []] == ["Candidate.G.(1:X)"]
    assert "Candidate.G.(1:X).extra" in (b.binders or [])[0].fields
    assert not any("extra" in f for f in (a.binders or [])[0].fields)
    fields = [f for x in [*(a.binders or []), *(b.binders or [])] for f in x.fields]
    assert set(fields) <= set(dumps[0].closure.constants) | set(dumps[0].closure.inductives)
    assert dumps[0] == dumps[1]


def test_a_long_assumption_printed_on_two_lines_is_read() -> None:
    # an argument's field with a type over the printing width: the name alone, then ` : T`
    printed = ["Axioms:", "Candidate.t", "  : forall x : nat,", "    x = x", "M.c : nat"]
    assert read_assumptions(printed) == ["Candidate.t", "M.c"]
    with pytest.raises(UnreadableOutput):  # a name alone with no type below stays unread
        read_assumptions(["Axioms:", "Candidate.t", "M.c : nat"])
