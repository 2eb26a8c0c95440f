From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.
From Coq Require Import ClassicalEpsilon.

Definition nearest_spec (l u x m : R) : Prop :=
  l <= u -> (l <= m <= u) /\ (forall y, l <= y <= u -> Rabs (m - x) <= Rabs (y - x)).

Lemma nearest_exists (l u x : R) : exists m, nearest_spec l u x m.
Proof.
  exists (Rmax l (Rmin x u)). intros Hlu.
  unfold Rmax, Rmin; repeat destruct Rle_dec; split; try lra;
    intros y Hy; unfold Rabs; repeat destruct Rcase_abs; lra.
Qed.

Definition answer (l u x : R) : R :=
  proj1_sig (constructive_indefinite_description _ (nearest_exists l u x)).

Theorem answer_spec (l u x : R) : l <= u ->
  (l <= answer l u x <= u) /\
  (forall y, l <= y <= u -> Rabs (answer l u x - x) <= Rabs (y - x)).
Proof.
  unfold answer. destruct (constructive_indefinite_description _ _) as [m Hm]. exact Hm.
Qed.
