import Mathlib
import Amber

open Amber

/-- The next state, "solved for" by choice. -/
noncomputable def next_state (t : ℝ) : ℝ := Classical.epsilon (fun y : ℝ => y = t)

noncomputable def step (r x : ℝ) : ℝ := next_state (x * r)

noncomputable def algorithm (r : ℝ) : ℕ → ℝ
  | 0 => 1
  | n + 1 => step r (algorithm r n)

theorem next_state_eq (t : ℝ) : next_state t = t :=
  Classical.epsilon_spec (p := fun y : ℝ => y = t) ⟨t, rfl⟩

theorem algorithm_spec (r : ℝ) (n : ℕ) : algorithm r n = r ^ n := by
  induction n with
  | zero => simp [algorithm]
  | succ n ih => simp [algorithm, step, next_state_eq, ih, pow_succ]
