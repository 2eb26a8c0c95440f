From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Definition answer : R * R := (2, 1).

Theorem answer_spec : fst answer + snd answer = 3 /\ fst answer - snd answer = 1.
Proof.
  unfold answer; simpl. split; lra.
Qed.
