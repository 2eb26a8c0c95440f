"""The verifier's gate for generated files: a patched file reaches coqc only if it adds no
forbidden construct (holes, axioms, kernel switches, file-system commands). Commands copied
unchanged from the file before the edit are exempt, as in the strict verifier: the library
itself may declare a `Parameter` or an `Axiom`; the model may not add one.
"""

from __future__ import annotations

from formalbench.checking.decls import split_decls
from formalbench.checking.forbidden import forbidden_findings
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Finding, Language


def _text(decl) -> str:
    return " ".join(t.text for t in decl.tokens)


def gate_findings(before: str, candidate: str, language: str) -> list[Finding]:
    lang = Language(language)
    old = {_text(d) for d in split_decls(before, lang)}
    cand = split_decls(candidate, lang)
    exempt = {d.index for d in cand if _text(d) in old}
    return forbidden_findings(cand, VerifierPolicy().forbidden_for(lang), exempt, lang)
