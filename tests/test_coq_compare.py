"""The comparator over two kernel dumps (checking/coq_compare.py), on hand-written dumps in the
contract's format (docs/kdump-format.md): what it accepts and what it refuses, by reason.
End-to-end cases with real coqc are in test_coq_kernel_route.py."""

from __future__ import annotations

import copy
from typing import Any

from formalbench.checking.coq_compare import compare, strengthened_match
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Reason

NAT = ["Ind", "Coq.Init.Datatypes.nat", 0, []]
EQ = ["Ind", "Coq.Init.Logic.eq", 0, ["Coq.Init.Logic.1"]]
FLAGS = {
    "check_guarded": True,
    "check_positive": True,
    "check_universes": True,
    "allow_uip": False,
    "impredicative_set": False,
    "indices_matter": False,
    "sprop_allowed": True,
    "cumulative_sprop": False,
}
MONO = {"polymorphic": False, "size": None, "constraints": None}
EXTERNAL = {"levels": [], "le": [], "lt": []}


def eq(a: Any, b: Any, ty: Any = NAT) -> list[Any]:
    return ["App", EQ, [ty, a, b]]


def const(name: str, *levels: str) -> list[Any]:
    return ["Const", f"Candidate.{name}", list(levels)]


def target(ty: Any, kind: str = "undef", assumptions: list[Any] | None = None) -> dict[str, Any]:
    return {
        "found": True,
        "user": "",
        "canonical": "",
        "kind": kind,
        "type": ty,
        "univs": MONO,
        "assumptions": assumptions or [],
        "section_vars": None,
    }


def dump(targets: dict[str, Any], **more: Any) -> dict[str, Any]:
    """A dump in the plugin's format (validated by its reader's strict model in
    `test_hand_written_dumps_follow_the_plugins_format`)."""
    d: dict[str, Any] = {
        "format": 1,
        "dump": "targets",
        "coq": "8.16.1",
        "library": "Candidate",
        "flags": FLAGS,
        "targets": {f"Candidate.{k}": v for k, v in targets.items()},
        "closure": {"constants": {}, "inductives": {}},
        "postulates": {},
        "unsafe": [],
        "universes": {"levels": [], "le": [], "lt": [], "external": EXTERNAL},
        "undumpable": [],
    }
    d.update(more)
    return d


def proved(task: dict[str, Any], kind: str = "opaque") -> dict[str, Any]:
    """The candidate that proves every target of `task`, nothing else changed."""
    out = copy.deepcopy(task)
    for t in out["targets"].values():
        t["kind"] = kind
    for name in list(out["targets"]):
        out["postulates"].pop(name, None)
    return out


def reasons(task: dict[str, Any], cand: dict[str, Any], targets: list[str], **kw: Any) -> list[str]:
    found = compare(task, cand, targets, VerifierPolicy(), **kw).findings
    return [f.reason.value for f in found]


TWO = ["Prod", "R", NAT, eq(["Rel", 1], ["Rel", 1])]


def test_proved_targets_with_the_tasks_types_pass() -> None:
    task = dump(
        {
            "t": target(TWO),
            "u": target(
                eq(
                    ["Construct", "Coq.Init.Datatypes.nat", 0, 1, []],
                    ["Construct", "Coq.Init.Datatypes.nat", 0, 1, []],
                )
            ),
        }
    )
    assert reasons(task, proved(task), ["t", "u"]) == []


def test_an_unproved_or_missing_or_changed_target_is_refused() -> None:
    task = dump({"t": target(TWO)})
    admitted = copy.deepcopy(task)  # an admitted target is its own axiom
    admitted["targets"]["Candidate.t"]["assumptions"] = [
        {"kind": "axiom", "name": "Candidate.t", "type": TWO}
    ]
    assert reasons(task, admitted, ["t"]) == [
        Reason.forbidden_construct.value,
        Reason.disallowed_axiom.value,
    ]
    # `undef` whose walk does not meet itself: a sealed module's field, proved inside
    assert reasons(task, task, ["t"]) == []
    gone = proved(task)
    gone["targets"]["Candidate.t"] = {"found": False, "why": "not a constant"}
    assert reasons(task, gone, ["t"]) == [Reason.missing_target.value]
    changed = proved(task)
    changed["targets"]["Candidate.t"]["type"] = ["Prod", "R", NAT, eq(["Rel", 1], ["Rel", 1], NAT)]
    changed["targets"]["Candidate.t"]["type"][2] = ["Ind", "Coq.Init.Datatypes.bool", 0, []]
    assert reasons(task, changed, ["t"]) == [Reason.statement_changed.value]


