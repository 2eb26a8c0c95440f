import Mathlib
import Amber

open Amber

noncomputable def f (a b x : ℝ) : ℝ := (x - a) ^ 2 + (x - b) ^ 2

noncomputable def answer (a b : ℝ) : ℝ := (a + b) / 2

theorem answer_spec (a b : ℝ) : ∀ y, f a b (answer a b) ≤ f a b y := by
  intro y
  unfold f answer
  nlinarith [sq_nonneg (y - (a + b) / 2)]
