(* formalbench-task
   kind: evaluation
   constructions: answer
   informal: For a > 0, find the minimiser of a x^2 + b x over the reals in closed form, and prove that it is a global minimiser. *)
From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Definition q (a b x : R) : R := a * x ^ 2 + b * x.

Definition answer (a b : R) : R.
Admitted.

Theorem answer_spec (a b : R) : 0 < a -> forall y, q a b (answer a b) <= q a b y.
Proof.
Admitted.
