(* Not a solution: the statement was weakened (an extra `+ n` on the right-hand side). *)
Require Import Arith.
Require Import Lia.

Definition double (n : nat) : nat := n + n.

Theorem double_le_square_plus_one :
  forall n : nat, double n <= n * n + n + 1.
Proof.
  intros n. unfold double. nia.
Qed.
