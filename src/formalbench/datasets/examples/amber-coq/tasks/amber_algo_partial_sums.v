(* formalbench-task
   kind: algorithm
   constructions: step
   informal: Design the loop body of an algorithm that, started from 0, computes after n steps the sum a 0 + ... + a (n - 1) of a sequence a, and prove that it does. *)
From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Definition step (a : vec) (k : nat) (s : R) : R.
Admitted.

Fixpoint algorithm (a : vec) (n : nat) : R :=
  match n with
  | O => 0
  | S k => step a k (algorithm a k)
  end.

Theorem algorithm_spec (a : vec) (n : nat) : algorithm a n = rsum n a.
Proof.
Admitted.
