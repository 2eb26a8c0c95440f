import Mathlib
import Amber

open Amber

noncomputable def answer : ℝ × ℝ := (2, 1)

theorem answer_spec : answer.1 + answer.2 = 3 ∧ answer.1 - answer.2 = 1 := by
  constructor <;> norm_num [answer]