def test_a_target_of_a_functor_is_undecided_and_named() -> None:
    task = dump({"F.t": {"found": False, "why": "a field of the functor F"}})
    found = compare(task, task, ["F.t"], VerifierPolicy()).findings
    assert [f.reason for f in found] == [Reason.undecided]
    assert "functor" in found[0].message and found[0].subject == "F.t"


def _with_definition(body: Any) -> dict[str, Any]:
    """A task whose target speaks of a definition `d` of the library."""
    d = {"kind": "def", "type": NAT, "body": body, "univs": MONO, "flags": FLAGS}
    return dump({"t": target(eq(const("d"), body))},
                closure={"constants": {"Candidate.d": d}, "inductives": {}})  # fmt: skip


def test_a_changed_definition_in_the_closure_is_refused() -> None:
    zero = ["Construct", "Coq.Init.Datatypes.nat", 0, 1, []]
    task = _with_definition(zero)
    cand = proved(task)
    assert reasons(task, cand, ["t"]) == []
    cand["closure"]["constants"]["Candidate.d"]["body"] = ["App", ["Construct", "Coq.Init.Datatypes.nat", 0, 2, []], [zero]]  # fmt: skip
    found = compare(task, cand, ["t"], VerifierPolicy()).findings
    assert [f.reason for f in found] == [Reason.statement_changed] and found[0].subject == "d"
    opaque = proved(task)
    opaque["closure"]["constants"]["Candidate.d"]["kind"] = "opaque"
    assert reasons(task, opaque, ["t"]) == [Reason.statement_changed.value]
    missing = proved(task)
    del missing["closure"]["constants"]["Candidate.d"]
    assert reasons(task, missing, ["t"]) == [Reason.statement_changed.value]


def _inductive(consnames: list[str], lc: list[Any]) -> dict[str, Any]:
    return {
        "finite": "Finite", "ntypes": 1, "nparams": 0, "nparams_rec": 0, "params": [],
        "record": None, "univs": MONO, "template": None, "variance": None, "private": None,
        "flags": FLAGS,
        "packets": [{"name": "color", "arity_ctxt": [], "user_arity": ["Sort", "Set"],
                     "sort": "Set", "consnames": consnames, "user_lc": lc, "nrealargs": 0,
                     "nrealdecls": 0, "kelim": "Type", "relevance": "Relevant"}],
    }  # fmt: skip


def test_an_inductive_is_compared_field_by_field() -> None:
    color = ["Ind", "Candidate.color", 0, []]
    mind = _inductive(["red", "green"], [color, color])
    task = dump({"t": target(["Prod", "R", color, eq(["Rel", 1], ["Rel", 1], color)])},
                closure={"constants": {}, "inductives": {"Candidate.color": mind}})  # fmt: skip
    assert reasons(task, proved(task), ["t"]) == []
    for change in (
        lambda m: m["packets"][0].update(consnames=["green", "red"]),
        lambda m: m["packets"][0]["user_lc"].append(color),
        lambda m: m.update(finite="CoFinite"),
        lambda m: m.update(record={"projections": [], "types": [], "relevances": []}),
    ):
        cand = proved(task)
        change(cand["closure"]["inductives"]["Candidate.color"])
        assert reasons(task, cand, ["t"]) == [Reason.statement_changed.value]


