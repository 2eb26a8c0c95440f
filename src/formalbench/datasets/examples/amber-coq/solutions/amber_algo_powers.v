From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Definition step (r : R) (x : R) : R := x * r.

Fixpoint algorithm (r : R) (n : nat) : R :=
  match n with
  | O => 1
  | S k => step r (algorithm r k)
  end.

Theorem algorithm_spec (r : R) (n : nat) : algorithm r n = r ^ n.
Proof.
  induction n as [|n IH]; simpl; [reflexivity|].
  rewrite IH. unfold step. ring.
Qed.
