"""The verifier's gate for generated files: a patched file reaches coqc only if it adds no
forbidden construct (holes, axioms, kernel switches, file-system commands). Commands copied
unchanged from the file before the edit are exempt, as in the strict verifier: the library
itself may declare a `Parameter` or an `Axiom`; the model may not add one.

An answer may not touch warnings either (`[Local|Global|Export] Set/Unset Warnings`, with
any prefix or attribute): an APE answer is complete only without warnings, so the answer
cannot be the one to silence them. A command copied unchanged from the file before is the
library's own and stays exempt.
"""

from __future__ import annotations

from formalbench.checking.decls import Decl, split_decls
from formalbench.checking.forbidden import forbidden_findings
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Finding, Language, Reason

WARNINGS_SWITCH = "Set Warnings"


def _text(decl: Decl) -> str:
    return " ".join(t.text for t in decl.tokens)


def _touches_warnings(decl: Decl) -> bool:
    texts = [t.text for t in decl.tokens]
    return any(
        w == "Warnings" and i > 0 and texts[i - 1] in ("Set", "Unset") for i, w in enumerate(texts)
    )


def gate_findings(before: str, candidate: str, language: str) -> list[Finding]:
    lang = Language(language)
    old = {_text(d) for d in split_decls(before, lang)}
    cand = split_decls(candidate, lang)
    exempt = {d.index for d in cand if _text(d) in old}
    found = forbidden_findings(cand, VerifierPolicy().forbidden_for(lang), exempt, lang)
    if lang == Language.coq:
        found += [
            Finding(
                reason=Reason.forbidden_construct,
                subject=WARNINGS_SWITCH,
                message="the answer changes which warnings Coq reports (`Set Warnings`)",
            )
            for d in cand
            if d.index not in exempt and _touches_warnings(d)
        ]
    return found