def test_postulates_are_pinned_and_allowed_only_as_the_task_states_them() -> None:
    p_type = ["Sort", "Prop"]
    p = {"type": p_type, "univs": MONO}
    axiom = [{"kind": "axiom", "name": "Candidate.p", "type": p_type}]
    task = dump({"t": target(const("p"))}, postulates={"Candidate.p": p})
    task["postulates"]["Candidate.t"] = {"type": const("p"), "univs": MONO}
    cand = proved(task)
    cand["targets"]["Candidate.t"]["assumptions"] = axiom
    cand["targets"]["Candidate.p"] = target(p_type)
    assert reasons(task, cand, ["t"]) == []
    changed = copy.deepcopy(cand)
    changed["targets"]["Candidate.p"]["type"] = ["Sort", "Set"]
    assert reasons(task, changed, ["t"]) == [Reason.statement_changed.value]
    gone = copy.deepcopy(cand)
    gone["targets"]["Candidate.p"] = {"found": False, "why": "no such constant"}
    del gone["postulates"]["Candidate.p"]
    assert reasons(task, gone, ["t"]) == [Reason.statement_changed.value]
    # an axiom the task does not postulate, of the library itself: refused, named
    own = copy.deepcopy(cand)
    own["targets"]["Candidate.t"]["assumptions"] = [{"kind": "axiom", "name": "Candidate.cheat"}]
    found = compare(task, own, ["t"], VerifierPolicy()).findings
    assert [(f.reason, f.subject) for f in found] == [(Reason.disallowed_axiom, "Candidate.cheat")]
    # a target is never an allowed postulate of another target
    other = copy.deepcopy(cand)
    other["targets"]["Candidate.t"]["assumptions"] = [{"kind": "axiom", "name": "Candidate.t"}]
    assert reasons(task, other, ["t"]) == [Reason.disallowed_axiom.value]


def test_library_axioms_pass_only_on_the_allow_list_and_bypasses_are_refused() -> None:
    task = dump({"t": target(TWO)})
    cand = proved(task)
    name = "Coq.Logic.Classical_Prop.classic"
    cand["targets"]["Candidate.t"]["assumptions"] = [{"kind": "axiom", "name": name}]
    found = compare(task, cand, ["t"], VerifierPolicy()).findings
    assert [(f.reason, f.subject) for f in found] == [(Reason.disallowed_axiom, name)]
    assert compare(task, cand, ["t"], VerifierPolicy(), allowed={name}).findings == []
    listed = VerifierPolicy(allowed_axioms=[name])
    assert compare(task, cand, ["t"], listed).findings == []
    # a look-alike in another library is not the listed name
    cand["targets"]["Candidate.t"]["assumptions"] = [{"kind": "axiom", "name": "My." + name}]
    assert reasons(task, cand, ["t"], allowed={name}) == [Reason.disallowed_axiom.value]
    # an assumption entry outside the format is undecided, never skipped
    cand["targets"]["Candidate.t"]["assumptions"] = [{"kind": "sorry", "name": name}]
    assert reasons(task, cand, ["t"], allowed={name}) == [Reason.undecided.value]
    for kind in ("guarded", "positive", "type_in_type", "uip", "variable"):
        cand["targets"]["Candidate.t"]["assumptions"] = [{"kind": kind, "name": "Candidate.f"}]
        assert reasons(task, cand, ["t"], allowed={"Candidate.f"}) == [
            Reason.disallowed_axiom.value
        ]


def test_an_unsafe_object_of_the_candidate_is_refused() -> None:
    task = dump({"t": target(TWO)})
    cand = proved(task)
    cand["unsafe"] = [{"name": "Candidate.loop", "what": "guard", "object": "constant"}]
    found = compare(task, cand, ["t"], VerifierPolicy()).findings
    assert [(f.reason, f.subject) for f in found] == [
        (Reason.forbidden_construct, "Candidate.loop")
    ]


def _sorted_type(level: str) -> list[Any]:
    return ["Prod", "R", ["Sort", ["Type", [[level, 0]]]], eq(["Rel", 1], ["Rel", 1], ["Sort", ["Type", [[level, 0]]]])]  # fmt: skip


