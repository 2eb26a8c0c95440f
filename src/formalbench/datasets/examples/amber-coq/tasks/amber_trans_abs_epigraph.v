(* formalbench-task
   kind: transformation
   constructions: D_tgt P_tgt
   informal: Minimising |x| over the reals is not linear. Give an equivalent problem (a new decision domain, constraints and objective) whose constraints and objective are linear, using a slack variable, and prove that each problem relaxes the other. *)
From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Definition P_src : MathProblem R R :=
  {| constraints := fun _ => True; objective := fun x => Rabs x |}.

Definition D_tgt : Type.
Admitted.

Definition P_tgt : MathProblem D_tgt R.
Admitted.

Theorem valid_transformation : relaxes P_src P_tgt /\ relaxes P_tgt P_src.
Proof.
Admitted.
