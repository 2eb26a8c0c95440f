From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.
From Coquelicot Require Import Rbar Lub.

Definition P : OptProblem :=
  {| opt_n_var := 1; n_eqs := 0; eq_constraints := fun _ _ => 0;
     n_ieqs := 1; ieq_constraints := fun x _ => 1 - x O; opt_objective := fun x => x O |}.

Definition dual : DualProblem P.
Proof.
  refine {| dual_objective := fun lam mu => if Req_EM_T (mu O) 1 then Finite 1 else m_infty;
            dual_domain := fun lam mu => mu O = 1 |}.
  - intros lam mu. unfold lagrangian_values, lagrangian, dot; simpl.
    destruct (Req_EM_T (mu O) 1) as [E|N].
    + split.
      * intros v [x ->]. simpl. rewrite E. lra.
      * intros b Hb. apply Hb. exists (fun _ => 0). rewrite E. lra.
    + split.
      * intros v _. simpl. exact I.
      * intros b Hb. destruct b as [r| |]; simpl; [| |exact I].
        2: { apply (Hb (0 + (0 + mu O * (1 - 0)) + 0)). exists (fun _ => 0). reflexivity. }
        assert (Nz : 1 - mu O <> 0) by (intro; apply N; lra).
        assert (Hr := Hb (r - 1)). simpl in Hr.
        enough (r <= r - 1) by lra. apply Hr.
        exists (fun _ => (r - 1 - mu O) / (1 - mu O)). simpl. field. exact Nz.
  - intros lam mu. destruct (Req_EM_T (mu O) 1) as [E|N]; split; intro H.
    + discriminate.
    + exact E.
    + contradiction.
    + exfalso. apply H. reflexivity.
Defined.

Theorem dual_spec : dual_domain dual (fun _ => 0) (fun _ => 1).
Proof.
  simpl. reflexivity.
Qed.
