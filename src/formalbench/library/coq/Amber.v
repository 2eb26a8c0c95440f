(* AMBER in Coq: the structures that construction-verification tasks are written against.

   Loaded as `From Formalbench Require Import Amber.` (formalbench compiles this file once per
   Coq version into its cache and passes `-Q <cache> Formalbench` to coqc; `formalbench
   library path --backend coq` prints that folder).

   Vectors are functions `nat -> R` read on their first `n` coordinates, with the dimension
   kept beside them (a field of the problem or an argument); matrices are `nat -> nat -> R`.
   Written for formalbench from the description in AMBER (Appendix B.1); Coq 8.16, Coquelicot 3. *)

From Coq Require Export Reals.
From Coq Require Import Lra Lia.
Local Set Warnings "-ambiguous-paths".  (* Coquelicot's Rbar coercions next to the reals' *)
From Coquelicot Require Import Rbar Lub.

Open Scope R_scope.

(* ---- finite sums, dot products, matrix-vector products ---------------------------------- *)

(* [rsum n f] is f 0 + ... + f (n - 1). *)
Fixpoint rsum (n : nat) (f : nat -> R) : R :=
  match n with
  | O => 0
  | S k => rsum k f + f k
  end.

Definition vec := nat -> R.
Definition mat := nat -> nat -> R.

Definition dot (n : nat) (u v : vec) : R := rsum n (fun i => u i * v i).

(* [mulVec n A x] is the vector A x, for A with n columns. *)
Definition mulVec (n : nat) (A : mat) (x : vec) : vec := fun i => rsum n (fun j => A i j * x j).

Definition vsub (u v : vec) : vec := fun i => u i - v i.
Definition vscale (a : R) (u : vec) : vec := fun i => a * u i.
Definition mscale (a : R) (A : mat) : mat := fun i j => a * A i j.
Definition madd (A B : mat) : mat := fun i j => A i j + B i j.

(* [msum n F] is F 0 + ... + F (n - 1), entrywise. *)
Definition msum (n : nat) (F : nat -> mat) : mat := fun i j => rsum n (fun k => F k i j).

Lemma rsum_ext (n : nat) (f g : nat -> R) :
  (forall i, (i < n)%nat -> f i = g i) -> rsum n f = rsum n g.
Proof.
  induction n as [|n IH]; intro H; simpl; [reflexivity|].
  rewrite IH by (intros; apply H; lia). rewrite (H n) by lia. reflexivity.
Qed.

Lemma rsum_plus (n : nat) (f g : nat -> R) :
  rsum n (fun i => f i + g i) = rsum n f + rsum n g.
Proof. induction n as [|n IH]; simpl; [lra|]. rewrite IH. lra. Qed.

Lemma rsum_scale (n : nat) (a : R) (f : nat -> R) :
  rsum n (fun i => a * f i) = a * rsum n f.
Proof. induction n as [|n IH]; simpl; [lra|]. rewrite IH. lra. Qed.

Lemma rsum_zero (n : nat) : rsum n (fun _ => 0) = 0.
Proof. induction n as [|n IH]; simpl; [reflexivity|]. rewrite IH. lra. Qed.

(* ---- problems and relaxation ---------------------------------------------------------------- *)

(* A problem: a decision domain D, which points are feasible, and the value of each. *)
Record MathProblem (D V : Type) := {
  constraints : D -> Prop;
  objective : D -> V
}.
Arguments constraints {D V} _ _.
Arguments objective {D V} _ _.

(* [relaxes P Q]: every feasible point of P has a feasible point of Q with the same value. *)
Definition relaxes {D1 D2 V : Type} (P : MathProblem D1 V) (Q : MathProblem D2 V) : Prop :=
  forall x, constraints P x -> exists y, constraints Q y /\ objective P x = objective Q y.

(* Two problems are equivalent when each relaxes the other. *)
Definition equivalent {D1 D2 V : Type} (P : MathProblem D1 V) (Q : MathProblem D2 V) : Prop :=
  relaxes P Q /\ relaxes Q P.

Lemma relaxes_refl {D V : Type} (P : MathProblem D V) : relaxes P P.
Proof. intros x Hx. exists x. split; [exact Hx|reflexivity]. Qed.

Lemma relaxes_trans {D1 D2 D3 V : Type} (P : MathProblem D1 V) (Q : MathProblem D2 V)
  (S : MathProblem D3 V) : relaxes P Q -> relaxes Q S -> relaxes P S.
Proof.
  intros HPQ HQS x Hx. destruct (HPQ x Hx) as [y [Hy Exy]].
  destruct (HQS y Hy) as [z [Hz Eyz]]. exists z. split; [exact Hz|congruence].
Qed.

Lemma equivalent_sym {D1 D2 V : Type} (P : MathProblem D1 V) (Q : MathProblem D2 V) :
  equivalent P Q -> equivalent Q P.
Proof. intros [H1 H2]. split; assumption. Qed.

(* ---- problems over R^n ---------------------------------------------------------------------- *)

Record OriginalProblem := {
  n_var : nat;
  orig_constraints : vec -> Prop;
  orig_objective : vec -> R
}.

Definition as_problem (p : OriginalProblem) : MathProblem vec R :=
  {| constraints := orig_constraints p; objective := orig_objective p |}.

