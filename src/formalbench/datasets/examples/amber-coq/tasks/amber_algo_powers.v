(* formalbench-task
   kind: algorithm
   constructions: step
   informal: Design the loop body of an algorithm that, started from 1, holds r^n after n steps, and prove it. *)
From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Definition step (r : R) (x : R) : R.
Admitted.

Fixpoint algorithm (r : R) (n : nat) : R :=
  match n with
  | O => 1
  | S k => step r (algorithm r k)
  end.

Theorem algorithm_spec (r : R) (n : nat) : algorithm r n = r ^ n.
Proof.
Admitted.
