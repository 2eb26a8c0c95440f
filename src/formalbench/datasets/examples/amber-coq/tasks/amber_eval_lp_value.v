(* formalbench-task
   kind: evaluation
   constructions: answer
   informal: Find the optimal value of: minimise x + 2 y subject to x >= 1 and y >= 2. Prove that it is attained and that no feasible point does better. *)
From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Definition feasible (x y : R) : Prop := 1 <= x /\ 2 <= y.

Definition answer : R.
Admitted.

Theorem answer_spec :
  (exists x y, feasible x y /\ x + 2 * y = answer) /\
  (forall x y, feasible x y -> answer <= x + 2 * y).
Proof.
Admitted.
