import Mathlib
import Amber

open Amber

theorem solvable : ∃ p : ℝ × ℝ, p.1 + p.2 = 3 ∧ p.1 - p.2 = 1 := ⟨(2, 1), by norm_num⟩

noncomputable def answer : ℝ × ℝ := solvable.choose

theorem answer_spec : answer.1 + answer.2 = 3 ∧ answer.1 - answer.2 = 1 :=
  solvable.choose_spec
