(* rocq#22387: module subtyping compares constructor types as wholes, where `match`
   reads their binders by position: a let-in before or after a real argument are taken
   for the same inductive, and a functor's proof about one becomes a proof of False. *)
Unset Elimination Schemes.
Module Type Shape.
  Inductive box := mk (a : nat) (b : nat := 0).
End Shape.
Module Other.
  Inductive box := mk (b : nat := 0) (a : nat).
End Other.
Module Use (X : Shape).
  Definition proof :
    match (match X.mk 3 with X.mk a b => b end) with O => True | S _ => False end := I.
End Use.
Module Done := Use Other.
Theorem oops : False.
Proof. exact Done.proof. Qed.
