"""An LLM judge behind any OpenAI-compatible chat endpoint, with every verdict cached and recorded.

A verdict is keyed by the canonical JSON of the request (model, messages, sampling settings), so
the same question is asked once: the cache (SQLite) answers repeats, and it keeps the full request
and response text, which is the record of what the judge said and why. The client is kept minimal
(one POST per uncached question, a timeout, no retries); it could share the general LLM runner's
client (toolgym.evaluation.llm) later.

    judge = OpenAIJudge("http://127.0.0.1:8000/v1", "judge-model", cache_path="runs/judge.sqlite")
    verdict = judge.ask([{"role": "system", "content": ...}, {"role": "user", "content": ...}])
    verdict.score, verdict.reason, verdict.cached

Scores are read ToolEyes' way: the first "Evaluation Score:" line, and on it "10" or the first
digit. From the environment: TOOLGYM_JUDGE_BASE_URL, TOOLGYM_JUDGE_MODEL, TOOLGYM_JUDGE_API_KEY,
TOOLGYM_JUDGE_CACHE (see `judge_from_env`).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import httpx
from pydantic import BaseModel

from toolgym.canonical import canonical_hash, canonical_json
from toolgym.evaluation.base import EvaluationError

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


def judge_from_env() -> OpenAIJudge | None:
    """The judge the environment configures (TOOLGYM_JUDGE_BASE_URL and TOOLGYM_JUDGE_MODEL,
    optional TOOLGYM_JUDGE_API_KEY and TOOLGYM_JUDGE_CACHE), or None."""
    base_url = os.environ.get("TOOLGYM_JUDGE_BASE_URL")
    model = os.environ.get("TOOLGYM_JUDGE_MODEL")
    if not base_url or not model:
        return None
    return OpenAIJudge(
        base_url,
        model,
        api_key=os.environ.get("TOOLGYM_JUDGE_API_KEY"),
        cache_path=os.environ.get("TOOLGYM_JUDGE_CACHE", "runs/judge_cache.sqlite"),
    )
