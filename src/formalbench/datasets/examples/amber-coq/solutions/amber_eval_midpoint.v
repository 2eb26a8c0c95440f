From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Definition f (a b x : R) : R := (x - a) ^ 2 + (x - b) ^ 2.

Definition answer (a b : R) : R := (a + b) / 2.

Theorem answer_spec (a b : R) : forall y, f a b (answer a b) <= f a b y.
Proof.
  intros y. unfold f, answer.
  assert (0 <= (y - (a + b) / 2) ^ 2) by apply pow2_ge_0.
  nra.
Qed.
