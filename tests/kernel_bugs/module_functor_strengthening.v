(* rocq#21051: up to 9.0.0 the kernel forgets a substitution when a functor is
   strengthened (here by `Include` of the module holding it), so two applications of one
   functor to different arguments share an alias and are convertible. The field is an
   opaque (`Qed`) constant of the module type, which any constant of its type implements. *)
Module Type HasFlag.
  Definition flag : bool.
  Proof. exact true. Qed.
End HasFlag.
Module Yes. Definition flag := true. End Yes.
Module No. Definition flag := false. End No.
Module Outer.
  Module Build (P : HasFlag).
    Module Inner.
      Definition got := P.flag.
    End Inner.
    Module Alias := Inner.
  End Build.
End Outer.
Include Outer.
Module A := Build Yes.
Module B := Build No.
Lemma same : A.Alias.got = B.Alias.got.
Proof. reflexivity. Qed.
Theorem oops : False.
Proof.
  assert (e : true = false) by (change (A.Alias.got = B.Alias.got); exact same).
  discriminate e.
Qed.
