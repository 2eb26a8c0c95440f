(* rocq#19402: the bytecode VM of 8.10 - 8.19 computes `addmuldiv p x y` for a shift
   `p` over 63 differently from the kernel's own reduction, so `vm_compute` and `cbv`
   prove two different values equal. coqchk has no VM. *)
From Coq Require Import Uint63.
Open Scope uint63_scope.
Lemma vm_says : addmuldiv 70 5 5 = 320.
Proof. vm_compute. reflexivity. Qed.
Lemma lazy_says : addmuldiv 70 5 5 = 0.
Proof. cbv. reflexivity. Qed.
Theorem oops : False.
Proof.
  pose proof (f_equal (fun v => eqb v 0) (eq_trans (eq_sym vm_says) lazy_says)) as e.
  change (false = true) in e. discriminate e.
Qed.
