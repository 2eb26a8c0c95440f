/- formalbench-task
  kind: transformation
  constructions: answer
  informal: Express the problem "minimise |x| over x in R" as a linear program in standard form (minimise c.x subject to A_eq x = b_eq and A_ieq x <= b_ieq), and prove that the two problems are equivalent. -/
import Mathlib
import Amber

open Amber

noncomputable def P : OriginalProblem where
  n_var := 1
  constraints := fun _ => True
  objective := fun x => |x 0|

noncomputable def answer : LP := sorry

theorem answer_spec : equivalence P answer.toOriginalProblem := by
  sorry
