"""α-equivalence of Lean's printed terms, as properties over generated terms (hypothesis): for
every binder form Lean prints (`∀`, `fun`, `λ`, `↦`, `(x : A) →`, `{x : A} →`, `[x : A] →`,
`⦃x : A⦄ →`, `∃`, `∃!`, set-builder with a type or a membership, subtype, binder predicates,
`match` alternatives, `fun` with a pattern, `let`, signature binders of a `#print`),
renaming bound variables never changes the identity check's verdict, while changing a binder's
type or kind, or capturing a free name, always does."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from formalbench.checking.lean_identity import canonical

CONSTS = ("Nat", "f", "c", "P", "Q", "T")
NAMES = ("x", "y", "z", "h", "n", "m", "a", "b", "inst", "α")
FRESH = ("p1", "q2", "r3", "s4", "t5", "w6", "k7", "j8", "i9", "e0")
# binder kinds, each printed its own way; `fun`, `λ` and `↦` are one kind spelt three ways
KINDS = ("forall", "fun", "pi", "implicit", "inst", "strict", "exists", "setof", "subtype",
         "pred", "unique", "memset", "match", "funpat", "let", "sig")  # fmt: skip
SPELLINGS = {"fun": ("fun", "lambda", "maps")}


@st.composite
def terms(draw: st.DrawFn, scope: tuple[int, ...] = (), depth: int = 0) -> tuple:
    options = ["const"] + (["var", "field"] if scope else []) + (["app", "bind"] * (depth < 3))
    pick = draw(st.sampled_from(options))
    if pick == "const":
        return ("const", draw(st.sampled_from(CONSTS)))
    if pick == "var":
        return ("var", draw(st.sampled_from(scope)))
    if pick == "field":
        return ("field", draw(st.sampled_from(scope)))
    if pick == "app":
        return ("app", draw(terms(scope, depth + 1)), draw(terms(scope, depth + 1)))
    kind = draw(st.sampled_from(KINDS if depth == 0 else KINDS[:-1]))
    spelling = draw(st.sampled_from(SPELLINGS.get(kind, (kind,))))
    typ = draw(terms(scope, depth + 1))
    body = draw(terms((*scope, depth), depth + 1))
    return ("bind", spelling, depth, typ, body)


def render(t: tuple, names: dict[int, str]) -> str:
    tag = t[0]
    if tag == "const":
        return t[1]
    if tag == "var":
        return names[t[1]]
    if tag == "field":
        return f"{names[t[1]]}.le"
    if tag == "app":
        return f"({render(t[1], names)} {render(t[2], names)})"
    _, kind, bid, typ, body = t
    x, a, b = names[bid], render(typ, names), render(body, names)
    return {
        "forall": f"(∀ ({x} : {a}), {b})",
        "fun": f"(fun ({x} : {a}) => {b})",
        "lambda": f"(λ ({x} : {a}) => {b})",
        "maps": f"(fun ({x} : {a}) ↦ {b})",
        "pi": f"(({x} : {a}) → {b})",
        "implicit": f"({{{x} : {a}}} → {b})",
        "inst": f"([{x} : {a}] → {b})",
        "strict": f"(⦃{x} : {a}⦄ → {b})",
        "exists": f"(∃ ({x} : {a}), {b})",
        "setof": f"{{{x} : {a} | {b}}}",
        "subtype": f"{{{x} : {a} // {b}}}",
        "pred": f"(∀ {x} ∈ {a}, {b})",
        "unique": f"(∃! ({x} : {a}), {b})",
        "memset": f"{{{x} ∈ {a} | {b}}}",
        "match": f"(match {a} with | L.cons {x} _ => {b} | _ => c)",
        "funpat": f"((fun ({x}, _) => {b}) {a})",
        "let": f"(let {x} := {a};\n {b})",
        "sig": f"def d.{{u}} ({x} : {a}) : {b} :=\nc",
    }[kind]


def binders(t: tuple) -> list[tuple]:
    if t[0] == "app":
        return binders(t[1]) + binders(t[2])
    if t[0] == "bind":
        return [t] + binders(t[3]) + binders(t[4])
    return []


def replace(t: tuple, target: tuple, new: tuple) -> tuple:
    if t is target:
        return new
    if t[0] == "app":
        return ("app", replace(t[1], target, new), replace(t[2], target, new))
    if t[0] == "bind":
        return (*t[:3], replace(t[3], target, new), replace(t[4], target, new))
    return t


NAMINGS = st.permutations(NAMES).map(lambda p: dict(enumerate(p)))
FRESH_NAMINGS = st.permutations(FRESH).map(lambda p: dict(enumerate(p)))


@settings(max_examples=100, deadline=None)
@given(terms(), NAMINGS, FRESH_NAMINGS)
def test_renaming_bound_variables_never_changes_the_verdict(t, one, other) -> None:
    assert canonical(render(t, one)) == canonical(render(t, other))


@settings(max_examples=100, deadline=None)
@given(terms(), NAMINGS, st.data())
def test_changing_a_binder_type_always_changes_the_verdict(t, names, data) -> None:
    found = binders(t)
    if not found:
        return
    target = data.draw(st.sampled_from(found))
    changed = replace(t, target, (*target[:3], ("const", "Int"), target[4]))
    assert canonical(render(changed, names)) != canonical(render(t, names))


@settings(max_examples=100, deadline=None)
@given(terms(), NAMINGS, st.data())
def test_changing_a_binder_kind_always_changes_the_verdict(t, names, data) -> None:
    found = [b for b in binders(t) if b[1] != "sig"]
    if not found:
        return
    target = data.draw(st.sampled_from(found))
    kind = "fun" if target[1] in SPELLINGS["fun"] else target[1]
    other = data.draw(st.sampled_from([k for k in KINDS[:-1] if k != kind]))
    changed = replace(t, target, (target[0], other, *target[2:]))
    assert canonical(render(changed, names)) != canonical(render(t, names))


@settings(max_examples=100, deadline=None)
@given(terms(), NAMINGS, st.data())
def test_fun_lambda_and_maps_to_are_one_binder(t, names, data) -> None:
    found = [b for b in binders(t) if b[1] in SPELLINGS["fun"]]
    if not found:
        return
    target = data.draw(st.sampled_from(found))
    other = data.draw(st.sampled_from(SPELLINGS["fun"]))
    changed = replace(t, target, (target[0], other, *target[2:]))
    assert canonical(render(changed, names)) == canonical(render(t, names))


@settings(max_examples=100, deadline=None)
@given(terms(), NAMINGS, st.data())
def test_capturing_a_free_name_always_changes_the_verdict(t, names, data) -> None:
    """Renaming a binder to a constant used freely in its body binds that constant."""
    found = [b for b in binders(t) if free_consts(b[4])]
    if not found:
        return
    target = data.draw(st.sampled_from(found))
    captured = data.draw(st.sampled_from(sorted(free_consts(target[4]))))
    renamed = {**names, target[2]: captured}
    assert canonical(render(t, renamed)) != canonical(render(t, names))


def free_consts(t: tuple) -> set[str]:
    if t[0] == "const":
        return {t[1]}
    if t[0] == "app":
        return free_consts(t[1]) | free_consts(t[2])
    if t[0] == "bind":
        return free_consts(t[3]) | free_consts(t[4])
    return set()
