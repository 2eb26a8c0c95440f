From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Definition step (a : vec) (k : nat) (s : R) : R := s + a k.

Fixpoint algorithm (a : vec) (n : nat) : R :=
  match n with
  | O => 0
  | S k => step a k (algorithm a k)
  end.

Theorem algorithm_spec (a : vec) (n : nat) : algorithm a n = rsum n a.
Proof.
  induction n as [|n IH]; simpl; [reflexivity|].
  rewrite IH. unfold step. reflexivity.
Qed.
