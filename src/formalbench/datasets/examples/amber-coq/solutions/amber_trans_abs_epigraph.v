From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Definition P_src : MathProblem R R :=
  {| constraints := fun _ => True; objective := fun x => Rabs x |}.

Definition D_tgt : Type := (R * R)%type.

Definition P_tgt : MathProblem D_tgt R :=
  {| constraints := fun p => - snd p <= fst p /\ fst p <= snd p; objective := fun p => snd p |}.

Theorem valid_transformation : relaxes P_src P_tgt /\ relaxes P_tgt P_src.
Proof.
  unfold relaxes, P_src, P_tgt; simpl. split.
  - intros x _. exists (x, Rabs x). simpl.
    split; [|reflexivity]. unfold Rabs; destruct (Rcase_abs x); lra.
  - intros [x t] [H1 H2]. exists t. simpl in *. split; [exact I|].
    unfold Rabs; destruct (Rcase_abs t); lra.
Qed.
