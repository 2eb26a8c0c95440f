(* formalbench-task
   kind: proof
   informal: The dot product of two vectors of dimension n is symmetric. *)
From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Theorem dot_comm (n : nat) (u v : vec) : dot n u v = dot n v u.
Proof.
Admitted.
