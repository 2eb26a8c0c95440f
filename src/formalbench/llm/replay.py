"""Models that answer without a provider: recorded responses and scripted ones.

- `RecordingModel(inner, path)` appends every request a live model answers to a JSONL file;
- `ReplayModel(path)` serves those answers again (tests, offline demos); a request that was not
  recorded is a ModelCallError naming the file;
- `ReplayModel.scripted([...])` / `ScriptedModel` answer from a list of texts or a rule, for
  solver tests that need a model with a known behaviour.

Replay files are keyed by the request *without* the provider spec (`canonical_request(None,
...)`), so a recording of `openai:gpt-4o-mini` replays under `replay:FILE`. Each line is
`{"key", "spec", "request", "completions"}`; the key is recomputed from `request` on load.
A file in which two models answered the same request (an ensemble given one prompt) is
replayed one model at a time: `source_spec` (`replay:FILE#SPEC` on the command line) keeps
the lines of that model, named as recorded or without its `@URL`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from formalbench.core.errors import InputError
from formalbench.core.records import TokenUsage
from formalbench.llm.base import ChatModel, Completion, Message, ModelCallError, ModelWrapper
from formalbench.llm.cached import request_of
from formalbench.store.response_cache import request_key


class ReplayModel(ChatModel):
    """Serves the completions recorded in a JSONL file, keyed by request."""

    # A recording keeps the schema in its request key, so a replay answers as the recorded
    # provider did: the schema is taken, not stated in the prompt.
    takes_schema = True

    def __init__(self, path: str | Path, *, source_spec: str | None = None) -> None:
        self.path = Path(path)
        self.spec = f"replay:{self.path}" + (f"#{source_spec}" if source_spec else "")
        self.source_spec = source_spec
        self._answers = self._load()

    def _load(self) -> dict[str, list[Completion]]:
        if not self.path.is_file():
            raise InputError(f"replay file {self.path}: not found")
        answers: dict[str, list[Completion]] = {}
        spec_of: dict[str, str] = {}
        recorded: set[str] = set()
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"replay file {self.path}: unreadable: {exc}") from None
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"replay file {self.path}, line {lineno}"
            try:
                row = json.loads(line)
                spec = str(row.get("spec", ""))
                request = dict(row["request"])
                request.pop("spec", None)
                completions = [Completion.model_validate(c) for c in row["completions"]]
            except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
                raise InputError(f"{where}: not a recorded response ({exc})") from None
            except ValidationError as exc:
                raise InputError(f"{where}: bad completion: {exc.errors()[0]['msg']}") from None
            recorded.add(spec)
            if self.source_spec is not None and not _same_source(spec, self.source_spec):
                continue
            key = request_key(request)
            if key in answers:
                if spec_of[key] != spec:
                    raise InputError(
                        f"{where}: the same request is recorded for {spec_of[key]!r} and "
                        f"{spec!r}; replay one model at a time: replay:{self.path}#SPEC"
                    )
                continue  # the first recording wins, as in the response cache
            answers[key], spec_of[key] = completions, spec
        if self.source_spec is not None and not answers and recorded:
            raise InputError(
                f"replay file {self.path}: nothing recorded for {self.source_spec!r}; it holds "
                + ", ".join(repr(s) for s in sorted(recorded)[:5])
            )
        return answers

    def __len__(self) -> int:
        return len(self._answers)

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        n: int = 1,
        temperature: float = 1.0,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> list[Completion]:
        params: dict[str, Any] = dict(
            n=n, temperature=temperature, max_tokens=max_tokens, stop=stop, seed=seed
        )
        if response_schema is not None:
            params["response_schema"] = response_schema
        key, _ = request_of(None, messages, **params)
        answer = self._answers.get(key)
        if answer is None:
            last = messages[-1].content if messages else ""
            snippet = " ".join(last.split())[:80]
            raise ModelCallError(
                f"replay file {self.path} has no recorded response for this request "
                f"(key {key[:12]}, n={n}, temperature={temperature}, seed={seed}, "
                f"last message: {snippet!r})"
            )
        return [c.model_copy() for c in answer]

    @staticmethod
    def scripted(
        script: Sequence[str | Completion] | Callable[[ScriptedCall], str | Completion],
        *,
        spec: str = "scripted",
    ) -> ScriptedModel:
        """A model that answers from `script` (see ScriptedModel)."""
        return ScriptedModel(script, spec=spec)


# One lock for every recorder: a command's models (a prover and its judge, an ensemble)
# record to one file, and a line must never be written into the middle of another.
_WRITE_LOCK = threading.Lock()


class RecordingModel(ModelWrapper):
    """`inner`, with every answered request appended to a replay file at `path` (one line
    per request, written whole, so that `ReplayModel(path)` serves it unchanged)."""

    def __init__(self, inner: ChatModel, path: str | Path) -> None:
        super().__init__(inner)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        n: int = 1,
        temperature: float = 1.0,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> list[Completion]:
        params: dict[str, Any] = dict(
            n=n, temperature=temperature, max_tokens=max_tokens, stop=stop, seed=seed
        )
        if response_schema is not None:
            params["response_schema"] = response_schema
        completions = await self.inner.generate(messages, **params)
        key, request = request_of(None, messages, **params)
        row = {
            "key": key,
            "spec": self.inner.spec,
            "request": request,
            "completions": [c.model_dump(mode="json", exclude={"cached"}) for c in completions],
        }
        line = json.dumps(row, ensure_ascii=False) + "\n"
        with _WRITE_LOCK, self.path.open("a", encoding="utf-8") as out:
            out.write(line)
        return completions


def _same_source(recorded: str, wanted: str) -> bool:
    """Whether the line of model `recorded` belongs to `wanted`: the same spec, or the same
    without the endpoint (`openai:m1` for `openai:m1@http://host/v1`)."""
    return recorded == wanted or recorded.partition("@")[0] == wanted


@dataclass(frozen=True)
class ScriptedCall:
    """What a scripted rule is told about the sample it must answer."""

    messages: Sequence[Message]
    sample: int  # index of this completion among the n asked for
    n: int
    temperature: float
    max_tokens: int | None
    stop: Sequence[str] | None
    seed: int | None
    call: int  # how many generate() calls came before this one
    response_schema: dict[str, Any] | None = None  # the schema asked for, if any


class ScriptedModel(ChatModel):
    """Answers from a list of texts (consumed in order, one per completion) or a rule.

    Text answers are cut at the first stop sequence, as a served model would. Their usage is
    an approximation (whitespace-separated words of the chat and of the answer); give
    `Completion` objects in the script where exact counts matter.
    """

    def __init__(
        self,
        script: Sequence[str | Completion] | Callable[[ScriptedCall], str | Completion],
        *,
        spec: str = "scripted",
        takes_schema: bool = False,
    ) -> None:
        self.spec = spec
        self.takes_schema = takes_schema  # True: answer as a provider that enforces schemas
        self._rule = script if callable(script) else None
        self._script = [] if callable(script) else list(script)
        self._next = 0
        self.calls: list[ScriptedCall] = []  # the first sample of every call, for assertions

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        n: int = 1,
        temperature: float = 1.0,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> list[Completion]:
        out: list[Completion] = []
        prompt_words = sum(len(m.content.split()) for m in messages)
        for sample in range(n):
            call = ScriptedCall(
                messages,
                sample,
                n,
                temperature,
                max_tokens,
                stop,
                seed,
                len(self.calls),
                response_schema,
            )
            if sample == 0:
                self.calls.append(call)
            answer = self._answer(call)
            if isinstance(answer, Completion):
                out.append(answer.model_copy())
                continue
            text, finish = _cut(answer, stop)
            usage = TokenUsage(prompt=prompt_words, completion=len(text.split()))
            out.append(Completion(text=text, usage=usage, finish_reason=finish, model=self.spec))
        return out

    def _answer(self, call: ScriptedCall) -> str | Completion:
        if self._rule is not None:
            return self._rule(call)
        if self._next >= len(self._script):
            raise ModelCallError(
                f"{self.spec}: the script of {len(self._script)} response(s) is used up "
                f"(call {call.call + 1} asked for more)"
            )
        self._next += 1
        return self._script[self._next - 1]


def _cut(text: str, stop: Sequence[str] | None) -> tuple[str, str]:
    cut = min((i for s in stop or () if s and (i := text.find(s)) >= 0), default=-1)
    return (text[:cut], "stop") if cut >= 0 else (text, "stop")
