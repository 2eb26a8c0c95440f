From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

From Coquelicot Require Import Rbar Lub.

Definition feasible (x y : R) : Prop := 1 <= x /\ 2 <= y.

(* The infimum of the objective over the feasible set, read back as a real. *)
Definition answer : R :=
  real (Glb_Rbar (fun v => exists x y, feasible x y /\ v = x + 2 * y)).

Lemma glb_is_5 : Glb_Rbar (fun v => exists x y, feasible x y /\ v = x + 2 * y) = Finite 5.
Proof.
  apply is_glb_Rbar_unique. split.
  - intros v [x [y [[Hx Hy] ->]]]. simpl. lra.
  - intros b Hb. apply (Hb 5). exists 1, 2. unfold feasible. split; [split; lra | lra].
Qed.

Theorem answer_spec :
  (exists x y, feasible x y /\ x + 2 * y = answer) /\
  (forall x y, feasible x y -> answer <= x + 2 * y).
Proof.
  unfold answer. rewrite glb_is_5. simpl. unfold feasible. split.
  - exists 1, 2. split; [split; lra | lra].
  - intros x y [Hx Hy]. lra.
Qed.