def test_library_levels_are_equal_up_to_a_bijection() -> None:
    task = dump(
        {"t": target(_sorted_type("Candidate.3")), "u": target(_sorted_type("Candidate.3"))}
    )
    cand = proved(task)
    for t in cand["targets"].values():
        t["type"] = _sorted_type("Candidate.7")
    assert reasons(task, cand, ["t", "u"]) == []
    # two levels of the task made one by the candidate: no bijection does it
    task2 = copy.deepcopy(task)
    task2["targets"]["Candidate.u"]["type"] = _sorted_type("Candidate.4")
    cand2 = proved(task2)
    for t in cand2["targets"].values():
        t["type"] = _sorted_type("Candidate.7")
    assert reasons(task2, cand2, ["t", "u"]) == [Reason.statement_changed.value]
    # a library-local level is never another library's
    cand3 = proved(task)
    cand3["targets"]["Candidate.t"]["type"] = _sorted_type("Coq.Init.Logic.1")
    assert reasons(task, cand3, ["t", "u"]) == [Reason.statement_changed.value]


def test_a_candidate_whose_constraints_are_stronger_is_refused() -> None:
    both = {"t": target(_sorted_type("Candidate.1")), "u": target(_sorted_type("Candidate.2"))}
    levels = {"levels": ["Candidate.1", "Candidate.2"], "le": [["Set", "Candidate.1"], ["Set", "Candidate.2"]], "lt": []}  # fmt: skip
    task = dump(both, universes=levels)
    cand = proved(task)
    cand["universes"] = copy.deepcopy(levels)
    assert reasons(task, cand, ["t", "u"]) == []
    cand["universes"]["le"].append(["Candidate.1", "Candidate.2"])
    found = compare(task, cand, ["t", "u"], VerifierPolicy()).findings
    assert [f.reason for f in found] == [Reason.statement_changed]
    assert "Candidate.1 <= Candidate.2" in found[0].message
    # renamed levels: the constraint is read through the bijection
    renamed = proved(task)
    for name, level in (("t", "Candidate.9"), ("u", "Candidate.8")):
        renamed["targets"][f"Candidate.{name}"]["type"] = _sorted_type(level)
    renamed["universes"] = {"levels": ["Candidate.8", "Candidate.9"], "le": [["Candidate.8", "Candidate.9"]], "lt": []}  # fmt: skip
    found = compare(task, renamed, ["t", "u"], VerifierPolicy()).findings
    assert "Candidate.2 <= Candidate.1" in found[0].message
    # fewer constraints than the task: no stronger, accepted
    fewer = proved(task)
    task_more = copy.deepcopy(task)
    task_more["universes"]["lt"] = [["Candidate.1", "Candidate.2"]]
    assert reasons(task_more, fewer, ["t", "u"]) == []


def _own_level_task() -> dict[str, Any]:
    """`t : forall A : Type@{1}, A = A`, level 1 its own (in no other object), beside a
    definition `K := Type@{5}` of the closure (stdpp's `dom_alt` and its class field)."""
    k = {"kind": "def", "type": ["Sort", ["Type", [["Candidate.5", 1]]]],
         "body": ["Sort", ["Type", [["Candidate.5", 0]]]], "univs": MONO, "flags": FLAGS}  # fmt: skip
    levels = {"levels": ["Candidate.1", "Candidate.5"], "le": [["Set", "Candidate.1"], ["Set", "Candidate.5"]], "lt": []}  # fmt: skip
    return dump({"t": target(_sorted_type("Candidate.1"))}, universes=levels,
                closure={"constants": {"Candidate.K": k}, "inductives": {}})  # fmt: skip


