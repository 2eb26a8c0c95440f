From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Definition answer (l u x : R) : R := Rmax l (Rmin x u).

Theorem answer_spec (l u x : R) : l <= u ->
  (l <= answer l u x <= u) /\
  (forall y, l <= y <= u -> Rabs (answer l u x - x) <= Rabs (y - x)).
Proof.
  intros Hlu. unfold answer.
  unfold Rmax, Rmin; repeat destruct Rle_dec; split; try lra;
    intros y Hy; unfold Rabs; repeat destruct Rcase_abs; lra.
Qed.
