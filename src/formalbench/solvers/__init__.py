"""Solvers: provers that turn a task into verified attempts.

`make_solver(name, verifier, model, config)` builds one of: `portfolio` (no model, the
default), `whole` (whole-proof sampling), `sequential` (hole by hole with repair turns),
`agent` (tool loop with search / check / run / submit). Each `solve(task, sample)` returns an
`Attempt` and never raises for model, budget or backend failures.
"""

from formalbench.solvers.base import SOLVERS, Solver, SolverConfig, make_solver, solver_class

__all__ = ["SOLVERS", "Solver", "SolverConfig", "make_solver", "solver_class"]