def test_a_proof_may_bound_its_statements_own_level_by_a_level_of_the_closure() -> None:
    task = _own_level_task()
    bounded = proved(task)
    bounded["universes"]["le"].append(["Candidate.1", "Candidate.5"])
    assert reasons(task, bounded, ["t"]) == []
    strict = proved(task)
    strict["universes"]["lt"].append(["Candidate.5", "Candidate.1"])
    assert reasons(task, strict, ["t"]) == []
    # never by `Set` (the statement would speak of small types only)
    to_set = proved(task)
    to_set["universes"]["le"].append(["Candidate.1", "Set"])
    assert reasons(task, to_set, ["t"]) == [Reason.statement_changed.value]
    # nor where the task's own graph says the opposite (a candidate that dropped the later
    # declaration forcing `5 < 1`): a cycle through a strict constraint
    task_later = copy.deepcopy(task)
    task_later["universes"]["lt"].append(["Candidate.5", "Candidate.1"])
    task_later["universes"]["le"].append(["Candidate.5", "Candidate.1"])
    found = compare(task_later, bounded, ["t"], VerifierPolicy()).findings
    assert [f.reason for f in found] == [Reason.statement_changed]
    assert "contradict" in found[0].message
    # a level of the closure on both sides is never the statement's own: refused as before
    both_closure = proved(task)
    both_closure["closure"]["constants"]["Candidate.K"]["body"] = ["Sort", ["Type", [["Candidate.1", 0]]]]  # fmt: skip
    task_k = copy.deepcopy(both_closure)
    for t in task_k["targets"].values():
        t["kind"] = "undef"
    both_closure["universes"]["le"].append(["Candidate.1", "Candidate.5"])
    assert reasons(task_k, both_closure, ["t"]) == [Reason.statement_changed.value]


SECTION = [  # forall (A : Type) (n : nat) (H : n = 0) (x : A), x = x
    "Prod", "R", ["Sort", ["Type", [["Candidate.1", 0]]]],
    ["Prod", "R", NAT, ["Prod", "R", eq(["Rel", 1], ["Construct", "Coq.Init.Datatypes.nat", 0, 1, []]),
                        ["Prod", "R", ["Rel", 3], eq(["Rel", 1], ["Rel", 1], ["Rel", 4])]]],
]  # fmt: skip
ONLY_A = ["Prod", "R", ["Sort", ["Type", [["Candidate.1", 0]]]],
          ["Prod", "R", ["Rel", 1], eq(["Rel", 1], ["Rel", 1], ["Rel", 2])]]  # fmt: skip


def test_a_section_target_may_drop_unused_section_variables_only() -> None:
    task = dump({"t": target(SECTION)})
    cand = proved(task)
    cand["targets"]["Candidate.t"]["type"] = ONLY_A
    assert reasons(task, cand, ["t"], in_section=frozenset({"t"})) == []
    # outside a section nothing is dropped
    assert reasons(task, cand, ["t"]) == [Reason.statement_changed.value]
    # the variable the statement uses cannot go
    no_a = proved(task)
    no_a["targets"]["Candidate.t"]["type"] = ["Prod", "R", NAT, eq(["Rel", 1], ["Rel", 1])]
    assert reasons(task, no_a, ["t"], in_section=frozenset({"t"})) == [
        Reason.statement_changed.value
    ]


def test_strengthening_backtracks_over_equal_binders() -> None:
    ty = ["Sort", ["Type", [["Candidate.1", 0]]]]
    # forall (A B : Type) (x : B), x = x   vs   forall (B : Type) (x : B), x = x
    task = ["Prod", "R", ty, ["Prod", "R", ty, ["Prod", "R", ["Rel", 1], eq(["Rel", 1], ["Rel", 1], ["Rel", 2])]]]  # fmt: skip
    cand = ["Prod", "R", ty, ["Prod", "R", ["Rel", 1], eq(["Rel", 1], ["Rel", 1], ["Rel", 2])]]
    kept = strengthened_match(task, cand, 3, lambda a, b: a == b)
    assert kept == (False, True, True)
    # a binder used by what follows is never dropped
    used = ["Prod", "R", ty, ["Prod", "R", ["Rel", 2], eq(["Rel", 1], ["Rel", 1], ["Rel", 3])]]
    assert strengthened_match(used, ["Prod", "R", ty, eq(["Rel", 1], ["Rel", 1], ty)], 2,
                              lambda a, b: a == b) is None  # fmt: skip


