(* formalbench-task
   kind: evaluation
   constructions: answer
   informal: Given reals a and b, find the point m minimising (m - a)^2 + (m - b)^2, as an expression in a and b, and prove that it is a minimiser. *)
From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Definition f (a b x : R) : R := (x - a) ^ 2 + (x - b) ^ 2.

Definition answer (a b : R) : R.
Admitted.

Theorem answer_spec (a b : R) : forall y, f a b (answer a b) <= f a b y.
Proof.
Admitted.
