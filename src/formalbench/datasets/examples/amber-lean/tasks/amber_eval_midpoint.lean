/- formalbench-task
  kind: evaluation
  constructions: answer
  informal: Given reals a and b, find the point m minimising (m - a)^2 + (m - b)^2, as an expression in a and b, and prove that it is a minimiser. -/
import Mathlib
import Amber

open Amber

noncomputable def f (a b x : ℝ) : ℝ := (x - a) ^ 2 + (x - b) ^ 2

noncomputable def answer (a b : ℝ) : ℝ := sorry

theorem answer_spec (a b : ℝ) : ∀ y, f a b (answer a b) ≤ f a b y := by
  sorry