def test_a_value_hole_is_compared_by_its_type_and_must_be_defined() -> None:
    answer = {"kind": "undef", "type": NAT, "body": None, "univs": MONO, "flags": FLAGS}
    task = dump({"answer": target(NAT), "ok": target(eq(const("answer"), const("answer")))},
                closure={"constants": {"Candidate.answer": answer}, "inductives": {}})  # fmt: skip
    cand = proved(task)
    cand["targets"]["Candidate.answer"]["kind"] = "def"
    cand["closure"]["constants"]["Candidate.answer"] = {**answer, "kind": "def", "body": NAT}
    assert reasons(task, cand, ["answer", "ok"]) == []
    wrong = copy.deepcopy(cand)
    wrong["targets"]["Candidate.answer"]["type"] = ["Ind", "Coq.Init.Datatypes.bool", 0, []]
    assert reasons(task, wrong, ["answer", "ok"]) == [Reason.statement_changed.value]


def test_an_unreadable_dump_is_undecided_never_a_pass() -> None:
    task = dump({"t": target(TWO)})
    cand = proved(task)
    cand["targets"]["Candidate.t"]["type"] = ["Unknown", "Evar"]
    task2 = copy.deepcopy(task)
    task2["targets"]["Candidate.t"]["type"] = ["Unknown", "Evar"]
    assert reasons(task2, cand, ["t"]) == [Reason.undecided.value]
    assert reasons(task, {"format": 2}, ["t"]) == [Reason.undecided.value]
    other = proved(task)
    other["coq"] = "9.2"
    assert reasons(task, other, ["t"]) == [Reason.undecided.value]


def test_a_postulate_is_allowed_only_to_targets_after_it() -> None:
    p = {"type": ["Sort", "Prop"], "univs": MONO}
    task = dump({"t": target(TWO)}, postulates={"Candidate.p": p, "Candidate.M.q": p})
    cand = proved(task)
    cand["targets"]["Candidate.p"] = target(p["type"])
    cand["targets"]["Candidate.M.q"] = target(p["type"])
    uses = [{"kind": "axiom", "name": "Candidate.p"}, {"kind": "axiom", "name": "Candidate.M.q"}]
    cand["targets"]["Candidate.t"]["assumptions"] = uses
    policy = VerifierPolicy()
    assert compare(task, cand, ["t"], policy).findings == []  # no order known: all allowed
    after = {"t": (frozenset(), ())}  # both declared after `t` in the task
    found = compare(task, cand, ["t"], policy, before=after).findings
    assert sorted(f.subject for f in found) == ["Candidate.M.q", "Candidate.p"]
    one = {"t": (frozenset({"Candidate.p"}), ("Candidate.M.",))}
    assert compare(task, cand, ["t"], policy, before=one).findings == []


def test_postulates_before_reads_the_tasks_order() -> None:
    from formalbench.checking.coq_kernel import postulates_before

    text = (
        "Module M.\nParameters (a b : nat) (c : bool).\nTheorem t1 : True.\nAdmitted.\nEnd M.\n"
        "Section S.\nVariable w : nat.\nTheorem t2 : True.\nAdmitted.\nEnd S.\n"
        "Parameter p : 1 = 2.\nDeclare Module D : T.\n"
        "Module Type MT.\nParameter q : nat.\nLemma in_mt : q = q.\nAdmitted.\nParameter r : nat.\n"
        "End MT.\nTheorem t3 : True.\nAdmitted.\n"
    )
    found = postulates_before(text)
    abc = {"Candidate.M.a", "Candidate.M.b", "Candidate.M.c"}
    assert found["M.t1"] == (frozenset(abc), ())
    assert found["t2"] == (frozenset(abc), ())  # a section variable is no postulate
    # a module type's own `Parameter`, by the name the dump gives it, before its lemma only
    assert found["MT.in_mt"] == (
        frozenset(abc | {"Candidate.p", "Candidate.MT.q"}),
        ("Candidate.D.",),
    )
    mt = {"Candidate.MT.q", "Candidate.MT.r"}
    assert found["t3"] == (frozenset(abc | mt | {"Candidate.p"}), ("Candidate.D.",))


def test_deep_terms_are_compared_without_recursion() -> None:
    deep: list[Any] = ["Construct", "Coq.Init.Datatypes.nat", 0, 1, []]
    for _ in range(20_000):  # a numeral in `nat`: one `S` per level
        deep = ["App", ["Construct", "Coq.Init.Datatypes.nat", 0, 2, []], [deep]]
    task = dump({"t": target(eq(deep, deep))})
    cand = dump({"t": target(eq(deep, deep), kind="opaque")})
    assert reasons(task, cand, ["t"]) == []
    other = dump({"t": target(eq(deep, ["Rel", 1]), kind="opaque")})
    assert reasons(task, other, ["t"]) == [Reason.statement_changed.value]


