import Mathlib
import Amber

open Amber

noncomputable def P_src : MathProblem ℝ ℝ := ⟨fun _ => True, fun x => |x|⟩

def D_tgt : Type := ℝ

/-- "Some problem equivalent to the source", picked by choice. -/
noncomputable def P_tgt : MathProblem D_tgt ℝ :=
  Classical.epsilon (fun Q : MathProblem ℝ ℝ => relaxes P_src Q ∧ relaxes Q P_src)

theorem valid_transformation : relaxes P_src P_tgt ∧ relaxes P_tgt P_src :=
  Classical.epsilon_spec (p := fun Q : MathProblem ℝ ℝ => relaxes P_src Q ∧ relaxes Q P_src)
    ⟨P_src, relaxes_refl _, relaxes_refl _⟩
