From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Theorem dot_comm (n : nat) (u v : vec) : dot n u v = dot n v u.
Proof.
  unfold dot. apply rsum_ext. intros i _. ring.
Qed.