def test_hand_written_dumps_follow_the_plugins_format() -> None:
    """The dumps these tests are written in are the plugin's format, as its reader checks
    it (`coq_kernel_dump_format.KernelDump`): a test here cannot pass on a shape the plugin
    never produces."""
    from formalbench.backends.coq_kernel_dump_format import KernelDump

    answer = {"kind": "undef", "type": NAT, "body": None, "univs": MONO, "flags": FLAGS}
    color = ["Ind", "Candidate.color", 0, []]
    samples = [
        dump({"t": target(TWO)}),
        dump({"t": target(SECTION)}),
        dump({"answer": target(NAT), "ok": target(eq(const("answer"), const("answer")))},
             closure={"constants": {"Candidate.answer": answer}, "inductives": {}}),
        dump({"t": target(["Prod", "R", color, eq(["Rel", 1], ["Rel", 1], color)])},
             closure={"constants": {}, "inductives": {
                 "Candidate.color": _inductive(["red", "green"], [color, color])}}),
        _with_definition(["Construct", "Coq.Init.Datatypes.nat", 0, 1, []]),
    ]  # fmt: skip
    for sample in samples:
        KernelDump.model_validate(sample)


def test_a_target_under_its_canonical_name_is_no_postulate() -> None:
    """A target reached through a module alias is named canonically inside assumptions
    (`Candidate.N.u` for the task's `M.u`): it is a hole of the task there too, never an
    allowed postulate, even where the task's postulates list it by that name."""
    u = target(TWO)
    u["canonical"] = "Candidate.N.u"
    task = dump({"t": target(TWO), "M.u": u})
    task["postulates"]["Candidate.N.u"] = {"type": TWO, "univs": MONO}
    cand = proved(task)
    cand["targets"]["Candidate.t"]["assumptions"] = [{"kind": "axiom", "name": "Candidate.N.u"}]
    found = compare(task, cand, ["t", "M.u"], VerifierPolicy()).findings
    assert [(f.reason, f.subject) for f in found] == [(Reason.disallowed_axiom, "Candidate.N.u")]
    assert "left unproved" in found[0].message


# --- targets inside functors and module types (where / binders) -----------------------------
X = "Candidate.F.(1:X)"
XT = ["Const", f"{X}.t", []]


def _field(kind: str = "undef", ty: Any = None) -> dict[str, Any]:
    return {"kind": kind, "type": ty or ["Sort", ["Type", [["Candidate.1", 0]]]], "body": None,
            "univs": MONO, "flags": FLAGS}  # fmt: skip


def _in_functor(
    fields: list[str] | None = None, assumptions: list[Any] | None = None
) -> dict[str, Any]:
    """A task with `F.foo : forall a : X.t, a = a` in `Module F (X : Sig)`, Sig's fields in
    the closure as the plugin puts them."""
    fields = [f"{X}.t"] if fields is None else fields
    t = target(["Prod", "R", XT, eq(["Rel", 1], ["Rel", 1], XT)], "opaque", assumptions)
    t.update(where="functor", binders=[{"name": X, "fields": fields}])
    constants = {f: _field() for f in fields}
    return dump({"F.foo": t}, closure={"constants": constants, "inductives": {}})


def test_a_functor_target_with_the_tasks_signature_passes() -> None:
    from formalbench.backends.coq_kernel_dump_format import KernelDump

    task = _in_functor()
    KernelDump.model_validate(task)
    assert reasons(task, copy.deepcopy(task), ["F.foo"]) == []


