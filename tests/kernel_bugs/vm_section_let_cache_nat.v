(* rocq#16957, a second instance: a `Let` of type nat whose VM value is spoiled by a
   definition built in Ltac, then a `Qed` lemma closed by a VM cast that the kernel checks
   with the spoiled value. *)
Section T.
Let n : nat := 3.
Definition spoil : bool :=
  ltac:(change_no_check 5 in (value of n); let v := eval vm_compute in (Nat.eqb n 5) in exact v).
Lemma wrong : n = 5.
Proof. vm_cast_no_check (@eq_refl nat 5). Qed.
End T.
Theorem oops : False.
Proof. pose proof wrong as H. discriminate H. Qed.
