/- formalbench-task
  kind: transformation
  constructions: D_tgt P_tgt
  informal: Minimising |x| over the reals is not linear. Give an equivalent problem (a new decision domain, constraints and objective) whose constraints and objective are linear, using a slack variable, and prove that each problem relaxes the other. -/
import Mathlib
import Amber

open Amber

noncomputable def P_src : MathProblem ℝ ℝ := ⟨fun _ => True, fun x => |x|⟩

def D_tgt : Type := sorry

noncomputable def P_tgt : MathProblem D_tgt ℝ := sorry

theorem valid_transformation : relaxes P_src P_tgt ∧ relaxes P_tgt P_src := by
  sorry
