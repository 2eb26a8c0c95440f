import Mathlib
import Amber

open Amber

theorem relax_chain {D₁ D₂ D₃ : Type} (P : MathProblem D₁ ℝ) (Q : MathProblem D₂ ℝ)
    (S : MathProblem D₃ ℝ) (h₁ : relaxes P Q) (h₂ : relaxes Q S) : relaxes P S := by
  intro x hx
  obtain ⟨y, hy, hxy⟩ := h₁ x hx
  obtain ⟨z, hz, hyz⟩ := h₂ y hy
  exact ⟨z, hz, hxy.trans hyz⟩
