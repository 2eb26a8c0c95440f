"""Configuration records: what the strict verifier forbids and allows.

Defaults follow DESIGN.md "Strict verification"; every list is configurable.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pydantic import Field

from formalbench.core.records import Language, Record

LEAN_FORBIDDEN: tuple[str, ...] = (
    "sorry",
    "admit",
    "sorryAx",
    "axiom",
    "exact?",
    "apply?",
    # CAM-Bench's list adds the other search tactics (they print a suggestion instead of
    # being a proof to keep) and `opaque` (a constant whose value nothing can unfold)
    "rw?",
    "simp?",
    "simp?!",
    "simp_all?",
    "simp_all?!",
    "dsimp?",
    "dsimp?!",
    "aesop?",
    "solve_by_elim?",
    "library_search",
    "opaque",
    "native_decide",
    "debug.skipKernelTC",
    "implemented_by",
    "extern",
    "unsafe",
    "#exit",
)
COQ_FORBIDDEN: tuple[str, ...] = (
    "Admitted",
    "admit",
    "Abort",
    "Axiom",
    "Axioms",
    "Parameter",
    "Parameters",
    "Hypothesis",
    "Hypotheses",
    "Conjecture",
    "Load",  # reads and runs another file from disk
    "Redirect",  # writes the output of a command to a file
)
LEAN_ALLOWED_AXIOMS: tuple[str, ...] = ("propext", "Classical.choice", "Quot.sound")
CHOICE_CONSTANTS: tuple[str, ...] = (
    "Classical.choose",
    "Exists.choose",
    "Classical.epsilon",
    "Classical.indefiniteDescription",
)
# What the elaborated value of a construction must not reach (checking/value_check.py): a
# choice operator, or a library infimum/supremum (picking the optimum of the problem's own
# feasible set is no construction). An entry is a full name or a last-name suffix.
COQ_VALUE_CHOICE: tuple[str, ...] = (
    "epsilon",
    "epsilon_statement",
    "iota",
    "iota_statement",
    "constructive_indefinite_description",
    "constructive_definite_description",
    "classical_indefinite_description",
    "classical_definite_description",
    "Coq.Logic.ClassicalEpsilon.epsilon",
    "Coq.Logic.ChoiceFacts.FunctionalChoice",
)
COQ_VALUE_EXTREMA: tuple[str, ...] = (
    "Glb_Rbar",
    "Lub_Rbar",
    "Rbar_glb",
    "Rbar_lub",
    "Inf_seq",
    "Sup_seq",
    "LimInf_seq",
    "LimSup_seq",
    "completeness",
    "glb",
    "lub",
)
LEAN_VALUE_CHOICE: tuple[str, ...] = (
    "Classical.choose",
    "Exists.choose",
    "Nonempty.some",
    "Classical.epsilon",
    "Classical.choice",
    "Classical.indefiniteDescription",
)
LEAN_VALUE_EXTREMA: tuple[str, ...] = (
    "sInf",
    "sSup",
    "iInf",
    "iSup",
    "Function.argmin",
    "Function.argminOn",
    "Function.invFun",
)
# Words refused in the value of a construction task and in the helpers it uses: a `partial`
# def is opaque to the kernel, so nothing can be proved about the value it computes.
CONSTRUCTION_FORBIDDEN: tuple[str, ...] = ("partial",)


class VerifierPolicy(Record):
    """What a candidate may and may not contain. `None` lists take the language default."""

    forbidden: list[str] | None = None
    # Lean: the allowed axioms (None: propext, Classical.choice, Quot.sound). Coq: fully
    # qualified names allowed on top of the presets (`--allow-axiom`, a task's field)
    allowed_axioms: list[str] | None = None
    # Coq: the axiom presets allowed (checking/coq_presets.py), None for the default set
    # (`DEFAULT_PRESETS`), [] for none; every other library axiom is refused
    axiom_presets: list[str] | None = None
    forbid_warnings: bool = False  # APE tasks: a warning fails the candidate
    choice_constants: list[str] = Field(default_factory=lambda: list(CHOICE_CONSTANTS))
    construction_forbidden: list[str] = Field(
        default_factory=lambda: list(CONSTRUCTION_FORBIDDEN)
    )  # construction tasks only: in the value and its helpers (forbidden_construct)
    # The value-level check (checking/value_check.py); None lists take the language default.
    value_check: bool = True
    value_choice: list[str] | None = None
    value_extrema: list[str] | None = None  # [] turns the infimum/supremum rule off
    # Coq: a pass is confirmed by coqchk of the same Coq on the verifier-compiled library
    # (checking/coq_replay.py); off: coqc's kernel alone decides
    replay: bool = True

    def value_refused_for(self, language: Language) -> tuple[list[str], list[str]]:
        """(choice operators, library infima/suprema) a construction's value must not use."""
        lean = language == Language.lean
        choice = self.value_choice
        extrema = self.value_extrema
        if choice is None:
            choice = list(LEAN_VALUE_CHOICE if lean else COQ_VALUE_CHOICE)
        if extrema is None:
            extrema = list(LEAN_VALUE_EXTREMA if lean else COQ_VALUE_EXTREMA)
        return list(choice), list(extrema)

    def forbidden_for(self, language: Language) -> list[str]:
        if self.forbidden is not None:
            return list(self.forbidden)
        return list(LEAN_FORBIDDEN if language == Language.lean else COQ_FORBIDDEN)

    def allowed_axioms_for(self, language: Language) -> list[str] | None:
        """Lean: the allowed axiom names. Coq: the explicit names only (None where none),
        the presets come on top (`checking.coq_presets.allowed_names`)."""
        if self.allowed_axioms is not None:
            return list(self.allowed_axioms)
        if language == Language.lean:
            return list(LEAN_ALLOWED_AXIOMS)
        return None

    def with_axioms(self, names: Sequence[str], language: Language) -> VerifierPolicy:
        """This policy with `names` (a task's `allowed_axioms`) allowed too."""
        if not names:
            return self
        known = self.allowed_axioms_for(language) or []
        return self.model_copy(
            update={"allowed_axioms": [*known, *(n for n in names if n not in known)]}
        )


def cache_path(name: str) -> Path:
    """Where formalbench keeps the per-user cache `name` (a folder or a file) that outlives a
    run: `$FORMALBENCH_CACHE/<name>`, else `$XDG_CACHE_HOME` (or `~/.cache`)/formalbench/<name>.
    One rule for every cache (compiled libraries, the dependency walk, retrieval indexes)."""
    explicit = os.environ.get("FORMALBENCH_CACHE")
    if explicit:
        return Path(explicit) / name
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "formalbench" / name
