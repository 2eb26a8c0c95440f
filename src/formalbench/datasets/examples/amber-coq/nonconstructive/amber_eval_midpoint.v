From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.
From Coq Require Import ClassicalEpsilon.

Definition f (a b x : R) : R := (x - a) ^ 2 + (x - b) ^ 2.

Definition answer (a b : R) : R :=
  epsilon (inhabits 0) (fun m => forall y, f a b m <= f a b y).

Theorem answer_spec (a b : R) : forall y, f a b (answer a b) <= f a b y.
Proof.
  apply (epsilon_spec (inhabits 0) (fun m => forall y, f a b m <= f a b y)).
  exists ((a + b) / 2). intros y. unfold f.
  assert (0 <= (y - (a + b) / 2) ^ 2) by apply pow2_ge_0.
  nra.
Qed.
