(* formalbench-task
   kind: evaluation
   constructions: answer
   informal: Give the Euclidean projection of a real x onto an interval [l, u] (l <= u) in closed form: a point of the interval nearest to x. Prove that it lies in the interval and is at least as close to x as any point of it. *)
From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Definition answer (l u x : R) : R.
Admitted.

Theorem answer_spec (l u x : R) : l <= u ->
  (l <= answer l u x <= u) /\
  (forall y, l <= y <= u -> Rabs (answer l u x - x) <= Rabs (y - x)).
Proof.
Admitted.
