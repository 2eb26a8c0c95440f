From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.
From Coq Require Import ClassicalEpsilon.

Definition grad (c x : R) : R := x - c.

(* The next iterate is "a point whose error is half the current one", picked by a helper. *)
Definition halfway (c x : R) : R :=
  proj1_sig (constructive_indefinite_description (fun y => y - c = (x - c) / 2)
    (ex_intro _ ((x + c) / 2) (ltac:(field) : (x + c) / 2 - c = (x - c) / 2))).

Definition step (c x : R) : R := halfway c x.

Fixpoint algorithm (x0 c : R) (n : nat) : R :=
  match n with
  | O => x0
  | S k => step c (algorithm x0 c k)
  end.

Theorem algorithm_spec (x0 c : R) (n : nat) : algorithm x0 c n - c = (x0 - c) / 2 ^ n.
Proof.
  induction n as [|n IH]; simpl.
  - field.
  - unfold step, halfway.
    destruct (constructive_indefinite_description _ _) as [y Hy]; simpl.
    rewrite Hy, IH.
    assert (P : 0 < 2 ^ n) by (apply pow_lt; lra).
    field. lra.
Qed.
