"""The memoizing assumptions plugin answers exactly as `Print Assumptions` (real coqtop).

Every kind of assumption Coq reports is exercised, in a library that is *not* frozen (as a
candidate is) on top of libraries that are (as a session's preloads are), each query asked
twice so that the second answer comes from what the first remembered: axioms, an admitted
lemma, an empty match on an axiom (reported with what it proves), a constant of a module
sealed by its signature (found in the implementation), a declared module, a functor
instance, a fixpoint with guard checking off, an inductive with positivity checking off, a
definition with universe checking off, an `SProp` equality under definitional UIP, admitted
`Program` obligations, a section variable, and a library axiom (`classic`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from formalbench.backends import coq_assumptions_plugin as plugin
from formalbench.toolchains import provision

coq = pytest.mark.skipif(shutil.which("coqtop") is None, reason="coqtop is not installed")

LIBRARY = """
Require Import Coq.Logic.Classical_Prop.
Axiom cheat : False.
Definition from_cheat : 1 = 2 := match cheat return 1 = 2 with end.
Definition from_cheat2 : 2 = 3 := match cheat return 2 = 3 with end.
Definition from_both : 1 = 2 /\\ 2 = 3 := conj from_cheat from_cheat2.
Lemma adm : 2 = 3. Admitted.
Lemma from_adm : 3 = 2. Proof. symmetry. apply adm. Qed.
Module Type T. Parameter x : nat. Axiom hx : x = 0. End T.
Module M : T. Definition x := 0. Lemma hx : x = 0. Proof. reflexivity. Qed. End M.
Lemma from_sealed : M.x = 0. Proof. exact M.hx. Qed.
Declare Module D : T.
Lemma from_declared : D.x = 0. Proof. exact D.hx. Qed.
Module F (X : T). Lemma fx : X.x = 0. Proof. exact X.hx. Qed. End F.
Module FM := F M.
Lemma from_functor : M.x = 0. Proof. exact FM.fx. Qed.
Unset Guard Checking.
Fixpoint loop (n : nat) : False := loop n.
Set Guard Checking.
Lemma from_loop : False. Proof. exact (loop 0). Qed.
Unset Positivity Checking.
Inductive bad : Type := mk : (bad -> False) -> bad.
Set Positivity Checking.
Definition from_bad (b : bad) : bad := b.
Unset Universe Checking.
Definition big : Type := Type.
Set Universe Checking.
Definition from_big : Type := big.
Unset Universe Checking.
Inductive hbox : Type := hwrap : Type -> hbox | hnone.
Set Universe Checking.
Definition from_hbox := hnone.
Set Definitional UIP.
Inductive seq {A : Type} (a : A) : A -> SProp := srefl : seq a a.
Definition from_seq (n : nat) (e : seq n n) : seq n n := e.
Require Import Coq.Program.Tactics.
Program Definition pos : {n : nat | n > 0} := 0.
Admit Obligations.
Lemma from_classic (P : Prop) : P \\/ ~ P. Proof. apply classic. Qed.
Lemma from_many : 1 = 2 /\\ 3 = 2. Proof. split; [apply from_cheat | apply from_adm]. Qed.
Lemma clean : 0 + 0 = 0. Proof. reflexivity. Qed.
"""
SUBJECTS = [
    "cheat", "from_cheat", "from_both", "from_adm", "from_sealed", "M.hx", "from_declared",
    "from_functor", "FM.fx", "from_loop", "from_bad", "from_big", "from_hbox", "from_seq", "pos",
    "from_classic", "from_many", "clean", "Coq.Logic.Classical_Prop.NNPP",
]  # fmt: skip


@pytest.fixture(scope="module")
def plugin_dir() -> Path:
    found = plugin.plugin_folder("coqtop")
    if found is None:
        if os.environ.get("FORMALBENCH_REQUIRE_PLUGIN"):
            pytest.fail("the assumptions plugin cannot be built here (see the log)")
        pytest.skip("the assumptions plugin cannot be built here (no OCaml toolchain)")
    return found


def _answers(stdout: str) -> dict[str, str]:
    out: dict[str, list[str]] = {}
    label = None
    for line in stdout.splitlines():
        line = re.sub(r"^(\w+ < )+", "", line)
        marker = re.match(r"No object of basename fbt_(\w+)", line)
        if marker:
            label = marker[1]
            out[label] = []
        elif label is not None and line.strip() and not line.startswith("Fetching"):
            out[label].append(line.rstrip())
    return {k: "\n".join(v) for k, v in out.items()}


def _script(root: str) -> str:
    """The queries: each subject asked of Print Assumptions and of the plugin, twice;
    `root` is the standard library's (`Coq` on 8.16, `Stdlib` on Rocq 9)."""
    script = f"Require {root}.Logic.Classical_Prop {root}.Program.Tactics.\n{plugin.FREEZE}\n"
    script += "Require Lib.\n"
    for round_ in (1, 2):
        for k, name in enumerate(SUBJECTS):
            full = root + name[3:] if name.startswith("Coq.") else f"Lib.{name}"
            script += f"Locate fbt_coq{round_}_{k}.\nPrint Assumptions {full}.\n"
            script += f"Locate fbt_ours{round_}_{k}.\n{plugin.QUERY_VERB} {full}.\n"
    # a section variable: the one kind a library cannot hold
    script += "Locate fbt_section.\nSection S. Variable v : nat. Definition dv := v + 0.\n"
    script += "Locate fbt_coqsec.\nPrint Assumptions dv.\nLocate fbt_ourssec.\n"
    script += f"{plugin.QUERY_VERB} dv.\nEnd S.\nLocate fbt_end.\n"
    return script