(* [subequivalence p q]: q relaxes p (named after the AMBER library's `subequivlance`). *)
Definition subequivalence (p q : OriginalProblem) : Prop :=
  forall x, orig_constraints p x ->
  exists y, orig_constraints q y /\ orig_objective q y = orig_objective p x.

Definition equivalence (p q : OriginalProblem) : Prop :=
  subequivalence p q /\ subequivalence q p.

Lemma equivalence_equivalent (p q : OriginalProblem) :
  equivalence p q <-> equivalent (as_problem p) (as_problem q).
Proof.
  unfold equivalence, subequivalence, equivalent, relaxes; simpl.
  split; intros [H1 H2]; split; intros x Hx;
    [destruct (H1 x Hx) as [y [Hy E]] | destruct (H2 x Hx) as [y [Hy E]]
    |destruct (H1 x Hx) as [y [Hy E]] | destruct (H2 x Hx) as [y [Hy E]]];
    exists y; split; auto.
Qed.

(* Equality constraints g x = 0 and inequality constraints h x <= 0, each a vector. *)
Record OptProblem := {
  opt_n_var : nat;
  n_eqs : nat;
  eq_constraints : vec -> vec;
  n_ieqs : nat;
  ieq_constraints : vec -> vec;
  opt_objective : vec -> R
}.

Definition opt_constraints (p : OptProblem) (x : vec) : Prop :=
  (forall i, (i < n_eqs p)%nat -> eq_constraints p x i = 0) /\
  (forall j, (j < n_ieqs p)%nat -> ieq_constraints p x j <= 0).

Definition opt_original (p : OptProblem) : OriginalProblem :=
  {| n_var := opt_n_var p; orig_constraints := opt_constraints p;
     orig_objective := opt_objective p |}.

(* minimize c.x subject to A_eq x = b_eq, A_ieq x <= b_ieq. *)
Record LP := {
  lp_n_var : nat;
  c : vec;
  lp_n_eqs : nat;
  A_eq : mat;
  b_eq : vec;
  lp_n_ieqs : nat;
  A_ieq : mat;
  b_ieq : vec
}.

Definition lp_objective (p : LP) (x : vec) : R := dot (lp_n_var p) (c p) x.
Definition lp_eq (p : LP) (x : vec) : vec := vsub (mulVec (lp_n_var p) (A_eq p) x) (b_eq p).
Definition lp_ieq (p : LP) (x : vec) : vec := vsub (mulVec (lp_n_var p) (A_ieq p) x) (b_ieq p).

Definition LP_to_Opt (p : LP) : OptProblem :=
  {| opt_n_var := lp_n_var p; n_eqs := lp_n_eqs p; eq_constraints := lp_eq p;
     n_ieqs := lp_n_ieqs p; ieq_constraints := lp_ieq p; opt_objective := lp_objective p |}.

Definition lp_original (p : LP) : OriginalProblem := opt_original (LP_to_Opt p).

(* A symmetric matrix of size n is positive definite: v' M v > 0 for every nonzero v. *)
Definition pos_def (n : nat) (M : mat) : Prop :=
  (forall i j, (i < n)%nat -> (j < n)%nat -> M i j = M j i) /\
  (forall v, (exists i, (i < n)%nat /\ v i <> 0) -> 0 < dot n v (mulVec n M v)).

(* minimize c.x subject to A_eq x = b_eq and sum_i x_i A_sd_i + B_sd positive definite. *)
Record SDP := {
  sdp_n_var : nat;
  sdp_c : vec;
  sdp_n_eqs : nat;
  sdp_A_eq : mat;
  sdp_b_eq : vec;
  sdp_size : nat;
  A_sd : nat -> mat;
  B_sd : mat
}.

Definition sdp_lmi (p : SDP) (x : vec) : mat :=
  madd (msum (sdp_n_var p) (fun i => mscale (x i) (A_sd p i))) (B_sd p).

Definition sdp_constraints (p : SDP) (x : vec) : Prop :=
  (forall i, (i < sdp_n_eqs p)%nat ->
     mulVec (sdp_n_var p) (sdp_A_eq p) x i - sdp_b_eq p i = 0) /\
  pos_def (sdp_size p) (sdp_lmi p x).

Definition sdp_original (p : SDP) : OriginalProblem :=
  {| n_var := sdp_n_var p; orig_constraints := sdp_constraints p;
     orig_objective := fun x => dot (sdp_n_var p) (sdp_c p) x |}.

(* ---- Lagrange duality ---------------------------------------------------------------------- *)

Definition lagrangian (p : OptProblem) (lam mu x : vec) : R :=
  dot (n_eqs p) lam (eq_constraints p x) + dot (n_ieqs p) mu (ieq_constraints p x)
  + opt_objective p x.

(* The values the Lagrangian takes at (lam, mu); the dual function is their infimum. *)
Definition lagrangian_values (p : OptProblem) (lam mu : vec) : R -> Prop :=
  fun v => exists x, v = lagrangian p lam mu x.

(* A dual problem of p: its dual function, stated as the infimum of the Lagrangian in the
   extended reals, and its domain, where that infimum is not minus infinity. *)
Record DualProblem (p : OptProblem) := {
  dual_objective : vec -> vec -> Rbar;
  dual_domain : vec -> vec -> Prop;
  h_objective : forall lam mu, is_glb_Rbar (lagrangian_values p lam mu) (dual_objective lam mu);
  h_domain : forall lam mu, dual_domain lam mu <-> dual_objective lam mu <> m_infty
}.
Arguments dual_objective {p} _ _ _.
Arguments dual_domain {p} _ _ _.
