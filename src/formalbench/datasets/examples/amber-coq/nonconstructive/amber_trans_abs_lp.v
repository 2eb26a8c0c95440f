From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.
From Coq Require Import ClassicalEpsilon.

Definition P : OriginalProblem :=
  {| n_var := 1; orig_constraints := fun _ => True; orig_objective := fun x => Rabs (x O) |}.

Definition some_lp : LP :=
  {| lp_n_var := 2;
     c := fun j => match j with 1%nat => 1 | _ => 0 end;
     lp_n_eqs := 0; A_eq := fun _ _ => 0; b_eq := fun _ => 0;
     lp_n_ieqs := 2;
     A_ieq := fun i j => match i, j with
                         | O, O => 1 | O, 1%nat => -1 | 1%nat, O => -1 | 1%nat, 1%nat => -1
                         | _, _ => 0 end;
     b_ieq := fun _ => 0 |}.

Lemma some_lp_ok : equivalence P (lp_original some_lp).
Proof.
  unfold some_lp.
  unfold equivalence, subequivalence, lp_original, opt_original, LP_to_Opt, opt_constraints,
    lp_objective, lp_eq, lp_ieq, vsub, mulVec, dot, P; simpl. split.
  - intros x _. exists (fun i => match i with O => x O | _ => Rabs (x O) end).
    split; [split|].
    + intros i Hi. lia.
    + intros j Hj. destruct j as [|[|j]]; [| |lia]; simpl;
        unfold Rabs; destruct (Rcase_abs (x O)); lra.
    + lra.
  - intros y [_ Hieq]. exists (fun _ => y 1%nat).
    pose proof (Hieq 0%nat ltac:(lia)) as H0. pose proof (Hieq 1%nat ltac:(lia)) as H1.
    simpl in H0, H1. split; [exact I|].
    unfold Rabs; destruct (Rcase_abs (y 1%nat)); lra.
Qed.

(* "An LP equivalent to P": picked by choice among all LPs. *)
Definition answer : LP := epsilon (inhabits some_lp) (fun q => equivalence P (lp_original q)).

Theorem answer_spec : equivalence P (lp_original answer).
Proof.
  unfold answer. apply (epsilon_spec (inhabits some_lp) (fun q => equivalence P (lp_original q))).
  exists some_lp. exact some_lp_ok.
Qed.
