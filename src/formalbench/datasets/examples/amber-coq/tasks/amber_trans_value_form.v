(* formalbench-task
   kind: transformation
   constructions: D_tgt P_tgt
   informal: Rewrite the problem "minimise 2x + 1 subject to x >= 0" as an equivalent problem whose objective is its decision variable itself, and prove that each relaxes the other. *)
From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Definition P_src : MathProblem R R :=
  {| constraints := fun x => 0 <= x; objective := fun x => 2 * x + 1 |}.

Definition D_tgt : Type.
Admitted.

Definition P_tgt : MathProblem D_tgt R.
Admitted.

Theorem valid_transformation : relaxes P_src P_tgt /\ relaxes P_tgt P_src.
Proof.
Admitted.
