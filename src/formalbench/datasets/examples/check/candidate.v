(* A solution: it adds an import and a helper lemma, and lays the statement out anew. *)
Require Import Arith.
Require Import Lia.

Definition double (n : nat) : nat := n + n.

Lemma double_is_twice : forall n : nat, double n = 2 * n.
Proof. intros n. unfold double. lia. Qed.

Theorem double_le_square_plus_one : forall n : nat,
    double n <= n * n + 1.
Proof.
  intros n. rewrite double_is_twice.
  nia.
Qed.
