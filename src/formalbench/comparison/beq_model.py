"""BEq tier 2: a model proves the directions the portfolio (tier 1) could not.

For each such direction the model is asked `samples` times (seeds 0..k-1, default k = 4,
temperature 0.7) for the tactic script of one lemma: the goal statement with the other
statement as the hypothesis `fb_other` (the prompt is `prompts/beq_direction.md`). A script
is kept only if every tactic it runs is on the allowed list of its assistant (`COQ_TACTICS`,
`LEAN_TACTICS`), it never uses a banned word (`sorry`, `admit`, `Admitted`, `Axiom`,
`by_contra`, the search tactics) and it names `fb_other`; the lemma with that script is then
checked by the strict verifier (statement unchanged, no forbidden construct, only the
allowed axioms, accepted by the assistant's kernel). The first sample that passes decides.

A direction whose goal the tier-1 control proved without the other statement stays
trivial: no model proof can make it count. The tier that decided is recorded on the result
(`"portfolio"`, or `"model"` when a model proof decided a direction), with the model, k, the
temperature and the tactic list in its notes.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from dataclasses import dataclass

from formalbench.backends.base import Backend
from formalbench.checking.verifier import StrictVerifier
from formalbench.comparison.beq_coq import (
    BASE_HEADER,
    BeqResult,
    CoqStatement,
    Direction,
    direction_setup,
)
from formalbench.comparison.beq_lean import LeanStatement, section, sides_source, statement_name
from formalbench.comparison.beq_lean import direction_setup as lean_setup
from formalbench.comparison.coq_sides import require_line
from formalbench.core.records import Language
from formalbench.llm.base import ChatModel
from formalbench.llm.prompts import load_prompt
from formalbench.solvers.extract import FormatFailure, pick_block

PROMPT = "beq_direction"
NAME = "fb_beq_direction"
OTHER = "fb_other"
SAMPLES = 4
TEMPERATURE = 0.7
MAX_TOKENS = 2048
# BEq's "normal"/"advanced" sets in each assistant's words, plus the closers the tier-1
# control runs too (so a goal they prove alone is already marked trivial)
COQ_TACTICS = [
    "intro",
    "intros",
    "apply",
    "eapply",
    "exact",
    "rewrite",
    "split",
    "exists",
    "destruct",
    "specialize",
    "assert",
    "left",
    "right",
    "symmetry",
    "assumption",
    "reflexivity",
    "unfold",
    "simpl",
    "constructor",
    "lia",
    "lra",
    "auto",
    "eauto",
]
LEAN_TACTICS = [
    "intro",
    "intros",
    "rintro",
    "apply",
    "exact",
    "refine",
    "constructor",
    "use",
    "left",
    "right",
    "cases'",
    "rcases",
    "obtain",
    "have",
    "specialize",
    "rw",
    "nth_rw",
    "symm",
    "change",
    "convert",
    "ext",
    "exfalso",
    "by_cases",
    "choose",
    "assumption",
    "rfl",
    "linarith",
    "omega",
]
BANNED = ("sorry", "admit", "Admitted", "Axiom", "Abort", "by_contra", "native_decide")
SEARCH = ("exact?", "apply?", "rw?", "simp?", "hint")


@dataclass
class DirectionTask:
    """One direction as a task: the file with its proof open (what the verifier compares
    against), the lemma the model sees, and the first step of the proof we write."""

    language: Language
    original: str
    lemma: str
    setup: str
    shown_setup: str = ""  # the setup as the model is told it (default: `setup`)

    def candidate(self, script: str) -> str:
        body = "\n".join("  " + line for line in script.strip().splitlines())
        if self.language == Language.coq:
            return self.original.replace(
                "Proof.\nAdmitted.", f"Proof.\n  {self.setup}\n{body}\nQed."
            )
        return self.original.replace("  sorry\n", f"  {self.setup}\n{body}\n")


def coq_direction(given: CoqStatement, goal: CoqStatement, names: tuple[str, str]) -> DirectionTask:
    """The checked lemma speaks of both statements by their constants in the libraries of
    `coq_sides` (`names`: given, goal), each elaborated in its own header; the goal's header
    follows, only so that the model's script is read as the goal's text was. The model is
    shown the statements as written."""
    head = f"Theorem {NAME} : {names[0]} -> {names[1]}.\nProof.\n"
    original = BASE_HEADER + require_line(names) + goal.header + head + "Admitted.\n"
    shown = f"intro {OTHER}."
    lemma = f"Theorem {NAME} : ({given.term}) -> ({goal.term}).\nProof.\n"
    return DirectionTask(
        Language.coq,
        original,
        lemma + f"  {shown}\n  (* your script *)",
        direction_setup(*names),
        shown,
    )


def lean_direction(
    given: LeanStatement, goal: LeanStatement, roles: tuple[str, str]
) -> DirectionTask:
    """As `coq_direction`: the checked lemma speaks of the statements' definitions, each
    elaborated in a section of its own header (`beq_lean.sides_source`); the lemma sits in
    a section of the goal's header so that the model's script reads as the goal did."""
    sides, _ = sides_source(dict(zip(roles, (given, goal), strict=True)))
    g, q = statement_name(roles[0]), statement_name(roles[1])
    head = f"theorem {NAME} ({OTHER} : {g}) :\n    {q} := by\n"
    original = sides + section(goal, head + "  sorry") + "\n"
    shown = f"theorem {NAME} ({OTHER} : {given.prop}) :\n    {goal.prop} := by\n"
    return DirectionTask(
        Language.lean,
        original,
        shown + "  intros\n  -- your script",
        lean_setup(g, q),
        "intros",
    )


def _split_top(text: str, seps: tuple[str, ...]) -> list[str]:
    """`text` cut at the separators that stand outside brackets."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0:
            sep = next((s for s in seps if text.startswith(s, i)), None)
            if sep is not None:
                parts.append(text[start:i])
                i += len(sep)
                start = i
                continue
        i += 1
    parts.append(text[start:])
    return parts


