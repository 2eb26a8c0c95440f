From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.
From Coquelicot Require Import Rbar Lub.

Definition P : OptProblem :=
  {| opt_n_var := 1; n_eqs := 0; eq_constraints := fun _ _ => 0;
     n_ieqs := 1; ieq_constraints := fun x _ => 1 - x O; opt_objective := fun x => x O |}.

(* The dual function left as the infimum itself: nothing is derived. *)
Definition dual : DualProblem P.
Proof.
  refine {| dual_objective := fun lam mu => Glb_Rbar (lagrangian_values P lam mu);
            dual_domain := fun lam mu => Glb_Rbar (lagrangian_values P lam mu) <> m_infty |}.
  - intros lam mu. apply Glb_Rbar_correct.
  - intros lam mu. reflexivity.
Defined.

Theorem dual_spec : dual_domain dual (fun _ => 0) (fun _ => 1).
Proof.
  simpl. rewrite (is_glb_Rbar_unique _ (Finite 1)); [discriminate|].
  unfold lagrangian_values, lagrangian, dot; simpl. split.
  - intros v [x ->]. simpl. lra.
  - intros b Hb. apply Hb. exists (fun _ => 0). lra.
Qed.
