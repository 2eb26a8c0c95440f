(* rocq#19402, a second instance: a shift of exactly 64, read through `eqb` so that each
   side is a boolean computed by one reduction machine (VM: 7, the kernel's lazy one: 0). *)
From Coq Require Import Uint63.
Open Scope uint63_scope.
Definition probe := addmuldiv 64 7 9.
Lemma by_vm : eqb probe 0 = false.
Proof. vm_compute. reflexivity. Qed.
Lemma by_lazy : eqb probe 0 = true.
Proof. lazy. reflexivity. Qed.
Theorem oops : False.
Proof. pose proof (eq_trans (eq_sym by_vm) by_lazy) as e. discriminate e. Qed.
