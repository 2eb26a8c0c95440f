(* rocq#20413: the guard checker of 8.16 - 9.0.0 does not check the non-structural
   arguments of a recursive call, so a call hidden in one (`spin x k` under a lambda
   given as `k`) may recurse on anything. Our own instance: `spin 1 id` unfolds to
   `S (spin 1 id)`; each step is a lemma about variables, so no conversion loops. *)
Fixpoint spin (n : nat) (k : nat -> nat) {struct n} : nat :=
  match n with
  | O => k 1
  | S m => S (spin m (fun x => spin x k))
  end.
Lemma unfold_S (m : nat) (k : nat -> nat) :
  spin (S m) k = S (spin m (fun x => spin x k)).
Proof. reflexivity. Qed.
Lemma unfold_O (k : nat -> nat) : spin 0 k = k 1.
Proof. reflexivity. Qed.
Lemma beta (n : nat) (k : nat -> nat) : (fun x => spin x k) n = spin n k.
Proof. reflexivity. Qed.
Lemma no_fix (n : nat) : n <> S n.
Proof. induction n as [|n IH]; intro e; [discriminate e | injection e; exact IH]. Qed.
Theorem oops : False.
Proof.
  pose proof (unfold_S 0 (fun z => z)) as e1.
  pose proof (unfold_O (fun x => spin x (fun z => z))) as e2.
  pose proof (beta 1 (fun z => z)) as e3.
  exact (no_fix _ (eq_trans e1 (f_equal S (eq_trans e2 e3)))).
Qed.
