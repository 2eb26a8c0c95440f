(* formalbench-task
   kind: algorithm
   constructions: step
   informal: Gradient descent with step size 1/2 on f(x) = (x - c)^2 / 2: write the update x_{k+1} from x_k, and prove that the error halves at every step, x_n - c = (x_0 - c) / 2^n. *)
From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Definition grad (c x : R) : R := x - c.

Definition step (c x : R) : R.
Admitted.

Fixpoint algorithm (x0 c : R) (n : nat) : R :=
  match n with
  | O => x0
  | S k => step c (algorithm x0 c k)
  end.

Theorem algorithm_spec (x0 c : R) (n : nat) : algorithm x0 c n - c = (x0 - c) / 2 ^ n.
Proof.
Admitted.
