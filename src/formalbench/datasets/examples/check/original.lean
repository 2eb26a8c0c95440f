import Mathlib

/-- Example task for `formalbench check`: the sum of two even numbers is even. -/
theorem even_add_even (a b : ℕ) (ha : Even a) (hb : Even b) : Even (a + b) := by
  sorry
