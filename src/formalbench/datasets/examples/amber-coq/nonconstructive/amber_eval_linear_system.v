From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

From Coq Require Import ClassicalEpsilon.

Definition answer : R * R :=
  proj1_sig (constructive_indefinite_description
    (fun p : R * R => fst p + snd p = 3 /\ fst p - snd p = 1)
    (ex_intro _ (2, 1) (conj (ltac:(simpl; lra) : fst (2, 1) + snd (2, 1) = 3) (ltac:(simpl; lra) : fst (2, 1) - snd (2, 1) = 1)))).

Theorem answer_spec : fst answer + snd answer = 3 /\ fst answer - snd answer = 1.
Proof.
  unfold answer. apply proj2_sig.
Qed.
