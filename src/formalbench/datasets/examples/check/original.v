(* Example task for `formalbench check`: the prover replaces `Admitted` by a proof and
   must leave the definition and the statement exactly as they are. *)
Require Import Arith.

Definition double (n : nat) : nat := n + n.

Theorem double_le_square_plus_one :
  forall n : nat, double n <= n * n + 1.
Proof.
Admitted.
