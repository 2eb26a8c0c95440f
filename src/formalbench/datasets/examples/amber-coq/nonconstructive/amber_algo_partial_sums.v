From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.
From Coq Require Import ClassicalEpsilon.

(* The next state is "some s' equal to the sum so far": picked by choice, not computed. *)
Definition step (a : vec) (k : nat) (s : R) : R :=
  epsilon (inhabits 0) (fun s' => s' = rsum (S k) a).

Fixpoint algorithm (a : vec) (n : nat) : R :=
  match n with
  | O => 0
  | S k => step a k (algorithm a k)
  end.

Theorem algorithm_spec (a : vec) (n : nat) : algorithm a n = rsum n a.
Proof.
  destruct n as [|n]; simpl; [reflexivity|].
  unfold step. apply (epsilon_spec (inhabits 0) (fun s' => s' = rsum (S n) a)).
  exists (rsum (S n) a). reflexivity.
Qed.
