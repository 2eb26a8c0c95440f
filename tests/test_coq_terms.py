"""Global names of terms as coqc prints them under `Set Printing All` (outputs copied from
coqc 8.16): bound variables are told apart from globals by scope, not by name."""

from __future__ import annotations

from formalbench.backends.coq_terms import parse_about, parse_print, term_refs


def test_a_binder_named_like_a_global_hides_it_only_in_its_scope() -> None:
    printed = [
        "d = ",
        "@pair (forall _ : nat, nat)",
        "  (forall (A : Type) (_ : inhabited A) (_ : forall _ : A, Prop), A)",
        "  (fun epsilon : nat => epsilon) epsilon",
        "     : prod (forall _ : nat, nat)",
        "         (forall (A : Type) (_ : inhabited A) (_ : forall _ : A, Prop), A)",
    ]
    shown = parse_print(printed)
    assert shown is not None and shown.kind == "definition"
    assert "epsilon" in shown.refs  # the second component is the global epsilon
    assert term_refs("fun epsilon : nat => epsilon") == ["nat"]


def test_match_patterns_bind_their_variables_and_name_their_constructors() -> None:
    shown = parse_print(
        [
            "a2 = fun helper0 : nat => match helper0 return nat with",
            "                          | O => S O",
            "                          | S k => Init.Nat.add k helper",
            "                          end",
            "     : forall _ : nat, nat",
        ]
    )
    assert shown is not None
    assert shown.refs == ["nat", "O", "S", "Init.Nat.add", "helper"]


def test_fix_let_and_inductives() -> None:
    fix = parse_print(
        [
            "Nat.add = fix add (n m : nat) {struct n} : nat := match n return nat with",
            " | O => m",
            " | S p => S (add p m)",
            " end",
            "     : forall (_ : nat) (_ : nat), nat",
        ]
    )
    assert fix is not None and fix.refs == ["nat", "O", "S"]
    assert term_refs("let z : R := IZR Z0 in Rplus z y") == ["R", "IZR", "Z0", "Rplus", "y"]
    ind = parse_print(
        [
            "Inductive le' (n : nat) : forall _ : nat, Prop :=  le_n' : le' n n "
            "| le_S' : forall (m : nat) (_ : le' n m), le' n (S m).",
            "",
            "Arguments le' (n _)%nat_scope",
        ]
    )
    assert ind is not None and ind.kind == "inductive"
    assert ind.refs == ["nat", "S"] and ind.declares == ["le'", "le_n'", "le_S'"]


def test_assumptions_aliases_and_about() -> None:
    starred = parse_print(["*** [ Rlt : forall (_ : R) (_ : R), Prop ]", "", "Arguments Rlt"])
    assert starred is not None and (starred.kind, starred.refs) == ("assumption", ["R"])
    alias = parse_print(["Notation Rdefinitions.Rlt := Rlt"])
    assert alias is not None and (alias.kind, alias.refs) == ("alias", ["Rlt"])
    about = ["Rlt : forall (_ : R) (_ : R), Prop", "", "Expands to: Constant Coq.Reals.X.Rlt"]
    assert parse_about(about) == ("Constant", "Coq.Reals.X.Rlt")
    assert parse_about(["epsilon not a defined object."]) is None


def test_text_the_reader_cannot_follow_counts_every_identifier() -> None:
    # an unbalanced term: every name is a reference, erring towards finding more
    assert set(term_refs("fun x : nat => (f x")) >= {"f", "x", "nat"}


def test_a_deeply_nested_numeral_does_not_overflow_the_reader() -> None:
    deep = "@eq nat " + "(S " * 3000 + "O" + ")" * 3000 + " x"
    assert set(term_refs(deep)) == {"eq", "nat", "S", "O", "x"}
