(* formalbench-task
   kind: evaluation
   constructions: answer
   informal: Solve the linear system x + y = 3, x - y = 1: give the pair (x, y) and prove that it solves both equations. *)
From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Definition answer : R * R.
Admitted.

Theorem answer_spec : fst answer + snd answer = 3 /\ fst answer - snd answer = 1.
Proof.
Admitted.
