import Mathlib
import Amber

open Amber

noncomputable def P : OriginalProblem where
  n_var := 1
  constraints := fun _ => True
  objective := fun x => |x 0|

noncomputable def answer : LP where
  n_var := 2
  n_eqs := 0
  n_ieqs := 2
  c := ![0, 1]
  A_eq := 0
  b_eq := 0
  A_ieq := !![1, -1; -1, -1]
  b_ieq := 0

theorem answer_spec : equivalence P answer.toOriginalProblem := by
  constructor
  · intro x _
    refine ⟨![x 0, |x 0|], ?_, ?_⟩
    · refine ⟨Subsingleton.elim _ _, fun i => ?_⟩
      fin_cases i <;>
        simp [answer, Matrix.mulVec, dotProduct, Fin.sum_univ_two] <;>
        linarith [le_abs_self (x 0), neg_abs_le (x 0)]
    · simp [answer, P, dotProduct, Fin.sum_univ_two]
  · rintro y ⟨_, hy⟩
    have h0 := hy 0
    have h1 := hy 1
    simp [answer, Matrix.mulVec, dotProduct, Fin.sum_univ_two] at h0 h1
    refine ⟨fun _ => y 1, trivial, ?_⟩
    simp [answer, P, dotProduct, Fin.sum_univ_two]
    rw [abs_of_nonneg (by linarith)]
