(* formalbench-task
   kind: transformation
   constructions: answer
   informal: Express the problem "minimise |x| over x in R" as a linear program in standard form (minimise c.x subject to A_eq x = b_eq and A_ieq x <= b_ieq), and prove that the two problems are equivalent. *)
From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Definition P : OriginalProblem :=
  {| n_var := 1; orig_constraints := fun _ => True; orig_objective := fun x => Rabs (x O) |}.

Definition answer : LP.
Admitted.

Theorem answer_spec : equivalence P (lp_original answer).
Proof.
Admitted.
