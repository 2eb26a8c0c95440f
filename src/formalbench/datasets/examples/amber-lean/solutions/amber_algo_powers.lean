import Mathlib
import Amber

open Amber

noncomputable def step (r x : ℝ) : ℝ := x * r

noncomputable def algorithm (r : ℝ) : ℕ → ℝ
  | 0 => 1
  | n + 1 => step r (algorithm r n)

theorem algorithm_spec (r : ℝ) (n : ℕ) : algorithm r n = r ^ n := by
  induction n with
  | zero => simp [algorithm]
  | succ n ih => simp [algorithm, step, ih, pow_succ]
