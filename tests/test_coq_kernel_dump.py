"""The kernel dump of a compiled library, on real coqc (issue 28's producer side).

Each test compiles a `Candidate.v` of its own and reads what the plugin dumps about it, on
the host's Coq and on the provisioned rocq-9.2 toolchain (tests marked `rocq`, skipped with
one reason where it is not installed; names of the standard library are compared through
`std`, Coq 8's `Coq.` being Rocq 9's `Corelib.`/`Stdlib.`):
section abstraction (Admitted abstracts every section variable, Qed only those used),
inductives, records and primitive projections, a functor application, universe levels
(monomorphic and polymorphic, the graph's pairs), every assumption kind by its kernel
constructor, postulates, a target that is not a constant, and the dump of every object of a
library whose functor uses a module type's `Context (bad : False)`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from formalbench.backends import coq_assumptions_plugin as plugin
from formalbench.backends import coq_kernel_dump as kd
from formalbench.backends import coq_kernel_dump_format as kf
from formalbench.backends.coq import CoqBackend
from formalbench.toolchains import provision

pytestmark = [
    pytest.mark.coq,
    pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed"),
]


ROCQ = "rocq-9.2"
COQ820 = "coq-8.20"
TOOLCHAINS = [
    "host",
    pytest.param(ROCQ, marks=pytest.mark.rocq),
    pytest.param(
        COQ820,
        marks=pytest.mark.skipif(
            provision.record_of(COQ820) is None, reason=f"{COQ820} is not installed"
        ),
    ),
]


@pytest.fixture(scope="module", params=TOOLCHAINS)
def backend(request: pytest.FixtureRequest) -> CoqBackend:
    chosen = CoqBackend(toolchain=request.param)
    if plugin.plugin_folder(chosen.toolchain) is None:
        pytest.skip(f"the Coq plugin cannot be built for {request.param} (no OCaml toolchain)")
    return chosen


def rocq9(backend: CoqBackend) -> bool:
    return not backend.toolchain.version().startswith("8.")


def std(backend: CoqBackend, name: str) -> str:
    """A standard library name as `backend`'s Coq writes it: Coq 8's `Coq.Init.X` is Rocq
    9's `Corelib.Init.X`, its other `Coq.X` is `Stdlib.X`."""
    if not rocq9(backend) or not name.startswith("Coq."):
        return name
    rest = name[len("Coq.") :]
    return ("Corelib." if rest.startswith("Init.") else "Stdlib.") + rest


# Coq 8.20 and Rocq 9 make a top-level `Variable`/`Context` an error by default (a warning
# on 8.16); the tests' texts use them on purpose (PutnamBench's postulates are written so)
OUTSIDE_SECTION = ["-w", "-declaration-outside-section,-context-outside-section"]


