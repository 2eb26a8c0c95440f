From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Definition P_src : MathProblem R R :=
  {| constraints := fun x => 0 <= x; objective := fun x => 2 * x + 1 |}.

Definition D_tgt : Type := R.

Definition P_tgt : MathProblem D_tgt R :=
  {| constraints := fun y : R => 1 <= y; objective := fun y : R => y |}.

Theorem valid_transformation : relaxes P_src P_tgt /\ relaxes P_tgt P_src.
Proof.
  unfold relaxes, P_src, P_tgt, D_tgt; simpl. split.
  - intros x Hx. exists (2 * x + 1). split; lra.
  - intros y Hy. exists ((y - 1) / 2). split; [lra | field].
Qed.
