(* rocq#18503: up to 8.18 module subtyping takes any constant as an implementation of a
   `Primitive` field of a module type, so a functor computes with `add` on a module whose
   field is `mul`. *)
From Coq Require Import PrimInt63.
Open Scope int63_scope.
Module Type HasOp.
  Primitive op := #int63_add.
End HasOp.
Module UseOp (X : HasOp).
  Definition two_is_two : X.op 1 1 = 2 := eq_refl.
End UseOp.
Module Impl.
  Definition op := mul.
End Impl.
Module Got := UseOp Impl.
Theorem oops : False.
Proof.
  pose (test := fun v => eqb v 2).
  assert (e : test (mul 1 1) = test 2) by (f_equal; exact Got.two_is_two).
  change (false = true) in e. discriminate e.
Qed.
