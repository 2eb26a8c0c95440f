import Mathlib
import Amber

open Amber

noncomputable def P_src : MathProblem ℝ ℝ := ⟨fun _ => True, fun x => |x|⟩

def D_tgt : Type := ℝ × ℝ

noncomputable def P_tgt : MathProblem D_tgt ℝ :=
  ⟨fun p : ℝ × ℝ => -p.2 ≤ p.1 ∧ p.1 ≤ p.2, fun p : ℝ × ℝ => p.2⟩

theorem valid_transformation : relaxes P_src P_tgt ∧ relaxes P_tgt P_src := by
  constructor
  · intro x _
    exact ⟨((x, |x|) : ℝ × ℝ), ⟨neg_abs_le x, le_abs_self x⟩, rfl⟩
  · rintro ⟨x, t⟩ ⟨h1, h2⟩
    refine ⟨t, trivial, ?_⟩
    show t = |t|
    rw [abs_of_nonneg (by linarith)]
