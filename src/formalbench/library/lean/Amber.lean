/-
AMBER in Lean 4: the structures that construction-verification tasks are written against.

Written for formalbench from the description in AMBER (Appendix B.1), in our own words.
Targets Lean v4.24.0 with Mathlib at tag v4.24.0 (`import Mathlib`). It is not compiled by
formalbench's tests (no Lean toolchain there): they check that it lexes, that every
declaration is found, and that the tasks using it pass the verifier's text layer.
Use it with `import Amber` after adding this folder to your Lake project
(`formalbench library path --backend lean` prints it).
-/
import Mathlib

namespace Amber

open Matrix

/-- A problem: a decision domain `D`, which points are feasible, and the value of each. -/
structure MathProblem (D V : Type*) where
  constraints : D → Prop
  objective : D → V

/-- `relaxes P Q`: every feasible point of `P` has a feasible point of `Q` with the same
value. -/
def relaxes {D₁ D₂ V : Type*} (P : MathProblem D₁ V) (Q : MathProblem D₂ V) : Prop :=
  ∀ x, P.constraints x → ∃ y, Q.constraints y ∧ P.objective x = Q.objective y

/-- Two problems are equivalent when each relaxes the other. -/
def equivalent {D₁ D₂ V : Type*} (P : MathProblem D₁ V) (Q : MathProblem D₂ V) : Prop :=
  relaxes P Q ∧ relaxes Q P

theorem relaxes_refl {D V : Type*} (P : MathProblem D V) : relaxes P P :=
  fun x hx => ⟨x, hx, rfl⟩

theorem relaxes_trans {D₁ D₂ D₃ V : Type*} {P : MathProblem D₁ V} {Q : MathProblem D₂ V}
    {S : MathProblem D₃ V} (hPQ : relaxes P Q) (hQS : relaxes Q S) : relaxes P S := by
  intro x hx
  obtain ⟨y, hy, hxy⟩ := hPQ x hx
  obtain ⟨z, hz, hyz⟩ := hQS y hy
  exact ⟨z, hz, hxy.trans hyz⟩

/-- A problem over `ℝⁿ` with a real objective. -/
class OriginalProblem where
  n_var : ℕ
  constraints : (Fin n_var → ℝ) → Prop
  objective : (Fin n_var → ℝ) → ℝ

/-- The same problem as a `MathProblem`. -/
def OriginalProblem.toMathProblem (p : OriginalProblem) : MathProblem (Fin p.n_var → ℝ) ℝ :=
  ⟨p.constraints, p.objective⟩

/-- Equality constraints `g x = 0` and inequality constraints `h x ≤ 0`. -/
class OptProblem extends OriginalProblem where
  n_eqs : ℕ
  eq_constraints : (Fin n_var → ℝ) → (Fin n_eqs → ℝ)
  n_ieqs : ℕ
  ieq_constraints : (Fin n_var → ℝ) → (Fin n_ieqs → ℝ)
  constraints := fun x => eq_constraints x = 0 ∧ ieq_constraints x ≤ 0
  h_constraints : constraints = fun x => eq_constraints x = 0 ∧ ieq_constraints x ≤ 0 := by
    rfl

/-- Minimise `c ⬝ᵥ x` subject to `A_eq *ᵥ x = b_eq` and `A_ieq *ᵥ x ≤ b_ieq`. -/
class LP extends OptProblem where
  c : Fin n_var → ℝ
  A_eq : Matrix (Fin n_eqs) (Fin n_var) ℝ
  b_eq : Fin n_eqs → ℝ
  A_ieq : Matrix (Fin n_ieqs) (Fin n_var) ℝ
  b_ieq : Fin n_ieqs → ℝ
  objective := fun x => c ⬝ᵥ x
  eq_constraints := fun x => A_eq *ᵥ x - b_eq
  ieq_constraints := fun x => A_ieq *ᵥ x - b_ieq
  h_objective : objective = fun x => c ⬝ᵥ x := by rfl
  h_eq : eq_constraints = fun x => A_eq *ᵥ x - b_eq := by rfl
  h_ieq : ieq_constraints = fun x => A_ieq *ᵥ x - b_ieq := by rfl

/-- Minimise `c ⬝ᵥ x` subject to `A_eq *ᵥ x = b_eq` and `∑ i, x i • A_sd i + B_sd`
positive definite. -/
class SDP extends OriginalProblem where
  c : Fin n_var → ℝ
  n_eqs : ℕ
  A_eq : Matrix (Fin n_eqs) (Fin n_var) ℝ
  b_eq : Fin n_eqs → ℝ
  n_ieqs : ℕ
  A_sd : Fin n_var → Matrix (Fin n_ieqs) (Fin n_ieqs) ℝ
  B_sd : Matrix (Fin n_ieqs) (Fin n_ieqs) ℝ
  constraints := fun x => A_eq *ᵥ x - b_eq = 0 ∧ (∑ i, x i • A_sd i + B_sd).PosDef
  objective := fun x => c ⬝ᵥ x
  h_constraints :
      constraints = fun x => A_eq *ᵥ x - b_eq = 0 ∧ (∑ i, x i • A_sd i + B_sd).PosDef := by
    rfl
  h_objective : objective = fun x => c ⬝ᵥ x := by rfl

/-- `q` relaxes `p` with the same objective value (the AMBER library's `subequivlance`). -/
def subequivalence (p q : OriginalProblem) : Prop :=
  ∀ x : Fin p.n_var → ℝ, p.constraints x →
    ∃ y : Fin q.n_var → ℝ, q.constraints y ∧ q.objective y = p.objective x

/-- Each of `p`, `q` relaxes the other. -/
def equivalence (p q : OriginalProblem) : Prop :=
  subequivalence p q ∧ subequivalence q p

/-- The Lagrangian of `p` at multipliers `lam` (equalities) and `mu` (inequalities). -/
def lagrangian (p : OptProblem) (lam : Fin p.n_eqs → ℝ) (mu : Fin p.n_ieqs → ℝ)
    (x : Fin p.n_var → ℝ) : ℝ :=
  lam ⬝ᵥ p.eq_constraints x + mu ⬝ᵥ p.ieq_constraints x + p.objective x

/-- A dual problem of `p`: its dual function, the infimum of the Lagrangian over `x` in the
extended reals, and its domain, where that infimum is not `⊥`. -/
class DualProblem (p : OptProblem) where
  dual_objective : (Fin p.n_eqs → ℝ) → (Fin p.n_ieqs → ℝ) → EReal
  dual_domain : Set ((Fin p.n_eqs → ℝ) × (Fin p.n_ieqs → ℝ))
  h_objective : dual_objective = fun lam mu => ⨅ x, ((lagrangian p lam mu x : ℝ) : EReal)
  h_domain : dual_domain = {lm | dual_objective lm.1 lm.2 ≠ ⊥}

end Amber
