From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Definition q (a b x : R) : R := a * x ^ 2 + b * x.

Definition answer (a b : R) : R := - b / (2 * a).

Theorem answer_spec (a b : R) : 0 < a -> forall y, q a b (answer a b) <= q a b y.
Proof.
  intros Ha y. unfold q, answer.
  assert (E : a * y ^ 2 + b * y - (a * (- b / (2 * a)) ^ 2 + b * (- b / (2 * a)))
              = a * (y + b / (2 * a)) ^ 2) by (field; lra).
  assert (0 <= a * (y + b / (2 * a)) ^ 2)
    by (apply Rmult_le_pos; [lra | apply pow2_ge_0]).
  lra.
Qed.
