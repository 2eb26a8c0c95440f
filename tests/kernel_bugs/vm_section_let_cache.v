(* rocq#16957: up to 8.16.1 the VM keeps one cached value per section variable; a tactic
   that changes a `Let`'s body (`change_no_check`) and evaluates it fills that cache with
   the wrong value, which the kernel's later VM checks reuse. coqchk has no VM. *)
Section S.
Let x : bool := true.
Definition poison : unit :=
  ltac:(change_no_check false in (value of x); let v := eval vm_compute in (negb x) in exact tt).
Definition bad : x = false := ltac:(vm_cast_no_check (@eq_refl bool false)).
End S.
Theorem oops : False.
Proof. pose proof bad as H. discriminate H. Qed.
