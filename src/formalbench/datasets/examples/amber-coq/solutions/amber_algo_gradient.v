From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Definition grad (c x : R) : R := x - c.

Definition step (c x : R) : R := x - / 2 * grad c x.

Fixpoint algorithm (x0 c : R) (n : nat) : R :=
  match n with
  | O => x0
  | S k => step c (algorithm x0 c k)
  end.

Theorem algorithm_spec (x0 c : R) (n : nat) : algorithm x0 c n - c = (x0 - c) / 2 ^ n.
Proof.
  induction n as [|n IH]; simpl.
  - field.
  - unfold step, grad.
    assert (P : 0 < 2 ^ n) by (apply pow_lt; lra).
    replace (algorithm x0 c n) with ((x0 - c) / 2 ^ n + c) by lra.
    field. lra.
Qed.
