import Mathlib
import Amber

open Amber

noncomputable def f (a b x : ℝ) : ℝ := (x - a) ^ 2 + (x - b) ^ 2

theorem exists_min (a b : ℝ) : ∃ m, ∀ y, f a b m ≤ f a b y :=
  ⟨(a + b) / 2, fun y => by unfold f; nlinarith [sq_nonneg (y - (a + b) / 2)]⟩

noncomputable def answer (a b : ℝ) : ℝ := Classical.choose (exists_min a b)

theorem answer_spec (a b : ℝ) : ∀ y, f a b (answer a b) ≤ f a b y :=
  Classical.choose_spec (exists_min a b)
