(* formalbench-task
   kind: transformation
   constructions: dual
   informal: Derive the Lagrange dual of "minimise x subject to 1 - x <= 0": give the dual function g(lambda, mu) in closed form in the extended reals, with its domain, prove that g is the infimum of the Lagrangian, and that mu = 1 lies in the domain. *)
From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.
From Coquelicot Require Import Rbar Lub.

Definition P : OptProblem :=
  {| opt_n_var := 1; n_eqs := 0; eq_constraints := fun _ _ => 0;
     n_ieqs := 1; ieq_constraints := fun x _ => 1 - x O; opt_objective := fun x => x O |}.

Definition dual : DualProblem P.
Admitted.

Theorem dual_spec : dual_domain dual (fun _ => 0) (fun _ => 1).
Proof.
Admitted.