@coq
def test_the_plugin_answers_exactly_as_print_assumptions(plugin_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "Lib.v").write_text(LIBRARY, encoding="utf-8")
    subprocess.run(["coqc", "-q", "-R", ".", "", "Lib.v"], cwd=tmp_path, check=True)
    done = subprocess.run(
        ["coqtop", "-q", "-R", ".", "", *plugin.coqtop_args(plugin_dir)],
        input=_script("Coq"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    _same_answers(done.stdout)


@pytest.mark.parametrize(
    ("name", "root"),
    [
        pytest.param("rocq-9.2", "Stdlib", marks=pytest.mark.rocq),
        pytest.param(
            "coq-8.20",
            "Coq",
            marks=pytest.mark.skipif(
                provision.record_of("coq-8.20") is None, reason="coq-8.20 is not installed"
            ),
        ),
    ],
)
def test_the_plugin_answers_exactly_as_print_assumptions_on_a_toolchain(
    name: str, root: str, tmp_path: Path
) -> None:
    """The same, on a provisioned toolchain (Rocq 9.2's own Print Assumptions walks axioms'
    types too, 8.20's does not: the plugin's walk for each follows it)."""
    from formalbench.toolchains.toolchain import resolve

    chain = resolve(name)
    where = plugin.plugin_folder(chain)
    assert where is not None, f"the plugin does not build for {name} (see the log)"
    (tmp_path / "Lib.v").write_text(LIBRARY, encoding="utf-8")
    argv = [chain.program("coqc"), "-q", "-R", ".", "", "Lib.v"]
    done = chain.run(argv, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    argv = [chain.program("coqtop"), *plugin.coqtop_args(where), "-q", "-R", ".", ""]
    done = chain.run(argv, cwd=tmp_path, timeout=300, input=_script(root), read_only=[str(where)])
    _same_answers(done.stdout)


def _same_answers(stdout: str) -> None:
    got = _answers(stdout)
    for round_ in (1, 2):
        for k, name in enumerate(SUBJECTS):
            coqs = got[f"coq{round_}_{k}"]
            assert coqs.startswith(("Axioms:", "Closed under")), (name, coqs)
            assert got[f"ours{round_}_{k}"] == coqs, name
    assert got["ourssec"] == got["coqsec"] and "Section Variables:" in got["coqsec"]
    # the answers are the ones each case is here for
    said = {name: got[f"coq1_{k}"] for k, name in enumerate(SUBJECTS)}
    assert "Lib.cheat" in said["from_cheat"] and "used in" in said["from_cheat"]
    assert "Lib.adm" in said["from_adm"] and "Lib.adm" in said["from_many"]
    assert said["from_sealed"].startswith("Closed") and said["M.hx"].startswith("Closed")
    assert "Lib.D.hx" in said["from_declared"]
    assert said["from_functor"].startswith("Closed")
    assert "Lib.loop is assumed to be guarded" in said["from_loop"]
    assert "Lib.bad is assumed to be positive" in said["from_bad"]
    assert "unsafe hierarchy" in said["from_big"]
    assert said["from_both"].count("used in") == 2
    assert "Lib.hwrap relies on an unsafe hierarchy" in said["from_hbox"]  # the whole block
    assert "seq" in said["from_seq"] and said["from_seq"] != "Closed under the global context"
    assert "pos_obligation_1" in said["pos"]
    assert "classic" in said["from_classic"] and said["clean"].startswith("Closed")
