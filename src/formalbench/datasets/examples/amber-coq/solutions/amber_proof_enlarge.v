From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Theorem relax_by_enlarging (D : Type) (P : MathProblem D R) (S : D -> Prop) :
  (forall x, constraints P x -> S x) ->
  relaxes P {| constraints := S; objective := objective P |}.
Proof.
  intros H x Hx. exists x. simpl. split; [apply H; exact Hx | reflexivity].
Qed.
