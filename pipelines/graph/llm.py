"""The optional LLM extractor: concepts and relations from an OpenAI-compatible chat endpoint.

Same interface as the rule-based extractor (:class:`~pipelines.graph.extractor.Extractor`).
For each paper it sends the title and the first two and last two chunks (introduction
and conclusion, where papers say what they are about) to ``{llm_url}/chat/completions``
and asks for one JSON object ``{"concepts": [...], "relations": [...]}``.

* Replies are cached on disk by the SHA-256 of the request (model + messages), in
  ``data/cache/llm/<sha>.json``: a rerun on unchanged papers sends no request, and
  a changed prompt, model or chunk asks again.
* A malformed reply (not JSON, wrong shape), an HTTP 429/5xx or a connection error is
  retried ``llm_max_retries`` times with exponential backoff; then the paper is skipped
  and recorded in ``data/quarantine/graph/<paper>.json`` with the reason and the last
  reply. Skips are not cached, so the next run tries again.
* HTTP 401/403/404 stop the run: they mean a wrong key, URL or model, not a bad paper.

Individual items that do not fit (a concept without a name, an unknown relation) are
dropped and counted in ``stats``; the rest of the reply is kept.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import requests
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from pipelines.common import io
from pipelines.common.tables import CONCEPT_TYPES, RELATIONS, ConceptType, Relation
from pipelines.graph.extractor import (
    Chunk,
    ConceptCandidate,
    Extraction,
    PaperDocument,
    RelationCandidate,
)
from pipelines.mathtext.concept_phrases import clean_term

SYSTEM_PROMPT = (
    "You extract mathematical concepts from excerpts of a research paper, for a knowledge "
    "graph. Reply with exactly one JSON object and nothing else, of the form "
    '{"concepts": [{"name": "...", "type": "...", "description": "...", "aliases": ["..."]}], '
    '"relations": [{"source": "...", "target": "...", "relation": "..."}]}. '
    f"type is one of {', '.join(CONCEPT_TYPES)}. relation is one of {', '.join(RELATIONS)}; "
    '"A generalizes B" means B is a special case of A. Name concepts as the text does '
    "(e.g. 'Rogers-Ramanujan identities'), describe each in one or two sentences, and "
    "relate only concepts you list. Skip generic words such as 'theorem' or 'function'."
)
MAX_BACKOFF_SECONDS = 60.0
# Stop the whole run: every paper would fail the same way.
FATAL_STATUSES = frozenset({401, 403, 404})


class LLMError(RuntimeError):
    """The endpoint cannot be used at all (wrong URL, key or model)."""


class MalformedReply(ValueError):
    """The reply is not the JSON object the prompt asks for."""


def excerpt_chunks(chunks: Sequence[Chunk]) -> list[Chunk]:
    """The first two and the last two chunks (each once when a paper has fewer than 4)."""
    indices = sorted({0, 1, len(chunks) - 2, len(chunks) - 1} & set(range(len(chunks))))
    return [chunks[index] for index in indices]


def build_messages(paper: PaperDocument) -> list[dict[str, str]]:
    excerpts = "\n\n".join(
        f"[{number}] {chunk.text}"
        for number, chunk in enumerate(excerpt_chunks(paper.chunks), start=1)
    )
    if not excerpts:
        excerpts = f"[1] {paper.abstract}"
    user = f"Title: {paper.title}\n\nExcerpts:\n\n{excerpts}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def request_body(model: str, messages: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "model": model,
        "messages": messages,
        "temperature": 0,
        "response_format": {"type": "json_object"},
    }


def request_sha(body: dict[str, Any]) -> str:
    """The cache key: a hash of everything that determines the reply."""
    canonical = json.dumps(
        {"model": body["model"], "messages": body["messages"]},
        sort_keys=True,
        ensure_ascii=False,
    )
    return io.sha256_hex(canonical.encode("utf-8"))


_CODE_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def parse_reply(content: str) -> dict[str, Any]:
    """The JSON object in a chat reply's content; :class:`MalformedReply` if there is none.

    A reply wrapped in a Markdown code fence is accepted (models add them despite the
    prompt). ``relations`` may be missing (no relations); ``concepts`` may not.
    """
    fenced = _CODE_FENCE.match(content)
    text = fenced.group(1) if fenced else content
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise MalformedReply(f"reply is not JSON ({error.msg} at char {error.pos})") from error
    if not isinstance(value, dict):
        raise MalformedReply(f"reply is a JSON {type(value).__name__}, not an object")
    if not isinstance(value.get("concepts"), list):
        raise MalformedReply("reply has no 'concepts' list")
    relations = value.get("relations", [])
    if not isinstance(relations, list):
        raise MalformedReply("reply's 'relations' is not a list")
    return {"concepts": value["concepts"], "relations": relations}


def extraction_from_reply(paper_id: str, reply: dict[str, Any]) -> tuple[Extraction, int]:
    """Candidates from a parsed reply, and how many items were dropped as unusable."""
    dropped = 0
    concepts: list[ConceptCandidate] = []
    for item in reply["concepts"]:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            dropped += 1
            continue
        name = clean_term(item["name"])
        if name is None:
            dropped += 1
            continue
        concept_type: ConceptType = item["type"] if item.get("type") in CONCEPT_TYPES else "other"
        description = item.get("description")
        raw_aliases = item.get("aliases")
        aliases = (
            [raw for raw in raw_aliases if isinstance(raw, str)]
            if isinstance(raw_aliases, list)
            else []
        )
        concepts.append(
            ConceptCandidate(
                display_name=name,
                type=concept_type,
                # A model read the paper and named it as one of its concepts, as an author
                # lists keywords: strong evidence, not a pattern match needing corroboration.
                evidence="keyword",
                description=" ".join(description.split()) if isinstance(description, str) else "",
                aliases=tuple(alias for alias in map(clean_term, aliases) if alias),
            )
        )
    relations: list[RelationCandidate] = []
    for item in reply["relations"]:
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("source"), str)
            or not isinstance(item.get("target"), str)
            or item.get("relation") not in RELATIONS
        ):
            dropped += 1
            continue
        relation: Relation = item["relation"]
        relations.append(RelationCandidate(item["source"], item["target"], relation))
    return Extraction(paper_id, tuple(concepts), tuple(relations)), dropped


class LLMExtractor:
    """Asks a chat-completions endpoint for each paper's concepts; caches replies on disk."""

    name = "llm"

    def __init__(
        self,
        *,
        url: str,
        model: str,
        api_key: str,
        max_retries: int,
        timeout_seconds: float,
        cache_dir: Path,
        quarantine_dir: Path,
        backoff_seconds: float = 1.0,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.endpoint = f"{url.rstrip('/')}/chat/completions"
        self.model = model
        self.max_retries = max_retries
        self.timeout_seconds = timeout_seconds
        self.backoff_seconds = backoff_seconds
        self.cache_dir = cache_dir
        self.quarantine_dir = quarantine_dir
        self.session = session or requests.Session()
        self.session.headers["Content-Type"] = "application/json"
        if api_key:
            self.session.headers["Authorization"] = f"Bearer {api_key}"
        self._sleep = sleep
        self.stats: dict[str, int] = {
            "requests": 0,
            "cache_hits": 0,
            "retries": 0,
            "skipped": 0,
            "items_dropped": 0,
        }

    def extract(self, paper: PaperDocument) -> Extraction:
        body = request_body(self.model, build_messages(paper))
        sha = request_sha(body)
        reply = self._cached(sha)
        if reply is None:
            reply = self._ask(paper.paper_id, body, sha)
            if reply is None:
                self.stats["skipped"] += 1
                return Extraction(paper.paper_id, skipped_reason="llm reply unusable")
            io.write_json(
                self.cache_dir / f"{sha}.json",
                {"paper_id": paper.paper_id, "model": self.model, "reply": reply},
            )
        else:
            self.stats["cache_hits"] += 1
        extraction, dropped = extraction_from_reply(paper.paper_id, reply)
        self.stats["items_dropped"] += dropped
        return extraction

    def _cached(self, sha: str) -> dict[str, Any] | None:
        path = self.cache_dir / f"{sha}.json"
        if not path.is_file():
            return None
        try:
            return parse_reply(json.dumps(io.read_json(path)["reply"]))
        except (ValueError, KeyError, TypeError):
            return None  # a damaged cache file is asked again and overwritten

    def _ask(self, paper_id: str, body: dict[str, Any], sha: str) -> dict[str, Any] | None:
        """The parsed reply, after up to ``max_retries`` retries; None (quarantined) if none.

        ``tenacity`` runs the attempts and the backoff; a wrong URL, key or model
        (:class:`LLMError`) is raised at once, since no retry can fix it.
        """
        errors: list[str] = []
        last_payload: list[bytes] = []  # the last reply's body, kept for the quarantine

        def attempt() -> dict[str, Any]:
            self.stats["requests"] += 1
            response = self._post(body)
            last_payload[:] = [response.content]
            if response.status_code in FATAL_STATUSES:
                raise LLMError(
                    f"{self.endpoint} answered HTTP {response.status_code} for model "
                    f"{self.model!r}; check graph.llm_url, graph.llm_model and the API key "
                    "in the environment variable named by graph.llm_api_key_env"
                )
            if response.status_code != 200:
                raise _RetryableStatus(f"HTTP {response.status_code}")
            return parse_reply(_content_of(response))

        def record_failure(state: RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome is not None else None
            # A transport error names its kind; a status or a bad reply is its own message.
            described = (
                f"{type(error).__name__}: {error}"
                if isinstance(error, requests.RequestException)
                else str(error)
            )
            errors.append(f"attempt {state.attempt_number}: {described}")

        def count_retry(_: RetryCallState) -> None:
            self.stats["retries"] += 1

        def give_up(_: RetryCallState) -> None:
            io.quarantine(
                self.quarantine_dir,
                "graph",
                paper_id,
                reason=f"LLM reply unusable after {self.max_retries + 1} attempts: {errors[-1]}",
                payload=last_payload[0] if last_payload else None,
                details={"endpoint": self.endpoint, "request_sha": sha, "errors": errors},
            )

        retrying = Retrying(
            stop=stop_after_attempt(self.max_retries + 1),
            retry=retry_if_exception_type(
                (requests.RequestException, _RetryableStatus, MalformedReply)
            ),
            wait=wait_exponential(multiplier=self.backoff_seconds, max=MAX_BACKOFF_SECONDS),
            sleep=self._sleep,
            after=record_failure,
            before_sleep=count_retry,
            retry_error_callback=give_up,
        )
        reply: dict[str, Any] | None = retrying(attempt)
        return reply

    def _post(self, body: dict[str, Any]) -> requests.Response:
        try:
            return self.session.post(self.endpoint, json=body, timeout=self.timeout_seconds)
        except (
            requests.exceptions.InvalidURL,
            requests.exceptions.MissingSchema,
            requests.exceptions.InvalidSchema,
        ) as error:
            raise LLMError(
                f"graph.llm_url gives the endpoint {self.endpoint!r}, which is not a "
                f"usable URL ({error}); write it as http(s)://host:port/v1"
            ) from error


class _RetryableStatus(Exception):
    """An HTTP status other than 200 that a later attempt may not get (429, 5xx...)."""


def _content_of(response: requests.Response) -> str:
    """The message text of a chat-completions response."""
    try:
        content = response.json()["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as error:
        raise MalformedReply(
            f"response is not a chat completion ({type(error).__name__}: {error})"
        ) from error
    if not isinstance(content, str):
        raise MalformedReply("response's message content is not a string")
    return content
