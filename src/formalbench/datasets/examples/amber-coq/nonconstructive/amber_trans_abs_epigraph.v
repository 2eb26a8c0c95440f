From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.
From Coq Require Import ClassicalEpsilon.

Definition P_src : MathProblem R R :=
  {| constraints := fun _ => True; objective := fun x => Rabs x |}.

Definition D_tgt : Type := R.

(* "Some problem equivalent to the source": chosen, and it mentions the source itself. *)
Definition P_tgt : MathProblem D_tgt R :=
  epsilon (inhabits P_src) (fun Q : MathProblem R R => relaxes P_src Q /\ relaxes Q P_src).

Theorem valid_transformation : relaxes P_src P_tgt /\ relaxes P_tgt P_src.
Proof.
  unfold P_tgt, D_tgt.
  apply (epsilon_spec (inhabits P_src) (fun Q : MathProblem R R => relaxes P_src Q /\ relaxes Q P_src)).
  exists P_src. split; apply relaxes_refl.
Qed.
