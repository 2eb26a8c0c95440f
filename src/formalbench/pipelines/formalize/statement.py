"""What a formal statement candidate is, per assistant, and the checks made before compiling it.

A translation is a whole file: the imports it needs and one theorem whose proof is a hole
(Lean `sorry`, Coq `Admitted.`). Holes are the point here, so they are allowed; everything
else the strict verifier forbids still is, because a statement that declares an `axiom` or a
`Parameter` outside its theorem can make any goal true. Those findings, like a missing
theorem, become error diagnostics of the round and are fed back like compiler errors.

A reply with no usable code is not compiled at all: it is a formatting failure (no fenced
block, a block in the other assistant's language, an empty block), recorded on the round and
counted per model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from formalbench.checking.decls import split_decls
from formalbench.checking.forbidden import forbidden_findings
from formalbench.core.config import VerifierPolicy
from formalbench.core.gate import OVERSIZED, Unsafe, max_source_bytes
from formalbench.core.records import CheckResult, CheckStatus, Diagnostic, Language, Severity
from formalbench.solvers.extract import code_blocks


@dataclass(frozen=True)
class Assistant:
    """How prompts name an assistant and how its answers are recognised."""

    language: Language
    name: str  # as prompts say it
    fence: str  # code block tag asked for
    tags: frozenset[str]  # tags accepted as this language
    hole: str  # how a proof is left open
    holes: frozenset[str]  # hole tokens a statement may contain
    theorem_kinds: frozenset[str]  # declaration kinds (as split_decls names them) that state


ASSISTANTS: dict[Language, Assistant] = {
    Language.lean: Assistant(
        Language.lean,
        "Lean 4 with Mathlib",
        "lean",
        frozenset({"lean", "lean4", "lean 4"}),
        "`:= by sorry`",
        frozenset({"sorry", "admit"}),
        frozenset({"theorem"}),
    ),
    Language.coq: Assistant(
        Language.coq,
        "Coq (standard library)",
        "coq",
        frozenset({"coq", "rocq", "v", "gallina"}),
        "`Proof.` followed by `Admitted.`",
        frozenset({"Admitted", "admit"}),
        frozenset({"Theorem"}),
    ),
}
_OTHER_LOOKS = {
    # a strong sign that an untagged block is the other assistant's language
    Language.coq: re.compile(r"(?m)^\s*(import\s+Mathlib|theorem\s+\w+.*:=|open\s+\w+\s*$)"),
    Language.lean: re.compile(r"(?m)^\s*(Require\s+Import|Theorem\s+\w+|Proof\.)"),
}


class FormatProblem(ValueError):
    """The model's reply holds no statement to compile; the message says why."""


def extract_statement(output: str, assistant: Assistant) -> str:
    """The code of the reply's statement block, or FormatProblem.

    Blocks tagged for the assistant (or untagged) count; the last one that states a theorem
    wins (models tend to end with their final version), else the last one.
    """
    blocks = code_blocks(output)
    if not blocks:
        raise FormatProblem("the answer has no fenced code block")
    usable = [b for b in blocks if b.tag in assistant.tags or not b.tag]
    if not usable:
        tags = ", ".join(sorted({f"`{b.tag}`" for b in blocks}))
        raise FormatProblem(
            f"wrong language: the code block is tagged {tags}, expected `{assistant.fence}`"
        )
    stating = [b for b in usable if _states_theorem(b.body, assistant)]
    block = (stating or usable)[-1]
    code = block.body.strip("\n")
    if not code.strip():
        raise FormatProblem("the code block is empty")
    if not stating and _OTHER_LOOKS[assistant.language].search(code):
        raise FormatProblem(
            f"wrong language: the code is not {assistant.name} (no theorem in that language)"
        )
    return code + "\n"


def _states_theorem(code: str, assistant: Assistant) -> bool:
    try:
        decls = split_decls(code, assistant.language)
    except Exception:  # an unlexable block simply states nothing
        return False
    return any(d.kind in assistant.theorem_kinds for d in decls)


def static_diagnostics(code: str, assistant: Assistant) -> list[Diagnostic]:
    """Errors the assistant would not report: no theorem, or an escape outside the holes."""
    if len(code) > max_source_bytes():  # the text layer would spend seconds per MB on it
        return [_error(Unsafe(OVERSIZED).message, None)]
    decls = split_decls(code, assistant.language)
    found: list[Diagnostic] = []
    if not any(d.kind in assistant.theorem_kinds for d in decls):
        found.append(
            _error(f"the file states no theorem (expected a `{_kind_word(assistant)}`)", None)
        )
    forbidden = [
        word
        for word in VerifierPolicy().forbidden_for(assistant.language)
        if word not in assistant.holes
    ]
    for finding in forbidden_findings(decls, forbidden, language=assistant.language):
        found.append(
            _error(
                f"`{finding.subject}` is not allowed in a statement: put every assumption "
                "inside the theorem instead",
                finding.line,
                finding.column,
            )
        )
    return found


def _kind_word(assistant: Assistant) -> str:
    return "theorem" if assistant.language == Language.lean else "Theorem"


def _error(message: str, line: int | None, column: int | None = None) -> Diagnostic:
    return Diagnostic(
        severity=Severity.error, message=message, line=line, column=column, kind="formalize"
    )


def result_diagnostics(result: CheckResult, timeout: float) -> list[Diagnostic]:
    """The assistant's diagnostics, plus one error saying so when the check did not finish."""
    diagnostics = list(result.diagnostics)
    if result.status == CheckStatus.timeout:
        diagnostics.append(_error(f"the check did not finish within {timeout:g} s", None))
    elif result.status not in (CheckStatus.ok, CheckStatus.refused):  # refused: errors say why
        detail = f": {result.detail.strip()[:300]}" if result.detail else ""
        diagnostics.append(_error(f"the checker stopped ({result.status.value}){detail}", None))
    return diagnostics


def describe(diagnostics: list[Diagnostic], code: str, limit: int = 8) -> str:
    """The errors as a model should read them: position, message, and the line they are on."""
    lines = code.splitlines()
    errors = [d for d in diagnostics if d.severity == Severity.error] or diagnostics
    out: list[str] = []
    for d in errors[:limit]:
        where = f"line {d.line}" + (f", column {d.column}" if d.column is not None else "")
        head = f"{where}: " if d.line is not None else ""
        out.append(f"- {head}{d.message.strip()}")
        if d.line is not None and 1 <= d.line <= len(lines) and lines[d.line - 1].strip():
            out.append(f"    at: {lines[d.line - 1].strip()}")
    if len(errors) > limit:
        out.append(f"- ... and {len(errors) - limit} more")
    return "\n".join(out)