def test_a_functor_target_whose_parameter_gains_or_changes_a_field_is_refused() -> None:
    task = _in_functor()
    wider = _in_functor([f"{X}.t", f"{X}.bad"])  # `Parameter bad : False` added to Sig
    assert reasons(task, wider, ["F.foo"]) == ["statement_changed"]
    changed = copy.deepcopy(task)  # the field's type made another
    changed["closure"]["constants"][f"{X}.t"]["type"] = ["Sort", "Prop"]
    assert reasons(task, changed, ["F.foo"]) == ["statement_changed"]
    more = copy.deepcopy(task)  # one more parameter
    more["targets"]["Candidate.F.foo"]["binders"].append(
        {"name": "Candidate.F.(2:Y)", "fields": []}
    )
    assert reasons(task, more, ["F.foo"]) == ["statement_changed"]


def test_a_functor_target_moved_to_a_module_type_or_the_environment_is_refused() -> None:
    task = _in_functor()
    moved = copy.deepcopy(task)
    moved["targets"]["Candidate.F.foo"]["where"] = "module_type"
    assert reasons(task, moved, ["F.foo"]) == ["statement_changed"]
    plain = copy.deepcopy(task)
    plain["targets"]["Candidate.F.foo"].update(where=None, binders=None)
    assert reasons(task, plain, ["F.foo"]) == ["statement_changed"]


def test_a_functor_bodys_own_axiom_is_refused_unless_the_task_pins_it_before() -> None:
    helper = {"kind": "axiom", "name": "Candidate.F.helper", "type": NAT}
    task = _in_functor()
    cand = _in_functor(assumptions=[helper])
    assert reasons(task, cand, ["F.foo"]) == ["disallowed_axiom"]
    pinned = copy.deepcopy(task)  # the task's own `Parameter helper` in F, before `foo`
    pinned["postulates"]["Candidate.F.helper"] = {"type": NAT, "univs": MONO}
    cand["targets"]["Candidate.F.helper"] = target(NAT)
    before = {"F.foo": (frozenset({"Candidate.F.helper"}), ())}
    assert reasons(pinned, cand, ["F.foo"], before=before) == []
    after = {"F.foo": (frozenset(), ())}  # declared after the target: not usable
    assert reasons(pinned, cand, ["F.foo"], before=after) == ["disallowed_axiom"]


def test_an_object_a_dump_could_not_express_is_undecided_never_a_pass() -> None:
    task = _in_functor()
    cand = copy.deepcopy(task)
    cand["undumpable"] = [{"name": f"{X}.u", "why": "not found"}]  # a closure object missing
    assert reasons(task, cand, ["F.foo"]) == ["undecided"]
    lost = copy.deepcopy(task)
    lost["targets"]["Candidate.F.foo"] = {
        "found": False,
        "why": "cannot be dumped: the proof of `x` cannot be read",
    }
    assert reasons(task, lost, ["F.foo"]) == ["undecided"]
    gone = copy.deepcopy(task)
    gone["targets"]["Candidate.F.foo"] = {
        "found": False,
        "why": "the name does not resolve to a global object",
    }
    assert reasons(task, gone, ["F.foo"]) == ["missing_target"]


def test_a_comparison_never_changes_either_dump() -> None:
    """The verifier keeps each task's parsed dump for every later check of the task
    (`KernelCheck._parsed`) and remembers its levels by the object (`_own_levels`): that is
    sound only while a comparison reads dumps and never writes them."""
    task = _own_level_task()
    changed = proved(task)
    changed["targets"]["Candidate.t"]["type"] = _sorted_type("Candidate.7")
    changed["universes"]["le"].append(["Candidate.7", "Candidate.5"])
    for cand in (proved(task), changed, proved(task, kind="undef")):
        before = copy.deepcopy((task, cand))
        compare(task, cand, ["t"], VerifierPolicy())
        assert (task, cand) == before


def test_own_levels_are_remembered_for_the_very_dump_only() -> None:
    from formalbench.checking.coq_compare import _own_levels

    task = _own_level_task()
    first = _own_levels(task, ["Candidate.t"], {})
    assert _own_levels(task, ["Candidate.t"], {}) is first  # remembered
    other = copy.deepcopy(task)  # an equal dump, another object: its own walk
    other["targets"]["Candidate.t"]["type"] = _sorted_type("Candidate.3")
    assert _own_levels(other, ["Candidate.t"], {})[0] == {"Candidate.3"} != first[0]
