From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.
From Coq Require Import ClassicalEpsilon.

Definition P_src : MathProblem R R :=
  {| constraints := fun x => 0 <= x; objective := fun x => 2 * x + 1 |}.

Definition D_tgt : Type := R.

(* The source point behind a value y, found by choice instead of solved for. *)
Definition preimage (y : R) : R :=
  proj1_sig (constructive_indefinite_description (fun x => 2 * x + 1 = y)
    (ex_intro _ ((y - 1) / 2) (ltac:(field) : 2 * ((y - 1) / 2) + 1 = y))).

Definition P_tgt : MathProblem D_tgt R :=
  {| constraints := fun y : R => 0 <= preimage y; objective := fun y : R => y |}.

Lemma preimage_eq (y : R) : preimage y = (y - 1) / 2.
Proof.
  unfold preimage. destruct (constructive_indefinite_description _ _) as [x Hx]; simpl. lra.
Qed.

Theorem valid_transformation : relaxes P_src P_tgt /\ relaxes P_tgt P_src.
Proof.
  unfold relaxes, P_src, P_tgt, D_tgt; simpl. split.
  - intros x Hx. exists (2 * x + 1). rewrite preimage_eq. split; [lra | reflexivity].
  - intros y Hy. rewrite preimage_eq in Hy. exists ((y - 1) / 2). split; [lra | field].
Qed.
