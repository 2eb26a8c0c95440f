From Formalbench Require Import Amber.
From Coq Require Import Lra Lia.
Open Scope R_scope.

Definition feasible (x y : R) : Prop := 1 <= x /\ 2 <= y.

Definition answer : R := 5.

Theorem answer_spec :
  (exists x y, feasible x y /\ x + 2 * y = answer) /\
  (forall x y, feasible x y -> answer <= x + 2 * y).
Proof.
  unfold answer, feasible. split.
  - exists 1, 2. split; [split; lra | lra].
  - intros x y [Hx Hy]. lra.
Qed.