def compile_on(
    backend: CoqBackend, folder: Path, name: str, extra: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """coqc of `backend`'s toolchain on `<name>.v` in `folder` (the test's own text)."""
    flags = [] if backend.toolchain.version().startswith("8.16") else OUTSIDE_SECTION
    argv = [backend.coqc, "-q", *flags, *extra, f"{name}.v"]
    return backend.toolchain.run(argv, cwd=folder, timeout=300)


def compiled(backend: CoqBackend, folder: Path, text: str, name: str = "Candidate") -> Path:
    (folder / f"{name}.v").write_text(text, encoding="utf-8")
    done = compile_on(backend, folder, name)
    assert done.returncode == 0, done.stderr[-2000:]
    return folder


def coqtop(backend: CoqBackend) -> str:
    return backend.toolchain.program("coqtop")


def run_with_plugin(
    backend: CoqBackend, where: Path, folder: Path, args: list[str]
) -> subprocess.CompletedProcess[bytes]:
    """coqc of `backend`'s toolchain in `folder` where the plugin of `where` can be loaded
    (its findlib folder first on Rocq 9; bound into a provisioned root), output as bytes."""
    chain = backend.toolchain
    argv = [backend.coqc, *plugin.ml_path_args(where), "-q", *args]
    read_only = [] if chain.is_host else [str(where)]
    return subprocess.run(
        chain.argv(argv, work=folder, read_only=read_only),
        cwd=folder,
        capture_output=True,
        env=chain.env(dict(os.environ)),
        timeout=300,
    )


def targets(backend: CoqBackend, folder: Path, names: list[str]) -> kf.KernelDump:
    return kd.dump_targets(backend, folder, [f"Candidate.{n}" for n in names])


def heads(term: Any) -> list[str]:
    """The constructors of `term`, outermost first along the spine of products."""
    out = []
    while isinstance(term, list) and term and term[0] == "Prod":
        out.append("Prod")
        term = term[3]
    return out


def names_in(term: Any) -> set[str]:
    found: set[str] = set()
    stack = [term]
    while stack:
        t = stack.pop()
        if isinstance(t, list):
            if t and t[0] in ("Const", "Ind", "Construct", "Proj") and isinstance(t[1], str):
                found.add(t[1])
            stack.extend(t)
    return found


SECTIONS = """
Section S.
  Variable A : Type.
  Variable a : A.
  Variable unused : nat.
  Lemma by_qed : a = a. Proof. reflexivity. Qed.
  Lemma by_admitted : a = a. Admitted.
  Definition by_def := a.
End S.
"""


def test_section_variables_admitted_abstracts_all_qed_only_used(
    backend: CoqBackend, tmp_path: Path
) -> None:
    dump = targets(
        backend, compiled(backend, tmp_path, SECTIONS), ["by_qed", "by_admitted", "by_def"]
    )
    t = {k.split(".")[-1]: v for k, v in dump.targets.items()}
    assert len(heads(t["by_qed"].type)) == 2  # A, a
    assert len(heads(t["by_admitted"].type)) == 3  # A, a, unused
    assert t["by_admitted"].kind == "undef" and t["by_qed"].kind == "opaque"
    assert [a.kind for a in t["by_admitted"].assumptions or []] == ["axiom"]
    assert "Candidate.by_admitted" in dump.postulates
    assert t["by_qed"].assumptions == [] and t["by_def"].kind == "def"
    assert all(v.section_vars is None for v in t.values())


INDUCTIVES = """
Inductive color := Red | Green.
Inductive tree (A : Type) : nat -> Type :=
| leaf : tree A 0
| node : forall n, A -> tree A n -> tree A n -> tree A (S n)
with forest (A : Type) : Type := nil_f : forest A.
Record point := mk { px : nat; py : color }.
Set Primitive Projections.
Record ppoint := pmk { qx : nat; qy : nat }.
Unset Primitive Projections.
Definition size (A : Type) n (t : tree A n) : nat := match t with leaf _ => 0 | node _ _ _ _ _ => 1 end.
Definition uses (p : point) (q : ppoint) (t : tree color 0) : nat := px p + qx q + size _ _ t.
Lemma about_uses : forall p q, uses p q (leaf color) = px p + qx q.
Proof. intros. unfold uses. simpl. apply eq_sym, plus_n_O. Qed.
"""


def test_inductives_records_and_the_closure(backend: CoqBackend, tmp_path: Path) -> None:
    dump = targets(backend, compiled(backend, tmp_path, INDUCTIVES), ["about_uses"])
    target = dump.targets["Candidate.about_uses"]
    assert target.found and target.kind == "opaque"
    assert {"Candidate.uses", "Candidate.point", "Candidate.ppoint"} <= names_in(target.type)
    consts, minds = dump.closure.constants, dump.closure.inductives
    # the closure follows the transparent body of `uses` to `size`, `px`, the projection qx
    assert {"Candidate.uses", "Candidate.size", "Candidate.px"} <= set(consts)
    assert {"Candidate.point", "Candidate.ppoint", "Candidate.tree", "Candidate.color"} <= set(
        minds
    )
    assert "Candidate.about_uses" not in consts  # a target's own proof is not followed
    tree = minds["Candidate.tree"]
    assert tree.ntypes == 2 and [p.name for p in tree.packets] == ["tree", "forest"]
    assert tree.packets[0].consnames == ["leaf", "node"] and tree.nparams == 1
    assert tree.packets[0].nrealargs == 1 and tree.finite == "Finite"
    assert minds["Candidate.point"].record == "fake"
    prim = minds["Candidate.ppoint"].record
    assert isinstance(prim, kf.PrimRecord) and prim.projections == [
        "Candidate.qx",
        "Candidate.qy",
    ]
    assert any(
        isinstance(t, list) and t[:2] == ["Proj", "Candidate.qx"]
        for t in _walk(consts["Candidate.uses"].body)
    )
    assert consts["Candidate.uses"].kind == "def" and consts["Candidate.uses"].body is not None
    assert minds["Candidate.color"].packets[0].kelim == "Type"


def _walk(term: Any) -> list[Any]:
    out, stack = [], [term]
    while stack:
        t = stack.pop()
        if isinstance(t, list):
            out.append(t)
            stack.extend(t)
    return out


FUNCTORS = """
Module Type NUM. Parameter t : Type. Parameter one : t. End NUM.
Module N <: NUM. Definition t := nat. Definition one := 1. End N.
Module Make (X : NUM). Definition t := X.t. Definition one := X.one.
  Definition two := (one, one). Lemma two_ok : two = (one, one). Proof. reflexivity. Qed.
End Make.
Module BigZ := Make N.
Module Sealed : NUM. Definition t := bool. Definition one := true. End Sealed.
Lemma big : BigZ.two = (1, 1). Proof. reflexivity. Qed.
"""


def test_functor_application_names_and_sealed_modules(backend: CoqBackend, tmp_path: Path) -> None:
    dump = targets(
        backend, compiled(backend, tmp_path, FUNCTORS), ["BigZ.two_ok", "big", "Sealed.one"]
    )
    two_ok = dump.targets["Candidate.BigZ.two_ok"]
    assert two_ok.found and two_ok.user == "Candidate.BigZ.two_ok"
    assert "Candidate.BigZ.two" in names_in(two_ok.type)
    consts = dump.closure.constants
    assert consts["Candidate.BigZ.two"].kind == "def"
    assert "Candidate.BigZ.one" in consts and "Candidate.N.one" in consts
    assert consts["Candidate.N.one"].body == [
        "App",
        ["Construct", std(backend, "Coq.Init.Datatypes.nat"), 0, 2, []],
        [["Construct", std(backend, "Coq.Init.Datatypes.nat"), 0, 1, []]],
    ]
    sealed = dump.targets["Candidate.Sealed.one"]
    assert sealed.kind == "undef"  # the environment's view of a sealed field
    assert sealed.assumptions == []  # ... whose implementation Print Assumptions finds
    assert "Candidate.Sealed.one" not in dump.postulates  # nor is it a postulate
    # the module type's own parameters are (a target inside it may rest on them); the
    # functor's parameter's fields and the functor's body hold none
    assert set(dump.postulates) == {"Candidate.NUM.t", "Candidate.NUM.one"}


UNIVERSES = """
Universe u v.
Constraint u < v.
Definition U : Type@{v} := Type@{u}.
Polymorphic Definition pid@{w x} (A : Type@{w}) (B : Type@{x}) (a : A) := a.
Polymorphic Definition plt@{w x | w < x} : Type@{x} := Type@{w}.
Definition mono := pid nat bool 0.
Lemma uses_U : U = U. Proof. reflexivity. Qed.
"""


def test_universe_levels_and_pairs(backend: CoqBackend, tmp_path: Path) -> None:
    dump = targets(backend, compiled(backend, tmp_path, UNIVERSES), ["uses_U", "pid", "plt"])
    assert dump.targets["Candidate.pid"].univs == kf.Univs(polymorphic=True, size=2, constraints=[])
    plt = dump.targets["Candidate.plt"].univs
    assert plt is not None and plt.constraints == [["Var(0)", "<", "Var(1)"]]
    levels = dump.universes.levels
    assert len(levels) >= 2 and all(level.startswith("Candidate.") for level in levels)
    lt = {tuple(p) for p in dump.universes.lt}
    le = {tuple(p) for p in dump.universes.le}
    u_type = dump.closure.constants["Candidate.U"].type  # Type@{v+1}
    v = u_type[1][1][0][0]
    body = dump.closure.constants["Candidate.U"].body
    u = body[1][1][0][0]  # Type@{u} is Sort(Type(u+1))
    assert (u, v) in lt and (u, v) in le and (v, u) not in le
    assert ("Set", u) in le


ASSUMPTIONS = """
Axiom cheat : False.
Lemma by_axiom : 1 = 2. Proof. destruct cheat. Qed.
Unset Guard Checking.
Fixpoint loop (n : nat) : False := loop n.
Set Guard Checking.
Lemma by_guard : False. Proof. exact (loop 0). Qed.
Unset Positivity Checking.
Inductive bad := mk : (bad -> False) -> bad.
Set Positivity Checking.
Definition by_positivity (b : bad) : bad := b.
Unset Universe Checking.
Definition big : Type := Type.
Set Universe Checking.
Definition by_universes : Type := big.
Set Definitional UIP.
Inductive seq {A : Type} (a : A) : A -> SProp := srefl : seq a a.
Unset Definitional UIP.
Definition by_uip (n : nat) (e : seq n n) : seq n n := e.
#[bypass_check(guard)] Fixpoint loop2 (n : nat) : False := loop2 n.
Lemma by_attribute : False. Proof. exact (loop2 0). Qed.
Parameter p : nat.
Variable top_var : nat.
Lemma clean : 0 = 0. Proof. reflexivity. Qed.
"""


def test_every_assumption_kind_by_constructor(backend: CoqBackend, tmp_path: Path) -> None:
    names = ["by_axiom", "by_guard", "by_positivity", "by_universes", "by_uip"]
    names += ["by_attribute", "clean", "p", "top_var"]
    dump = targets(backend, compiled(backend, tmp_path, ASSUMPTIONS), names)

    def kinds(name: str) -> set[tuple[str, str]]:
        found = dump.targets[f"Candidate.{name}"].assumptions or []
        return {(a.kind, a.name) for a in found}

    assert kinds("by_axiom") == {("axiom", "Candidate.cheat")}
    assert ("guarded", "Candidate.loop") in kinds("by_guard")
    assert ("positive", "Candidate.bad") in kinds("by_positivity")
    assert ("type_in_type", "Candidate.big") in kinds("by_universes")
    assert ("uip", "Candidate.seq") in kinds("by_uip")
    assert ("guarded", "Candidate.loop2") in kinds("by_attribute")
    assert kinds("clean") == set()
    assert kinds("p") == {("axiom", "Candidate.p")}
    assert kinds("top_var") == {("axiom", "Candidate.top_var")}
    axiom = dump.targets["Candidate.by_axiom"].assumptions[0]  # type: ignore[index]
    assert axiom.type == ["Ind", std(backend, "Coq.Init.Logic.False"), 0, []]
    assert set(dump.postulates) == {"Candidate.cheat", "Candidate.p", "Candidate.top_var"}
    unsafe = {(u.name, u.what, u.object) for u in dump.unsafe}
    assert ("Candidate.loop", "guard", "constant") in unsafe
    assert ("Candidate.loop2", "guard", "constant") in unsafe
    assert ("Candidate.bad", "positivity", "inductive") in unsafe
    assert ("Candidate.big", "universes", "constant") in unsafe
    assert ("Candidate.seq", "uip", "inductive") in unsafe
    assert not any(u.name == "Candidate.clean" for u in dump.unsafe)
    assert dump.flags.check_guarded and not dump.flags.allow_uip


NOT_CONSTANTS = """
Inductive color := Red.
Module M. Definition x := 0. End M.
Notation abbrev := M.x.
Definition real := 0.
"""


def test_what_is_not_a_constant_is_named(backend: CoqBackend, tmp_path: Path) -> None:
    asked = ["color", "Red", "M", "abbrev", "missing", "real"]
    dump = targets(backend, compiled(backend, tmp_path, NOT_CONSTANTS), asked)
    found = {k: v.found for k, v in dump.targets.items()}
    assert found == {f"Candidate.{n}": n == "real" for n in asked}
    named = {u.name for u in dump.undumpable}
    assert named == {f"Candidate.{n}" for n in asked if n != "real"}
    assert all(v.why for k, v in dump.targets.items() if not v.found)


CONTEXT_IN_MODULE_TYPE = """
Module Type T.
  Context (bad : False).
  Parameter t : nat.
End T.
Module F (X : T).
  Lemma one_two : 1 = 2. Proof. destruct X.bad. Qed.
  Unset Guard Checking.
  Fixpoint spin (n : nat) : False := spin n.
  Set Guard Checking.
End F.
Lemma fine : 0 = 0. Proof. reflexivity. Qed.
Module Seal : T. Definition bad : False. Admitted. Definition t := 0. End Seal.
Declare Module D : T.
Module Alias := Seal.
"""


def test_library_dump_sees_functor_bodies_and_module_type_fields(
    backend: CoqBackend, tmp_path: Path
) -> None:
    dump = kd.dump_library(backend, compiled(backend, tmp_path, CONTEXT_IN_MODULE_TYPE))
    objects = {(o.where, o.name): o for o in dump.objects}
    bad = objects[("module_type", "Candidate.T.bad")]
    assert bad.kind == "undef" and bad.type == ["Ind", std(backend, "Coq.Init.Logic.False"), 0, []]
    assert objects[("functor_parameter", "Candidate.X.bad")].kind == "undef"
    lemma = objects[("functor", "Candidate.F.one_two")]
    assert lemma.kind == "opaque" and "Candidate.X.bad" in (lemma.refs or [])
    assert objects[("module", "Candidate.fine")].assumptions == []
    seal = objects[("module", "Candidate.Seal.bad")]  # the implementation's view
    assert seal.kind == "undef" and [a.name for a in seal.assumptions or []] == [
        "Candidate.Seal.bad"
    ]
    assert ("Candidate.F.spin", "guard") in {(u.name, u.what) for u in dump.unsafe}
    declared = objects[("module", "Candidate.D.bad")]  # `Declare Module`: an axiom
    assert declared.kind == "undef" and declared.assumptions
    names = [o.name for o in dump.objects]
    assert len(names) == len(set(names))  # the alias's objects are Seal's: listed once
    assert not dump.undumpable


def test_session_route_gives_the_one_shot_dump(backend: CoqBackend, tmp_path: Path) -> None:
    from formalbench.backends.coq_session import CoqSession

    folder = compiled(backend, tmp_path, INDUCTIVES + FUNCTORS)
    names = ["Candidate.about_uses", "Candidate.BigZ.two_ok", "Candidate.color"]
    one_shot = kd.dump_targets(backend, folder, names)
    session = CoqSession(backend, coqtop(backend))
    try:
        session.start()
        session.prepare([], time.monotonic() + 120)
        for _ in range(2):  # the second after the session's Reset
            warm = kd.session_dump_targets(
                session, [folder / "Candidate.vo"], names, time.monotonic() + 120
            )
            assert warm == one_shot
    finally:
        session.close()


def test_strings_are_escaped_whatever_they_hold(backend: CoqBackend, tmp_path: Path) -> None:
    """Names reach the JSON as keys: quotes, backslashes, newlines, control characters,
    unicode and bytes that are not UTF-8 must come back as JSON strings that parse."""
    compiled(backend, tmp_path, "Definition αβ_γ' := 0.\n")
    where = plugin.plugin_folder(backend.toolchain)
    assert where is not None
    weird = 'a""b\\c\nd\te\x01f é 🎉 \\"" end'  # `""` is one quote inside a Coq string
    text = plugin.declare_sentence(where) + "Require Candidate.\n"
    text += f'{plugin.DUMP_VERB} "n1" "Candidate" "Candidate.αβ_γ\'" "{weird}".\n'
    (tmp_path / "Probe.v").write_bytes(text.encode("utf-8"))
    raw = text.encode("utf-8").replace(b"end", b"\xff\xfeend")
    (tmp_path / "Probe2.v").write_bytes(raw)
    for probe, expected in (("Probe", weird.replace('""', '"')), ("Probe2", None)):
        done = run_with_plugin(backend, where, tmp_path, [f"{probe}.v"])
        assert probe == "Probe2" or done.returncode == 0, done.stderr
        if probe == "Probe2" and done.returncode != 0:
            continue  # this Coq refuses a file that is not UTF-8: nothing to escape
        out = done.stdout.decode("utf-8")  # must be valid UTF-8
        data = kf.framed_json(out, "n1")
        keys = set(data["targets"])
        assert "Candidate.αβ_γ'" in keys and data["targets"]["Candidate.αβ_γ'"]["found"]
        if expected is not None:
            assert expected in keys
        else:
            assert any("\ufffd" in k for k in keys)
        assert json.loads(json.dumps(data)) == data


# --- the reader refuses what is not exactly the format -----------------------------------
def _frame(nonce: str, payload: str) -> str:
    return f"noise\nFBDUMP-BEGIN {nonce}\n{payload}\nFBDUMP-END {nonce}\n"


def test_reader_is_not_fooled_by_look_alike_frames(backend: CoqBackend, tmp_path: Path) -> None:
    folder = compiled(backend, tmp_path, "Definition x := 0.\n")
    nonce = kd.new_nonce()
    stdout = kd._run_one_shot(
        backend, folder, "Candidate", kd.targets_command(nonce, "Candidate", ["Candidate.x"]), 60
    )
    good = kd.read_targets_dump(stdout, nonce, ["Candidate.x"])
    fake = _frame("0" * 32, json.dumps({"format": 1}))
    assert kd.read_targets_dump(fake + stdout, nonce, ["Candidate.x"]) == good
    with pytest.raises(kf.KernelDumpError, match="markers"):
        kd.read_targets_dump(stdout + stdout, nonce)  # the same frame twice
    with pytest.raises(kf.KernelDumpError, match="markers"):
        kd.read_targets_dump(stdout, "1" * 32)
    data = kf.framed_json(stdout, nonce)
    for broken, why in (
        ({**data, "extra": 1}, "extra"),
        ({**data, "format": 2}, "format"),
        ({k: v for k, v in data.items() if k != "universes"}, "universes"),
    ):
        with pytest.raises(kf.KernelDumpError, match=why):
            kd.read_targets_dump(_frame(nonce, json.dumps(broken)), nonce)
    x = data["targets"]["Candidate.x"]
    for bad_type in (["Case", "I", 0], ["Rel", 0], ["Sort", "Typ"], ["Nope", 1], "x"):
        forged = {**data, "targets": {"Candidate.x": {**x, "type": bad_type}}}
        with pytest.raises(kf.KernelDumpError, match="malformed"):
            kd.read_targets_dump(_frame(nonce, json.dumps(forged)), nonce)
    with pytest.raises(kf.KernelDumpError, match="not JSON"):
        kd.read_targets_dump(_frame(nonce, "{not json"), nonce)
    with pytest.raises(kf.KernelDumpError, match="exactly the names"):
        kd.read_targets_dump(stdout, nonce, ["Candidate.x", "Candidate.y"])


def test_names_that_are_not_coq_names_are_refused_before_coq_runs() -> None:
    for bad in ['x" "y', "a b", "", "1x", 'Candidate.x". Fb_Print_Assumptions foo. "']:
        with pytest.raises(kf.KernelDumpError, match="not a Coq name"):
            kd.targets_command("00", "Candidate", [bad])


PRIMITIVES_AND_VARIANCE = """
Require Import Coq.Numbers.Cyclic.Int63.PrimInt63 Coq.Floats.PrimFloat Coq.Array.PArray.
Definition i : int := 3%uint63.
Definition f : float := 1.5%float.
Definition a : array nat := make 2%uint63 0.
Polymorphic Cumulative Inductive cbox@{=u} (A : Type@{u}) : Type@{u} := CBox : A -> cbox A.
Inductive tbox (A : Type) : Type := TBox : A -> tbox A.
Definition uses_all := (i, f, a, cbox nat, tbox nat).
Lemma about : uses_all = uses_all. Proof. reflexivity. Qed.
"""


def test_primitive_values_cumulative_and_template_inductives(
    backend: CoqBackend, tmp_path: Path
) -> None:
    dump = targets(backend, compiled(backend, tmp_path, PRIMITIVES_AND_VARIANCE), ["about"])
    consts, minds = dump.closure.constants, dump.closure.inductives
    assert consts["Candidate.i"].body == ["Int", "3"]
    assert consts["Candidate.f"].body[0] == "Float"  # type: ignore[index]
    body = consts["Candidate.a"].body
    assert any(isinstance(t, list) and t[:1] == ["Const"] for t in _walk(body))
    cbox = minds["Candidate.cbox"]
    assert cbox.univs.polymorphic and cbox.variance == ["Invariant"]  # as declared
    tbox = minds["Candidate.tbox"]
    assert not tbox.univs.polymorphic
    if rocq9(backend):  # 9.x binds template levels in a context of their own, keeps the arity
        assert isinstance(tbox.template, kf.Template9) and tbox.packets[0].user_arity is not None
        assert tbox.template.univs.polymorphic and tbox.template.univs.size == 1
    else:  # 8.16 keeps no user arity for a template inductive
        assert isinstance(tbox.template, kf.Template) and tbox.packets[0].user_arity is None


def test_the_pool_route_answers_and_falls_back(
    backend: CoqBackend,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    folder = compiled(backend, tmp_path, INDUCTIVES)
    names = ["Candidate.about_uses"]
    one_shot = kd.dump_targets(backend, folder, names)
    with caplog.at_level("INFO", logger=kd.__name__):
        assert kd.dump_targets_warm(backend, folder, names) == one_shot
    assert "one-shot" not in caplog.text  # the session answered
    monkeypatch.setenv("FORMALBENCH_COQ_SESSION", "0")  # no session: the one-shot process
    assert kd.dump_targets_warm(backend, folder, names) == one_shot


CLASSICAL = """
Require Import Coq.Logic.Classical_Prop Coq.Logic.FunctionalExtensionality.
Lemma em (P : Prop) : P \\/ ~ P. Proof. apply classic. Qed.
Lemma fe (f g : nat -> nat) : (forall x, f x = g x) -> f = g.
Proof. apply functional_extensionality. Qed.
Lemma both (P : Prop) (f : nat -> nat) : (P \\/ ~ P) /\\ f = f.
Proof. split; [apply em | apply fe; reflexivity]. Qed.
"""


def test_the_shared_walk_answers_as_coqs_own_assumptions(
    backend: CoqBackend, tmp_path: Path
) -> None:
    """`Fb_Kernel_Dump` (one memoized walk for all targets) and `Fb_Kernel_Dump_Exact`
    (Coq's Assumptions.assumptions per target) give the same dump, library axioms and
    every bypassed check included."""
    for k, (text, names) in enumerate(
        [
            (CLASSICAL, ["em", "fe", "both"]),
            (ASSUMPTIONS, ["by_axiom", "by_guard", "by_positivity", "by_universes", "by_uip"]),
            (ASSUMPTIONS, ["by_attribute", "clean", "p", "top_var"]),
        ]
    ):
        folder = tmp_path / str(k)
        folder.mkdir()
        compiled(backend, folder, text)
        full = [f"Candidate.{n}" for n in names]
        shared = kd.dump_targets(backend, folder, full)
        assert shared == kd.dump_targets(backend, folder, full, exact=True)
    axioms = {a.name for a in shared.targets["Candidate.p"].assumptions or []}
    assert axioms == {"Candidate.p"}
    both = kd.dump_targets(backend, tmp_path / "0", ["Candidate.both"])
    names = {a.name for a in both.targets["Candidate.both"].assumptions or []}
    assert names == {
        std(backend, "Coq.Logic.Classical_Prop.classic"),
        std(backend, "Coq.Logic.FunctionalExtensionality.functional_extensionality_dep"),
    }


def test_a_deep_numeral_in_a_statement_is_read(backend: CoqBackend, tmp_path: Path) -> None:
    """`5000` is a chain of 5000 `S`: 10000 JSON levels, deeper than Python's default
    recursion limit that json's parser obeys; the reader parses it anyway."""
    text = "Definition n : nat := 5000.\nLemma big : n = 5000. Proof. reflexivity. Qed.\n"
    dump = targets(backend, compiled(backend, tmp_path, text), ["big"])
    assert dump.targets["Candidate.big"].found
    depth, term = 0, dump.closure.constants["Candidate.n"].body
    while isinstance(term, list) and term[0] == "App":
        depth, term = depth + 1, term[2][0]
    assert depth == 5000 and term == ["Construct", std(backend, "Coq.Init.Datatypes.nat"), 0, 1, []]


def test_a_session_with_frozen_preloads_answers_as_coqs_own_walk(
    backend: CoqBackend, tmp_path: Path
) -> None:
    """In a session, the libraries preloaded below the mark are frozen (their walk is
    remembered across checks): its dump equals the one-shot dump by Coq's own
    Assumptions.assumptions, for two checks in a row."""
    from formalbench.backends.coq_session import CoqSession, preload_sentences

    text = CLASSICAL  # on Rocq 9, its `Coq.` names warn: the session reads those too
    folder = compiled(backend, tmp_path, text)
    names = ["Candidate.em", "Candidate.fe", "Candidate.both"]
    exact = kd.dump_targets(backend, folder, names, exact=True)
    session = CoqSession(backend, coqtop(backend))
    try:
        session.start()
        session.prepare(preload_sentences(text, ["Candidate"]), time.monotonic() + 120)
        assert session.preloaded  # the Classical libraries are frozen below the mark
        for _ in range(2):
            warm = kd.session_dump_targets(
                session, [folder / "Candidate.vo"], names, time.monotonic() + 120
            )
            assert warm == exact
    finally:
        session.close()


EXTERNAL_CONSTRAINT = """
Universe u.
Definition T := Type@{u}.
Constraint u < Coq.Init.Datatypes.list.u0.
Lemma uses_T : T = T. Proof. reflexivity. Qed.
"""


def test_a_constraint_reaching_out_of_the_library_is_dumped(
    backend: CoqBackend, tmp_path: Path
) -> None:
    """`Constraint u < list.u0` does not change the pairs among the library's own levels;
    it shows in `universes.external` (a statement may hold only under it)."""
    with_it = targets(backend, compiled(backend, tmp_path, EXTERNAL_CONSTRAINT), ["uses_T"])
    plain = tmp_path / "plain"
    plain.mkdir()
    without = targets(
        backend,
        compiled(
            backend, plain, EXTERNAL_CONSTRAINT.replace("Constraint", "(*").replace("u0.", "u0. *)")
        ),
        ["uses_T"],
    )
    body = with_it.closure.constants["Candidate.T"].body
    u = body[1][1][0][0]  # type: ignore[index]  # T := Type@{u}
    external = with_it.universes.external
    added = set(external.levels) - set(without.universes.external.levels)
    assert len(added) == 1 and next(iter(added)).startswith(std(backend, "Coq.Init.Datatypes."))
    assert [u, *added] in external.lt and [u, *added] not in without.universes.external.le
    assert with_it.universes.le == without.universes.le
    assert with_it.universes.levels == without.universes.levels


# --- Rocq 9.2: its own forms, and the same dump as 8.16 where the two agree -------------
ROCQ9_FORMS = """
From Corelib Require Import PrimString.
Definition s : string := "a""b\\n"%pstring.
Set Universe Polymorphism.
Definition sid@{s;u|} (A : Type@{s;u}) (a : A) : A := a.
Unset Universe Polymorphism.
Definition use_sid := sid@{Prop;Set} True I.
Symbol pplus : nat -> nat -> nat.
Rewrite Rule pplus_rules := | pplus ?n 0 => ?n.
Definition uses_sym := pplus 1 0.
Lemma about : s = s /\\ use_sid = I /\\ uses_sym = pplus 1 0.
Proof. split; [reflexivity | split; reflexivity]. Qed.
"""


@pytest.fixture(scope="module")
def rocq_backend() -> CoqBackend:
    chosen = CoqBackend(toolchain=ROCQ)
    if plugin.plugin_folder(chosen.toolchain) is None:
        pytest.skip(f"the Coq plugin cannot be built for {ROCQ}")
    return chosen


@pytest.mark.rocq
def test_rocq9_strings_sort_polymorphism_and_rewrite_rules(
    rocq_backend: CoqBackend, tmp_path: Path
) -> None:
    """A primitive string by its exact bytes, a sort-polymorphic constant (QSort sort,
    sort-variable relevance, a `q:` quality in the instance that uses it), and a rewrite-rule
    symbol: kind `symbol`, a postulate, an axiom of the target, and `unsafe` with its rule
    block."""
    (tmp_path / "Candidate.v").write_text(ROCQ9_FORMS, encoding="utf-8")
    done = compile_on(rocq_backend, tmp_path, "Candidate", ("-allow-rewrite-rules",))
    assert done.returncode == 0, done.stderr[-2000:]
    dump = targets(rocq_backend, tmp_path, ["about"])
    consts = dump.closure.constants
    assert consts["Candidate.s"].body == ["String", b'a"b\\n'.hex()]
    sid = consts["Candidate.sid"]
    assert sid.univs.qualities == 1 and sid.univs.size == 1
    assert sid.type[2][0] == "Sort" and sid.type[2][1][0] == "QSort"  # type: ignore[index]
    assert sid.type[3][1] == "q:QVar(0)"  # type: ignore[index]  # a relevance by sort variable
    assert ["Const", "Candidate.sid", ["q:Prop", "Set"]] in _walk(consts["Candidate.use_sid"].body)
    assert consts["Candidate.pplus"].kind == "symbol" and consts["Candidate.pplus"].body is None
    assert "Candidate.pplus" in dump.postulates
    axioms = {
        a.name for a in dump.targets["Candidate.about"].assumptions or [] if a.kind == "axiom"
    }
    assert "Candidate.pplus" in axioms
    unsafe = {(u.name, u.object) for u in dump.unsafe if u.what == "rewrite_rules"}
    assert unsafe == {("Candidate.pplus", "constant"), ("Candidate.pplus_rules", "rules")}
    library = kd.dump_library(rocq_backend, tmp_path)
    assert [o.kind for o in library.objects if o.name == "Candidate.pplus"] == ["symbol"]
    assert {(u.name, u.object) for u in library.unsafe} == unsafe


SAME_ON_BOTH = """
Inductive color := Red | Green | Blue.
Record point := mk { px : nat; py : color }.
Set Primitive Projections.
Record ppoint := pmk { qx : nat; qy : nat }.
Unset Primitive Projections.
Fixpoint count (n : nat) : nat := match n with 0 => 0 | S k => S (count k) end.
Definition uses (p : point) (q : ppoint) : nat := let k := px p in count k + qx q.
Definition pick (c : color) : nat := match c with Red => 1 | _ => 2 end.
Axiom ax : forall n : nat, count n = n.
Module Type T. Parameter v : nat. End T.
Module M : T. Definition v := 3. End M.
Module F (X : T). Definition w := X.v + 1. End F.
Module N := F M.
Lemma about : forall p q, uses p q = uses p q /\\ N.w = N.w /\\ count 2 = 2 /\\ pick Red = 1.
Proof. intros; split; [reflexivity | split; [reflexivity | split; [apply ax | reflexivity]]]. Qed.
Section S. Variable a : nat. Lemma sec : a = a. Proof. reflexivity. Qed. End S.
Universe u.
Definition T0 := Type@{u}.
Lemma pure : T0 = T0. Proof. reflexivity. Qed.
"""


def _as_coq8(data: Any) -> str:
    """A dump in one canonical text: standard-library roots as Coq 8 names them, the
    library's own universe levels renamed first seen first (as the comparator does), the
    Coq version left out, and the two things the versions write differently for the same
    source blanked: the `unfolded` flag of a Proj (8.16 marks the projection in a primitive
    record's compatibility constant unfolded, 9.2 does not: a reduction hint, not a
    meaning) and `universes.external` (8.16's template-polymorphic `eq` ties a library
    level used under it to a global `Coq.Init.Logic.N`; 9.2 makes no such global level)."""
    data = dict(data)
    data.pop("coq")
    data["universes"] = {**data["universes"], "external": None}
    data = json.loads(json.dumps(data))  # a copy to blank in place
    stack: list[Any] = [data]
    while stack:
        t = stack.pop()
        if isinstance(t, dict):
            stack.extend(t.values())
        elif isinstance(t, list):
            if len(t) == 4 and t[0] == "Proj" and isinstance(t[2], bool):
                t[2] = None
            stack.extend(t)
    text = json.dumps(data, sort_keys=True)
    text = text.replace('"Corelib.', '"Coq.').replace('"Stdlib.', '"Coq.')
    seen: dict[str, str] = {}

    def rename(match: re.Match[str]) -> str:
        return seen.setdefault(match.group(0), f'"L{len(seen)}"')

    return re.sub(r'"Candidate\.\d+"', rename, text)


@pytest.mark.rocq
def test_the_same_source_dumps_the_same_on_8_16_and_9_2(
    rocq_backend: CoqBackend, tmp_path: Path
) -> None:
    """Inductives, records (primitive projections too), fixpoints, matches, let-ins, an
    axiom, a sealed module and a functor application, a section, a named universe: the
    same dump on both versions once names are mapped (Coq. for Corelib./Stdlib.) and the
    library's levels renamed."""
    host = CoqBackend(toolchain="host")
    if plugin.plugin_folder(host.toolchain) is None:
        pytest.skip("the Coq plugin cannot be built on the host")
    names = ["about", "sec", "pure", "M.v", "N.w"]
    dumps = []
    for chosen in (host, rocq_backend):
        folder = tmp_path / chosen.toolchain.name
        folder.mkdir()
        dumps.append(targets(chosen, compiled(chosen, folder, SAME_ON_BOTH), names))
    old, new = (_as_coq8(d.model_dump()) for d in dumps)
    assert dumps[0].coq.startswith("8.16") and dumps[1].coq.startswith("9.2")
    assert json.loads(old) == json.loads(new)
    assert dumps[1].closure.inductives and dumps[1].postulates
    assert not dumps[1].universes.external.levels  # the one universe difference, as said
    assert all(n.startswith("Coq.Init.Logic.") for n in dumps[0].universes.external.levels)
