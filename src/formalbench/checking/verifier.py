"""The strict verifier: does a candidate really prove its task? (DESIGN.md "Strict verification")

Two layers. The text layer (`static_findings`) is cheap and runs first: forbidden constructs,
statement preservation and, for construction tasks, the value checks. The assistant layer
compiles the candidate and reads, from the assistant, the diagnostics and the axioms each
target depends on.

When the text layer already fails the candidate, the assistant is not run by default: a
compile costs seconds to minutes and cannot turn a failure into a pass. The verdict then
lists every reason the text layer found; pass `compile_always=True` to also get the
assistant's reasons (an evaluation that wants the full error taxonomy of each attempt),
except for a candidate the gate refuses (`core/gate.py`), which is never run.

Coq with a backend: every verdict is decided by the kernel route (`coq_kernel`): the task's
original and the candidate are each compiled as the library `Candidate` (same kernel names),
a plugin dumps each side's kernel objects, and `coq_compare` decides on the two dumps whether
each target still states the original's statement over the same objects, and which axioms it
rests on. The route needs its files on one machine, so it runs whole where the assistant runs
(`Backend.on_assistant`: here, or on the Ray actor that owns the coqc backend with
`--executor ray`). A backend that cannot run it (no coqc behind it) gets `undecided`, never
a verdict read from queries appended in the candidate's own scope.
No text rule compares Coq statements (`preservation`), with or without coqc.

Axioms: a Lean target may use only `policy.allowed_axioms_for(lean)` (propext,
Classical.choice, Quot.sound; `sorryAx` and `Lean.ofReduceBool` are thus refused); a target
whose axioms the assistant did not report cannot be checked and fails (disallowed_axiom),
since axioms are read from the assistant, never text. Coq's axiom rule is applied to the
kernel's assumptions of each target (`coq_compare`, its axiom step `coq_kernel.allow_list`):
the task's own postulates and an explicit allow-list of fully qualified names
(`coq_axioms`, `coq_presets`), nothing else.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from formalbench.backends.base import Backend, WorkerLost
from formalbench.checking.construction import construction_findings, task_kind
from formalbench.checking.decls import Decl, split_decls
from formalbench.checking.forbidden import forbidden_findings
from formalbench.checking.holes import hole_decls
from formalbench.checking.lean_hostile import hostile_findings
from formalbench.checking.lean_identity import (
    LeanIdentity,
    achecked,
    checked,
    deferred,
    settle_deferred,
)
from formalbench.checking.preservation import preservation_findings
from formalbench.core.config import VerifierPolicy
from formalbench.core.errors import InputError
from formalbench.core.gate import GATE_VERSION, OVERSIZED, gate_findings
from formalbench.core.records import (
    CheckResult,
    CheckStatus,
    Finding,
    Language,
    Reason,
    TaskKind,
    Verdict,
)

if TYPE_CHECKING:
    import asyncio

    from formalbench.checking.coq_kernel import KernelCheck
    from formalbench.store.verdict_cache import VerdictCache

CONSTRUCTION_KINDS = frozenset({TaskKind.evaluation, TaskKind.algorithm, TaskKind.transformation})
_STATUS_REASONS = {
    CheckStatus.timeout: Reason.timeout,
    CheckStatus.out_of_memory: Reason.out_of_memory,
    CheckStatus.crash: Reason.backend_crash,
    CheckStatus.refused: Reason.forbidden_construct,
}


def compile_findings(result: CheckResult, policy: VerifierPolicy) -> list[Finding]:
    """What one run of the assistant over the candidate says against it: how the run
    ended, its errors, its warnings (when the policy forbids them), its holes."""
    findings: list[Finding] = []
    if result.status in _STATUS_REASONS:
        detail = f": {result.detail}" if result.detail else ""
        findings.append(
            Finding(
                reason=_STATUS_REASONS[result.status],
                message=f"the assistant ended with {result.status.value}{detail}"[:500],
            )
        )
        return findings
    for d in result.errors:
        # Backends tag "the target is not in the file" errors and libraries that cannot
        # be loaded here (environment); neither is a compile error of the candidate.
        tagged = d.kind in (Reason.missing_target.value, Reason.environment.value)
        findings.append(
            Finding(
                reason=Reason(d.kind or "") if tagged else Reason.compile_error,
                message=d.message[:500],
                line=d.line,
                column=d.column,
            )
        )
    if policy.forbid_warnings:
        for d in result.warnings:
            findings.append(
                Finding(
                    reason=Reason.compile_warning,
                    message=d.message[:500],
                    line=d.line,
                    column=d.column,
                )
            )
    for hole in result.holes:
        findings.append(
            Finding(
                reason=Reason.forbidden_construct,
                subject="sorry",
                line=hole.line,
                column=hole.column,
                message="the assistant reports an unfinished proof (hole)",
            )
        )
    return findings


class StrictVerifier:
    """Checks candidates against their original; `backend=None` runs the text layer only."""

    def __init__(
        self,
        backend: Backend | None,
        policy: VerifierPolicy | None = None,
        *,
        language: Language | None = None,
        compile_always: bool = False,
        cache: VerdictCache | None = None,
    ) -> None:
        lang = language or (backend.language if backend is not None else None)
        if lang is None:
            raise InputError("the verifier needs a language (lean or coq) when it has no backend")
        self.backend = backend
        self.policy = policy or VerifierPolicy()
        self.language = Language(lang)
        self.compile_always = compile_always
        self.cache = cache if backend is not None else None  # the text layer alone is cheap
        self._rules = {
            "policy": self.policy.model_dump(mode="json"),
            "values": "print-all-1",  # the value-level check of constructions (Coq, Lean)
            "always": compile_always,
            "gate": GATE_VERSION,
            # the effective list, so a kept verdict never outlives a longer default list
            "forbidden": self.policy.forbidden_for(self.language),
        }
        # Coq with a backend: identity and axioms are decided by the kernel route, run where
        # the assistant runs (`coq_layer`); there is no other route to a Coq verdict.
        self.coq_kernel = self.language == Language.coq and backend is not None
        if self.coq_kernel:
            # identity and axioms, two dumps compared; axioms by allow-list (coq_axioms.py)
            self._rules["identity"] = "kernel-dump-2"
            # a kept verdict lists the known kernel bugs of the table it was judged under
            from formalbench.backends.coq_known_bugs import KNOWN_BUGS

            self._rules["known_bugs"] = [b.id for b in KNOWN_BUGS]
        # Lean: the assistant decides statement identity too (checking/lean_identity.py).
        lean = self.language == Language.lean and getattr(backend, "answers_queries", False)
        self._identity = LeanIdentity(backend) if lean else None  # type: ignore[arg-type]
        if lean:
            self._rules["identity"] = "lean-pp-all-2"
        # Verdicts being computed now, by key: samples of one task often repeat a proof and
        # arrive together, so the second waits for the first instead of checking it again.
        self._pending: dict[str, asyncio.Future[Verdict]] = {}

    # --- text layer -----------------------------------------------------------------------
    def _parse(self, original: str, candidate: str) -> tuple[list[Decl], list[Decl], set[int]]:
        orig, holes = hole_decls(original, self.language)
        if not any(orig[i].name for i in holes):
            raise InputError(
                "the original has no named declaration with a hole (sorry / Admitted / an open "
                "proof), so there is no target to verify"
            )
        return orig, split_decls(candidate, self.language), set(holes)

    def targets(self, original: str) -> list[str]:
        """Names of the original's hole-bearing declarations (what `verify` checks)."""
        orig, _, holes = self._parse(original, "")
        return [d.name for d in orig if d.index in holes and d.name]

    def task_kind(self, original: str) -> TaskKind:
        """`evaluation` when the original leaves a value definition open, else `proof`."""
        self._parse(original, "")  # an original with no target is refused here as everywhere
        return task_kind(original, self.language)

    def static_findings(
        self,
        original: str,
        candidate: str,
        kind: TaskKind | None = None,
        constructions: Sequence[str] = (),
    ) -> list[Finding]:
        """Every problem the text layer finds, in the order: statements, constructs, values.
        `kind` None reads it off the original (`task_kind`); a given kind is obeyed.
        `constructions`: the task's construction names (default: its open value definitions)."""
        orig, cand, holes = self._parse(original, candidate)
        findings, unchanged = preservation_findings(orig, cand, self.language, holes)
        forbidden = self.policy.forbidden_for(self.language)
        findings += forbidden_findings(cand, forbidden, unchanged, self.language)
        if self.language == Language.lean:
            findings += hostile_findings(cand, forbidden, unchanged)
        kind = self.task_kind(original) if kind is None else TaskKind(kind)
        if kind in CONSTRUCTION_KINDS:
            policy = self.policy
            findings += construction_findings(
                orig,
                cand,
                self.language,
                holes,
                policy.choice_constants,
                forbidden,
                policy.construction_forbidden,
                constructions,
            )
        return findings

    # --- assistant layer ------------------------------------------------------------------
    def assistant_findings(
        self,
        result: CheckResult,
        targets: Sequence[str],
        *,
        axioms: bool = True,
        policy: VerifierPolicy | None = None,
    ) -> list[Finding]:
        """Findings from one run of the assistant over the candidate; `axioms=False` where
        the axioms are read elsewhere. Coq's axioms are never read here (only in the
        kernel route, `coq_kernel`), whatever `axioms` says. `policy`: this task's
        (`policy_for`), by default the verifier's."""
        policy = policy or self.policy
        findings = compile_findings(result, policy)
        if result.status in _STATUS_REASONS or result.errors:
            return findings  # a text that does not compile has no axioms to read
        if not axioms or self.language == Language.coq:
            return findings
        return findings + self._axiom_findings(result, targets, policy)

    def _axiom_findings(
        self, result: CheckResult, targets: Sequence[str], policy: VerifierPolicy
    ) -> list[Finding]:
        """Lean: each target's axioms, as the backend reported them, against the policy."""
        findings: list[Finding] = []
        allowed = policy.allowed_axioms_for(self.language) or []
        for target in targets:
            axioms = result.axioms.get(target)
            if axioms is None:
                findings.append(
                    Finding(
                        reason=Reason.disallowed_axiom,
                        subject=target,
                        message=f"the assistant did not report the axioms of `{target}`",
                    )
                )
                continue
            for ax in axioms:
                if ax in allowed:
                    continue
                findings.append(
                    Finding(
                        reason=Reason.disallowed_axiom,
                        subject=ax,
                        message=f"`{target}` depends on the axiom `{ax}`",
                    )
                )
        return findings

    # --- verdicts -------------------------------------------------------------------------
    def _verdict(self, findings: list[Finding], result: CheckResult | None, t0: float) -> Verdict:
        reasons: list[Reason] = []
        for f in findings:
            if f.reason not in reasons:
                reasons.append(f.reason)
        return Verdict(
            passed=not findings,
            reasons=reasons,
            findings=findings,
            diagnostics=list(result.diagnostics) if result else [],
            axioms=dict(result.axioms) if result else {},
            elapsed=time.perf_counter() - t0,
            backend=self.backend.name if self.backend is not None else None,
            static_only=self.backend is None,
            toolchain=self.backend.toolchain_info() if self.backend is not None else None,
            prepared=list(result.prepared) if result else [],
        )

    def _compile_needed(self, findings: list[Finding]) -> bool:
        if self.backend is None:
            return False
        return not findings or self.compile_always

    def _text_stage(
        self, original: str, candidate: str, kind: TaskKind | None, constructions: Sequence[str]
    ) -> tuple[float, list[Finding], list[str] | None]:
        """Start time, the text layer's findings, and the targets to compile (None: no compile)."""
        t0 = time.perf_counter()
        # The gate (core/gate.py) first: an oversized text goes no further, and a text
        # with a file or process command is never compiled, even if copied from the original.
        gated = gate_findings(candidate, self.language)
        if any(f.subject == OVERSIZED for f in gated):
            return t0, gated, None
        findings = self.static_findings(original, candidate, kind, constructions)
        seen = {(f.subject, f.line, f.column) for f in findings}
        findings += [f for f in gated if (f.subject, f.line, f.column) not in seen]
        names = self.targets(original)
        hard = findings
        if self._identity is not None:  # a changed target signature: Lean has the last word
            hard = [f for f in findings if not deferred(f, names)]
        compile_needed = self._compile_needed(hard) and not gated
        return t0, findings, names if compile_needed else None

    def policy_for(self, axioms: Sequence[str]) -> VerifierPolicy:
        """The policy of one task: the verifier's, with the task's `allowed_axioms`."""
        return self.policy.with_axioms(axioms, self.language)

    def _cache_key(
        self,
        original: str,
        candidate: str,
        kind: TaskKind | None,
        constructions: Sequence[str],
        axioms: Sequence[str] = (),
    ) -> str | None:
        """Where this verdict is kept: everything it depends on, the assistant's version too."""
        if self.cache is None or self.backend is None:
            return None
        from formalbench.store.verdict_cache import verdict_key

        kind_name = "auto" if kind is None else kind.value
        if constructions:
            kind_name += ":" + ",".join(constructions)
        if axioms:  # the task's own allowed axioms
            kind_name += ":axioms=" + ",".join(sorted(set(axioms)))
        return verdict_key(self.backend.version(), self._rules, kind_name, original, candidate)

    def _cached(self, key: str | None) -> Verdict | None:
        """A kept verdict; `key` is None exactly when there is no cache."""
        return None if key is None else self.cache.get(key)  # type: ignore[union-attr]

    def _keep(self, key: str | None, verdict: Verdict) -> Verdict:
        if key is not None:
            self.cache.put(key, verdict)  # type: ignore[union-attr]  # transient ones are not kept
        return verdict

    def verify(
        self,
        original: str,
        candidate: str,
        *,
        kind: TaskKind | None = None,
        timeout: float | None = None,
        constructions: Sequence[str] = (),
        axioms: Sequence[str] = (),
    ) -> Verdict:
        """The verdict on `candidate` as a solution of `original` (both whole files); `kind`
        None reads the task kind off the original (see `task_kind`); `constructions` are the
        task's construction names; `axioms` the task's own allowed axioms (its
        `allowed_axioms`, on top of the policy's). With a verdict cache, a candidate already
        judged under the same assistant and rules is not checked again."""
        policy = self.policy_for(axioms)
        key = self._cache_key(original, candidate, kind, constructions, axioms)
        if (hit := self._cached(key)) is not None:
            return hit
        t0, findings, targets = self._text_stage(original, candidate, kind, constructions)
        result = None
        if targets is not None:
            assert self.backend is not None
            if self.coq_kernel:
                result, more = self.assistant_layer(
                    original, candidate, targets, timeout, kind, policy
                )
                findings += more
            else:
                result, same = checked(
                    self._identity, self.backend, original, candidate, targets, timeout
                )
                if self.language == Language.lean:  # Coq text findings are never deferred
                    findings = settle_deferred(findings, targets, result, same)
                findings += self.assistant_findings(result, targets, policy=policy) + same
                if self._lean_values_due(original, kind, result, findings):
                    from formalbench.checking.lean_value_check import lean_value_findings

                    findings += lean_value_findings(
                        self.backend, original, candidate, self.policy, timeout
                    )
        return self._keep(key, self._verdict(findings, result, t0))

    def _lean_values_due(
        self,
        original: str,
        kind: TaskKind | None,
        result: CheckResult,
        findings: list[Finding],
    ) -> bool:
        """Whether the Lean value-level check (`lean_value_check`) should run now: a
        construction task, a backend that answers queries, a candidate with no finding yet."""
        if self._identity is None or findings or not result.compiled:
            return False
        kind = task_kind(original, self.language) if kind is None else TaskKind(kind)
        return kind in CONSTRUCTION_KINDS

    def assistant_layer(
        self,
        original: str,
        candidate: str,
        targets: list[str],
        timeout: float | None,
        kind: TaskKind | None = None,
        policy: VerifierPolicy | None = None,
    ) -> tuple[CheckResult | None, list[Finding]]:
        """The assistant's check of the candidate and its findings (blocking). Coq: the
        identity route, run whole where the assistant runs (`Backend.on_assistant`; a worker
        lost under it is a crash of the backend); None for the result where the backend
        could not run it (then the findings say `undecided`, and why)."""
        assert self.backend is not None
        policy = policy or self.policy
        if self.language != Language.coq:
            result = self.backend.check(candidate, targets=targets, timeout=timeout)
            return result, self.assistant_findings(result, targets, policy=policy)
        try:
            return self.backend.on_assistant(
                coq_layer, original, candidate, targets, timeout, kind, policy
            )
        except WorkerLost as lost:
            crash = CheckResult(
                backend=self.backend.name, status=CheckStatus.crash, detail=str(lost)
            )
            return crash, compile_findings(crash, policy)

    async def averify(
        self,
        original: str,
        candidate: str,
        *,
        kind: TaskKind | None = None,
        timeout: float | None = None,
        constructions: Sequence[str] = (),
        axioms: Sequence[str] = (),
    ) -> Verdict:
        """`verify` for asyncio code: the compile runs on the backend's pool, and a candidate
        already being checked by another attempt is waited for, not checked twice."""
        import asyncio  # here, not at the top: a one-off `check` never loads asyncio

        key = self._cache_key(original, candidate, kind, constructions, axioms)
        if key is None:
            return await self._averify(original, candidate, kind, timeout, constructions, axioms)
        if (hit := self._cached(key)) is not None:
            return hit
        if key in self._pending:
            return await asyncio.shield(self._pending[key])
        task = asyncio.ensure_future(
            self._averify(original, candidate, kind, timeout, constructions, axioms)
        )
        self._pending[key] = task
        try:
            return self._keep(key, await asyncio.shield(task))
        finally:
            self._pending.pop(key, None)

    async def _averify(
        self,
        original: str,
        candidate: str,
        kind: TaskKind | None,
        timeout: float | None,
        constructions: Sequence[str] = (),
        axioms: Sequence[str] = (),
    ) -> Verdict:
        policy = self.policy_for(axioms)
        t0, findings, targets = self._text_stage(original, candidate, kind, constructions)
        result = None
        if targets is not None:
            assert self.backend is not None
            if self.coq_kernel:
                import asyncio  # loaded lazily, as in `averify`

                loop = asyncio.get_running_loop()
                result, more = await loop.run_in_executor(
                    self.backend._pool(),
                    lambda: self.assistant_layer(
                        original, candidate, targets, timeout, kind, policy
                    ),
                )
                findings += more
            else:
                result, same = await achecked(
                    self._identity, self.backend, original, candidate, targets, timeout
                )
                if self.language == Language.lean:  # Coq text findings are never deferred
                    findings = settle_deferred(findings, targets, result, same)
                findings += self.assistant_findings(result, targets, policy=policy) + same
                if self._lean_values_due(original, kind, result, findings):
                    import asyncio  # loaded lazily, as in `averify`

                    from formalbench.checking.lean_value_check import lean_value_findings

                    findings += await asyncio.to_thread(
                        lean_value_findings,
                        self.backend,
                        original,
                        candidate,
                        self.policy,
                        timeout,
                    )
        return self._verdict(findings, result, t0)


