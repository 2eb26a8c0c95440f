/- formalbench-task
  kind: algorithm
  constructions: step
  informal: Design the loop body of an algorithm that, started from 1, holds r^n after n steps, and prove it. -/
import Mathlib
import Amber

open Amber

noncomputable def step (r x : ℝ) : ℝ := sorry

noncomputable def algorithm (r : ℝ) : ℕ → ℝ
  | 0 => 1
  | n + 1 => step r (algorithm r n)

theorem algorithm_spec (r : ℝ) (n : ℕ) : algorithm r n = r ^ n := by
  sorry
