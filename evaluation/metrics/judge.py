"""An LLM judge behind any OpenAI-compatible chat endpoint, with every verdict cached and recorded.

A verdict is keyed by the canonical JSON of the request (model, messages, sampling settings), so
the same question is asked once: the cache (SQLite) answers repeats, and it keeps the full request
and response text, which is the record of what the judge said and why. The client is kept minimal
(one POST per uncached question, a timeout, no retries); it could share the general LLM runner's
client (toolgym.models.llm) later.

    judge = OpenAIJudge("http://127.0.0.1:8000/v1", "judge-model", cache_path="runs/judge.sqlite")
    verdict = judge.ask([{"role": "system", "content": ...}, {"role": "user", "content": ...}])
    verdict.score, verdict.reason, verdict.cached

Scores are read ToolEyes' way: the first "Evaluation Score:" line, and on it "10" or the first
digit. From the environment: TOOLGYM_JUDGE_BASE_URL, TOOLGYM_JUDGE_MODEL, TOOLGYM_JUDGE_API_KEY,
TOOLGYM_JUDGE_CACHE (see `judge_from_env`).

`RecordedJudge` sends every question through a cassette (toolgym.recorder.cassette, tool
`judge`): recorded once, a judged score replays from the cassette with no LLM at all
(TOOLGYM_JUDGE_CASSETTE and TOOLGYM_JUDGE_CASSETTE_MODE: record, replay, record_missing).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import httpx
from pydantic import BaseModel

from toolgym.canonical import canonical_hash, canonical_json
from toolgym.errors import InfraError
from toolgym.evaluation.base import EvaluationError
from toolgym.recorder.cassette import JUDGE_TOOL, JUDGE_VERSION, Cassette, CassetteError, CassetteMode

_SCORE_LINE = re.compile(r"Evaluation Score:[^\n]*")
_SCORE = re.compile(r"(10|\d)")


class JudgeError(EvaluationError):
    """The judge could not be asked (unreachable, an HTTP error, a reply without text)."""


class Verdict(BaseModel):
    key: str  # sha256 of the canonical request
    score: int | None  # 1-10 as the judge wrote it; None when its reply has no score
    reason: str  # the judge's whole reply
    cached: bool


class Judge(Protocol):
    name: str

    def ask(self, messages: Sequence[Mapping[str, Any]]) -> Verdict: ...


def parse_score(text: str) -> int | None:
    line = _SCORE_LINE.search(text)
    if line is None:
        return None
    digit = _SCORE.search(line.group())
    return int(digit.group()) if digit else None


class VerdictCache:
    """SQLite store of verdicts: key, canonical request, reply text, score."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._lock = threading.Lock()
        with self._lock, self._db:
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS verdicts ("
                "key TEXT PRIMARY KEY, request TEXT NOT NULL, reply TEXT NOT NULL, score INTEGER)"
            )

    def get(self, key: str) -> tuple[str, int | None] | None:
        with self._lock:
            row = self._db.execute("SELECT reply, score FROM verdicts WHERE key = ?", (key,)).fetchone()
        return (str(row[0]), row[1]) if row else None

    def put(self, key: str, request: str, reply: str, score: int | None) -> None:
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO verdicts (key, request, reply, score) VALUES (?, ?, ?, ?)",
                (key, request, reply, score),
            )

    def records(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute("SELECT key, request, reply, score FROM verdicts ORDER BY key").fetchall()
        return [{"key": k, "request": json.loads(r), "reply": t, "score": s} for k, r, t, s in rows]

    def close(self) -> None:
        self._db.close()


class OpenAIJudge:
    """Asks `{base_url}/chat/completions` (base_url as the OpenAI SDK spells it, ending in /v1)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        cache_path: Path | str | None = None,
        temperature: float = 0.0,
        top_p: float = 0.5,  # ToolEyes' judge settings
        max_tokens: int = 1024,
        timeout_s: float = 120.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.name = f"judge:{model}"
        self.model = model
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.settings = {"temperature": temperature, "top_p": top_p, "max_tokens": max_tokens}
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout_s, headers=headers, transport=transport)
        self.cache = VerdictCache(cache_path) if cache_path is not None else None
        self.requests = 0
        self.cache_hits = 0

    def request_body(self, messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return {"model": self.model, "messages": [dict(m) for m in messages], **self.settings}

    def ask(self, messages: Sequence[Mapping[str, Any]]) -> Verdict:
        body = self.request_body(messages)
        key = canonical_hash(body)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.cache_hits += 1
                return Verdict(key=key, score=hit[1], reason=hit[0], cached=True)
        try:
            response = self._client.post(self.url, json=body)
            response.raise_for_status()
            content = response.json()["choices"][0]["message"]["content"]
        except httpx.HTTPError as exc:
            raise JudgeError(f"judge request to {self.url} failed: {exc}") from None
        except (ValueError, KeyError, IndexError, TypeError):
            raise JudgeError(f"judge at {self.url} sent no chat completion text") from None
        if not isinstance(content, str):
            raise JudgeError(f"judge at {self.url} sent no chat completion text")
        self.requests += 1
        score = parse_score(content)
        if self.cache is not None:
            self.cache.put(key, canonical_json(body), content, score)
        return Verdict(key=key, score=score, reason=content, cached=False)

    def close(self) -> None:
        self._client.close()
        if self.cache is not None:
            self.cache.close()


class RecordedJudge:
    """An OpenAIJudge whose questions go through a cassette: `record` asks and stores, `replay`
    answers from the cassette only (a question it lacks is a JudgeError), `record_missing` asks
    only what is not there. The key is the judge's whole request, so another model, prompt or
    sampling setting is another question."""

    def __init__(self, judge: OpenAIJudge, cassette: Cassette) -> None:
        self.inner = judge
        self.cassette = cassette
        self.name = judge.name

    @property
    def requests(self) -> int:
        return self.inner.requests  # questions that reached the LLM

    @property
    def cache_hits(self) -> int:
        return self.inner.cache_hits + self.cassette.stats.hits

    def ask(self, messages: Sequence[Mapping[str, Any]]) -> Verdict:
        body = self.inner.request_body(messages)
        asked: list[Verdict] = []

        def live() -> str:
            asked.append(self.inner.ask(messages))
            return asked[0].reason

        try:
            text = self.cassette.chat_call(
                live, tool=JUDGE_TOOL, version=JUDGE_VERSION, request=body, seed=None
            )
        except InfraError as exc:
            raise JudgeError(f"judge {self.name}: {exc.message}") from None
        return Verdict(key=canonical_hash(body), score=parse_score(text), reason=text, cached=not asked)

    def close(self) -> None:
        self.inner.close()
        self.cassette.close()


_Scored = TypeVar("_Scored")


def with_judge(judge: Judge | None, needed: bool, score: Callable[[Judge | None], _Scored]) -> _Scored:
    """`score(judge)`; with no judge given and one `needed`, the environment's (closed after)."""
    owned = judge_from_env() if judge is None and needed else None
    try:
        return score(judge or owned)
    finally:
        if owned is not None:
            owned.close()


def judge_from_env() -> OpenAIJudge | RecordedJudge | None:
    """The judge the environment configures (TOOLGYM_JUDGE_BASE_URL and TOOLGYM_JUDGE_MODEL,
    optional TOOLGYM_JUDGE_API_KEY and TOOLGYM_JUDGE_CACHE; TOOLGYM_JUDGE_CASSETTE records or
    replays its questions, in TOOLGYM_JUDGE_CASSETTE_MODE, default record_missing), or None."""
    base_url = os.environ.get("TOOLGYM_JUDGE_BASE_URL")
    model = os.environ.get("TOOLGYM_JUDGE_MODEL")
    if not base_url or not model:
        return None
    judge = OpenAIJudge(
        base_url,
        model,
        api_key=os.environ.get("TOOLGYM_JUDGE_API_KEY"),
        cache_path=os.environ.get("TOOLGYM_JUDGE_CACHE", "runs/judge_cache.sqlite"),
    )
    cassette_path = os.environ.get("TOOLGYM_JUDGE_CASSETTE")
    if not cassette_path:
        return judge
    mode = os.environ.get("TOOLGYM_JUDGE_CASSETTE_MODE", "record_missing")
    try:
        cassette = Cassette(cassette_path, _cassette_mode(mode))
    except CassetteError as exc:
        judge.close()
        raise JudgeError(f"TOOLGYM_JUDGE_CASSETTE: {exc}") from None
    return RecordedJudge(judge, cassette)


def _cassette_mode(mode: str) -> CassetteMode:
    if mode == "record":
        return "record"
    if mode == "replay":
        return "replay"
    if mode == "record_missing":
        return "record_missing"
    raise JudgeError(f"TOOLGYM_JUDGE_CASSETTE_MODE {mode!r}: expected record, replay or record_missing")