_kernels: weakref.WeakKeyDictionary[Backend, KernelCheck] = weakref.WeakKeyDictionary()
_kernels_guard = threading.Lock()


def kernel_of(assistant: Backend) -> KernelCheck | None:
    """The one kernel route of a coqc backend (None for any other backend): one per backend
    object, so its originals' builds and dumps and its warm sessions are shared by every
    verifier that uses that backend."""
    from formalbench.checking.coq_kernel import kernel_check_for

    with _kernels_guard:
        kernel: KernelCheck | None = _kernels.get(assistant)
        if kernel is None:
            kernel = kernel_check_for(assistant, Language.coq)
            if kernel is not None:
                _kernels[assistant] = kernel
    return kernel


def coq_layer(
    assistant: Backend,
    original: str,
    candidate: str,
    targets: list[str],
    timeout: float | None,
    kind: TaskKind | None,
    policy: VerifierPolicy,
) -> tuple[CheckResult | None, list[Finding]]:
    """The Coq assistant layer, run where the assistant runs (`Backend.on_assistant`: in
    this process, or on the Ray actor that owns `assistant`): the candidate compiled alone,
    the kernel route deciding identity and axioms (`coq_kernel`), and for a construction
    that compiled, the value-level check. A backend that is not a coqc backend cannot run
    the kernel route: `undecided`, and no result, rather than any other route."""
    kernel = kernel_of(assistant)
    if kernel is None:
        message = (
            f"undecided: backend `{assistant.name}` cannot run Coq's kernel route (it is not "
            "a coqc backend), and a Coq verdict is decided there or not at all: axioms read "
            "by queries in the candidate's own scope can be redirected by its notations"
        )
        return None, [Finding(reason=Reason.undecided, message=message)]
    from formalbench.backends.sandbox import work_dir
    from formalbench.checking.coq_replay import ReplayBuild, replay_findings

    with work_dir("replay") as root:
        kept = ReplayBuild(Path(root)) if policy.replay else None
        result, identity = kernel.check(original, candidate, targets, timeout, policy, kept)
        findings = compile_findings(result, policy)
        kind = task_kind(original, Language.coq) if kind is None else TaskKind(kind)
        if kind in CONSTRUCTION_KINDS and result.compiled and not findings and not identity:
            # value-level checks load only when a construction compiled (start-up of `check`)
            from formalbench.checking.value_check import value_findings

            findings += value_findings(kernel.backend, original, candidate, policy, timeout)
        findings += identity
        if kept is not None and not findings and result.compiled:
            # THE replay hook: a pass of every other check, confirmed by coqchk from the
            # library the verifier compiled (checking/coq_replay.py)
            folder = kept.library or Path(root)
            limit = float(timeout if timeout is not None else kernel.backend.timeout)
            findings += replay_findings(kernel.backend, folder, limit, source=candidate)
    return result, findings
