/- formalbench-task
  kind: proof
  informal: If Q relaxes P and S relaxes Q, then S relaxes P. -/
import Mathlib
import Amber

open Amber

theorem relax_chain {D₁ D₂ D₃ : Type} (P : MathProblem D₁ ℝ) (Q : MathProblem D₂ ℝ)
    (S : MathProblem D₃ ℝ) (h₁ : relaxes P Q) (h₂ : relaxes Q S) : relaxes P S := by
  sorry
