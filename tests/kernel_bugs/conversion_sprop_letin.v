(* rocq#22378: from 8.14 to 9.2.0 conversion under a constructor's binders counts its
   let-ins in SProp wrongly and compares the wrong variables: `fst2 p` and `snd2 p` are
   taken for convertible. *)
From Coq Require Import StrictProp.
Inductive two := pack (x y : nat) (u : sUnit := stt) (v : sUnit := stt).
Definition fst2 (p : two) : nat := match p with pack x _ _ _ => x end.
Definition snd2 (p : two) : nat := match p with pack _ y _ _ => y end.
Definition glue (p : two) : fst2 p = snd2 p := eq_refl.
Theorem oops : False.
Proof. pose proof (glue (pack 0 1)) as e. discriminate e. Qed.
