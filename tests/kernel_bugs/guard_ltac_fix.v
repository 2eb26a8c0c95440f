(* rocq#21839: the guard checker of 8.16 - 9.2.0 reduces a term built by `ltac:(fix ..)`
   in the wrong context, so a recursive call on a value that is no subterm passes. *)
Theorem oops : False.
Proof.
  exact ((fix loop (u : unit) : False :=
    let h (e : False) := match e return False with end in
    let same (w : unit) := w in
    loop ((ltac:(fix again 1; exact same) : unit -> unit) u)) tt).
Qed.
