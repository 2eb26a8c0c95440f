From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.
From Coq Require Import ClassicalEpsilon.

(* A helper that "solves" for the next state; the step only calls it. *)
Definition next_state (target : R) : R := epsilon (inhabits 0) (fun y => y = target).

Definition step (r : R) (x : R) : R := next_state (x * r).

Fixpoint algorithm (r : R) (n : nat) : R :=
  match n with
  | O => 1
  | S k => step r (algorithm r k)
  end.

Lemma next_state_eq (t : R) : next_state t = t.
Proof.
  unfold next_state. apply (epsilon_spec (inhabits 0) (fun y => y = t)). exists t. reflexivity.
Qed.

Theorem algorithm_spec (r : R) (n : nat) : algorithm r n = r ^ n.
Proof.
  induction n as [|n IH]; simpl; [reflexivity|].
  unfold step. rewrite next_state_eq, IH. ring.
Qed.
