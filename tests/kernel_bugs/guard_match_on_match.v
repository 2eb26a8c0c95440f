(* rocq#20455: the guard checker of 8.16 - 9.0.0 takes `match (match c with .. end) with
   .. | S q => q end` for a subterm of the recursive argument even when the inner match
   returns a number that is not one (here 7, picked by `c = false`). *)
Definition is_pos (n : nat) : Prop := match n with O => False | S _ => True end.
Definition big (n : nat) : Prop := match n with O => False | S k => is_pos k end.
Fixpoint drop (n : nat) {struct n} : is_pos n -> False.
  refine (match n as n0 return is_pos n0 -> False with
  | O => fun h => h
  | S p => fun _ =>
    let go (c : bool) (hc : c = false) (y : nat) (hy : big y) :=
      drop (match (match c with true => p | false => y end) with O => p | S q => q end) _
    in go false eq_refl 7 I
  end).
  subst c. destruct y as [|y]; simpl in hy. destruct hy. exact hy.
Defined.
Theorem oops : False.
Proof. exact (drop 1 I). Qed.
