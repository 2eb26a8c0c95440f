/- formalbench-task
  kind: evaluation
  constructions: answer
  informal: Solve the linear system x + y = 3, x - y = 1: give the pair (x, y) and prove that it solves both equations. -/
import Mathlib
import Amber

open Amber

noncomputable def answer : ℝ × ℝ := sorry

theorem answer_spec : answer.1 + answer.2 = 3 ∧ answer.1 - answer.2 = 1 := by
  sorry