def _heads(piece: str, seps: tuple[str, ...]) -> Iterator[str]:
    """The tactic names a (combined) tactic runs first: `a; [b | c]` -> a, b, c."""
    for part in _split_top(piece, seps):
        part = part.strip().lstrip("·").strip()
        if not part:
            continue
        if part[0] in "([" and part[-1] in ")]":
            yield from _heads(part[1:-1], (*seps, "|"))
            continue
        word = re.match(r"[A-Za-z_][\w'.]*[?!]?", part)
        yield word.group(0) if word else part[:20]


def tactic_heads(script: str, language: Language) -> list[str]:
    """Every tactic name the script starts a step with."""
    if language == Language.coq:
        text = re.sub(r"\(\*.*?\*\)", " ", script, flags=re.S)
        steps = [s.strip().lstrip("-+*{} \t\n") for s in re.split(r"\.(?=\s|$)", text)]
        steps = [s.rstrip("}").strip() for s in steps if s.strip() not in ("Proof", "Qed", "")]
        return [h for s in steps for h in _heads(s, (";",))]
    text = re.sub(r"/-.*?-/", " ", script, flags=re.S)
    lines = [re.sub(r"--.*", "", line) for line in text.splitlines()]
    return [h for line in lines if line.strip() for h in _heads(line, ("<;>", ";"))]


def script_problem(script: str, language: Language) -> str | None:
    """Why a model's script is refused before any check (None: it may be checked)."""
    if not script.strip():
        return "empty script"
    for word in BANNED:
        if re.search(rf"(?<![\w.']){re.escape(word)}(?![\w'])", script):
            return f"uses `{word}`"
    for word in SEARCH:
        if re.search(rf"(?<![\w.']){re.escape(word)}(?![\w'?])", script):
            return f"uses the search tactic `{word}`"
    if not re.search(rf"(?<![\w.']){OTHER}(?![\w'])", script):
        return f"never uses `{OTHER}`"
    allowed = COQ_TACTICS if language == Language.coq else LEAN_TACTICS
    outside = [h for h in tactic_heads(script, language) if h not in allowed]
    return f"tactic `{outside[0]}` is not on the allowed list" if outside else None


def _script(output: str, language: Language) -> str:
    """The model's script: its last code block, without a `Proof.`/`Qed.`/`by` frame."""
    body = pick_block(output, language).body
    lines = [ln for ln in body.splitlines() if ln.strip() not in ("Proof.", "Qed.", "by")]
    return "\n".join(lines)


class ModelTier:
    """Samples and checks model proofs of BEq directions (see the module docstring)."""

    def __init__(
        self,
        model: ChatModel,
        backend: Backend,
        samples: int = SAMPLES,
        temperature: float = TEMPERATURE,
        timeout: float = 120.0,
    ) -> None:
        self.model = model
        self.verifier = StrictVerifier(backend)
        self.language = backend.language
        self.samples = samples
        self.temperature = temperature
        self.timeout = timeout
        self.tactics = COQ_TACTICS if self.language == Language.coq else LEAN_TACTICS

    def note(self) -> str:
        return (
            f"tier 2: model {self.model.spec}, k={self.samples}, T={self.temperature}, "
            f"tactics {' '.join(self.tactics)}"
        )

    async def prove(self, task: DirectionTask) -> tuple[bool, str]:
        """Whether a sample's proof passes the strict verifier, and what decided."""
        assistant = "Coq" if task.language == Language.coq else "Lean 4 with Mathlib"
        messages = load_prompt(PROMPT).render(
            assistant=assistant,
            fence=task.language.value,
            lemma=task.lemma,
            other=OTHER,
            tactics=self.tactics,
            setup=task.shown_setup or task.setup,
        )
        why = "no sample"
        for seed in range(self.samples):
            (completion,) = await self.model.generate(
                messages, n=1, temperature=self.temperature, max_tokens=MAX_TOKENS, seed=seed
            )
            try:
                script = _script(completion.text, task.language)
            except FormatFailure as exc:
                why = f"sample {seed}: {exc}"
                continue
            problem = script_problem(script, task.language)
            if problem is not None:
                why = f"sample {seed}: {problem}"
                continue
            verdict = await asyncio.to_thread(
                self.verifier.verify, task.original, task.candidate(script), timeout=self.timeout
            )
            if verdict.passed:
                return True, f"model sample {seed}: {' '.join(script.split())}"
            reasons = ", ".join(r.value for r in verdict.reasons) or "rejected"
            why = f"sample {seed}: {reasons}"
        return False, why

    def settle(self, result: BeqResult, tasks: tuple[DirectionTask, DirectionTask]) -> BeqResult:
        """`result` with the directions tier 1 left open tried by the model."""
        directions = (result.forward, result.backward)
        if not result.compiled or any(d.trivial for d in directions):
            return result  # a trivial direction never counts: no model call can change that
        open_ = [(i, d) for i, d in enumerate(directions) if not d.proved]
        if not open_:
            return result
        result.notes.append(self.note())

        async def run() -> list[tuple[bool, str]]:
            return [await self.prove(tasks[i]) for i, _ in open_]

        for (i, direction), (proved, detail) in zip(open_, asyncio.run(run()), strict=True):
            updated = Direction(proved, direction.trivial, detail, direction.seconds)
            if i == 0:
                result.forward = updated
            else:
                result.backward = updated
            if proved:
                result.tier = "model"
        return result
