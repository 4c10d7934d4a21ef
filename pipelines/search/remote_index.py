"""Search served by a Qdrant server (``search.engine: qdrant``): when one machine is outgrown.

The faiss index (:mod:`pipelines.search.ann`) lives in the search process's memory beside
its own copy of the store; past one machine's RAM, or for several search replicas over one
index, the champion's vectors go to a vector engine instead. Qdrant because its Python
client has an embedded mode (``QdrantClient(path=...)`` / ``":memory:"``) that runs the very
client calls below without a server, so they are tested here, and its server is one
container image (``infra/docker-compose.yml``, ``infra/k8s/qdrant.yaml``).

* **What**: the embedding store's unit vectors of the model (the ``normalize`` key) stay
  the source; a collection ``mathembed-m<model id>-d<width>`` is derived from them and can
  always be rebuilt from them. Dot product on unit vectors: the cosine, as the exact index.
* **Trust**: the collection's metadata names the model's fingerprint, the width and the
  layout (:data:`COLLECTION_FORMAT`), and its vectors' size and distance are checked: a
  collection of another model, width, distance or layout is deleted and rebuilt with a
  warning, never trusted. The model's collections under another name (another width)
  are deleted; beyond :data:`~pipelines.retrieval.vector_store.MAX_STORED_MODELS` models the
  least recently synced collections go, as the store bounds its tables.
* **Content**: each sync compares a sample of the collection's points
  (:data:`CHECKED_POINTS`, chosen by id: a fixed, hash-spread slice) with the store's
  vectors, which are themselves checked row by row; a point that differs (a server restored
  from a stale or damaged snapshot) makes the collection untrusted: deleted and rebuilt
  with a warning. A sample, not every point: reading every vector back would cost what a
  rebuild costs.
* **A night** (:func:`sync_qdrant_index`): the ids are those of the faiss index
  (:func:`pipelines.search.ann.passage_id`, from the text's hash), so an edited text is a
  new point and its old one departs; only the points the collection lacks are upserted,
  the departed deleted. A sync cut short leaves a collection the next sync completes: what
  it holds is read back, never assumed.
* **Answers** (:class:`RemoteIndex`): rows and scores, best first, ties by row, every
  passage when more are asked for than it holds: the in-process indexes' contract, so the
  hybrid ranking above it is unchanged.

The server is reached at ``search.engine_url``; one that does not answer, or answers not as
Qdrant does (an HTTP error, something that is not JSON, JSON of another shape), is a
one-line error naming the URL (credentials hidden) and the knob, raised before anything is
embedded.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from pipelines.common.redact import redact, redact_url
from pipelines.retrieval.stored_vectors import StoredVectors
from pipelines.retrieval.vector_store import MAX_STORED_MODELS, StoreKey, models_to_evict
from pipelines.search.ann import Vectors, passage_id

log = logging.getLogger(__name__)

#: Every collection this module writes starts so; others on the server are never touched.
COLLECTION_PREFIX = "mathembed-"
#: Bumped with the collection's layout (ids, distance, metadata): an older one is rebuilt.
COLLECTION_FORMAT = "1"
_FORMAT_KEY = "mathembed.collection_format"
_WIDTH_KEY = "mathembed.width"
_SYNCED_KEY = "mathembed.synced_at"
#: Points per upsert request, and ids per scroll page while the held ids are read.
UPSERT_BATCH = 1_024
SCROLL_PAGE = 10_000
#: Points whose vectors each sync reads back and compares with the store's.
CHECKED_POINTS = 256
#: How far a point's vector may be from the store's (the server keeps float32 as sent).
CHECK_TOLERANCE = 1e-6
#: Seconds a request to the server may take.
REQUEST_TIMEOUT = 30


def qdrant() -> Any:
    """``qdrant_client``, imported on first use (search.engine: embedded never needs it)."""
    import qdrant_client

    return qdrant_client


class EngineUnreachableError(ValueError):
    """``search.engine_url`` does not lead to a Qdrant server that answers."""


@contextlib.contextmanager
def engine_errors(url: str) -> Iterator[None]:
    """Turn the client's errors into one line naming the server (credentials hidden) and
    the knob."""
    exceptions = qdrant().http.exceptions
    try:
        yield
    # The client parses a 2xx answer unguarded: what is not JSON raises as json's error.
    except (exceptions.ApiException, json.JSONDecodeError) as error:
        where = f"{redact_url(url)} (search.engine_url)"
        answered = _not_qdrant_answer(error)
        if answered is not None:
            raise EngineUnreachableError(
                f"the server at {where} answered {answered}, not as a Qdrant server; point "
                "search.engine_url at Qdrant's HTTP port (6333) or set search.engine: embedded"
            ) from error
        reason = " ".join(redact(str(error)).split()) or type(error).__name__
        raise EngineUnreachableError(
            f"no Qdrant server answers at {where}: {reason}; start it (infra/README.md: "
            "docker compose ... up -d qdrant) or set search.engine: embedded"
        ) from error


def _not_qdrant_answer(error: Exception) -> str | None:
    """What the server answered that Qdrant would not (None: it did not answer)."""
    from pydantic import ValidationError

    exceptions = qdrant().http.exceptions
    if isinstance(error, exceptions.UnexpectedResponse):
        return f"HTTP {error.status_code} {error.reason_phrase}"
    if isinstance(error, json.JSONDecodeError):
        return "something that is not JSON"
    if isinstance(error, exceptions.ResponseHandlingException) and isinstance(
        error.source, ValidationError
    ):
        return "JSON of another shape"  # pydantic's page-long account of it left out
    return None


# ---------------------------------------------------------------------- the collection


def collection_name(key: StoreKey, width: int) -> str:
    """The collection of ``key``'s model at ``width`` dimensions."""
    return f"{COLLECTION_PREFIX}m{key.model_id}-d{width}"


def collection_metadata(key: StoreKey, width: int) -> dict[str, str]:
    """What a collection's metadata says it holds, checked when it is opened."""
    return {**key.metadata(), _WIDTH_KEY: str(width), _FORMAT_KEY: COLLECTION_FORMAT}


def collection_problem(info: Any, key: StoreKey, width: int) -> str | None:
    """Why the collection described by ``info`` is not ``key``'s at ``width`` (None: it is)."""
    models = qdrant().models
    vectors = info.config.params.vectors
    if not isinstance(vectors, models.VectorParams):
        return "it holds named vectors"
    if vectors.size != width:
        return f"it holds {vectors.size}-dim vectors, the store {width}"
    if vectors.distance != models.Distance.DOT:
        return f"it ranks by {vectors.distance.value}, not the dot product"
    found = info.config.metadata or {}
    for name, expected in collection_metadata(key, width).items():
        if str(found.get(name)) != expected:
            return f"{name} is {found.get(name)!r}, expected {expected!r}"
    return None


def open_collection(client: Any, key: StoreKey, width: int) -> str:
    """The name of ``key``'s collection, created (or rebuilt when it cannot be trusted)."""
    models = qdrant().models
    name = collection_name(key, width)
    if client.collection_exists(name):
        problem = collection_problem(client.get_collection(name), key, width)
        if problem is None:
            return name
        log.warning("qdrant collection %s is not trusted: %s; rebuilding it", name, problem)
        client.delete_collection(name)
    client.create_collection(
        name,
        vectors_config=models.VectorParams(size=width, distance=models.Distance.DOT),
        metadata=collection_metadata(key, width),
    )
    return name


def delete_stale(client: Any, key: StoreKey, keep: str) -> None:
    """Delete this model's other collections (another width) and, past the bound, the
    least recently synced models' collections."""
    ours = [
        found.name
        for found in client.get_collections().collections
        if found.name.startswith(COLLECTION_PREFIX) and found.name != keep
    ]
    own_prefix = f"{COLLECTION_PREFIX}m{key.model_id}-"
    synced: dict[str, int] = {}
    names_of: dict[str, list[str]] = {}
    for name in ours:
        if name.startswith(own_prefix):
            log.info("qdrant: deleting %s, another width of this model", name)
            client.delete_collection(name)
            continue
        model_id = name.removeprefix(f"{COLLECTION_PREFIX}m").split("-", 1)[0]
        metadata = client.get_collection(name).config.metadata or {}
        synced[model_id] = max(synced.get(model_id, 0), int(metadata.get(_SYNCED_KEY, 0)))
        names_of.setdefault(model_id, []).append(name)
    synced[key.model_id] = time.time_ns()
    for model_id in models_to_evict(synced, MAX_STORED_MODELS, {key.model_id}):
        for name in names_of[model_id]:
            log.info("qdrant: deleting %s, the least recently synced model", name)
            client.delete_collection(name)


def held_ids(client: Any, name: str) -> set[int]:
    """The point ids the collection holds, read a page at a time without their vectors."""
    ids: set[int] = set()
    offset = None
    while True:
        points, offset = client.scroll(
            name, limit=SCROLL_PAGE, offset=offset, with_payload=False, with_vectors=False
        )
        ids.update(int(point.id) for point in points)
        if offset is None:
            return ids


def new_vectors(
    stored: StoredVectors, key_of: dict[int, str], new_ids: Sequence[int], total: int
) -> Iterator[tuple[list[int], Vectors]]:
    """The new points' ids and vectors, a batch at a time: fetched by key when they are a
    few of the corpus, streamed from the whole table when they are most of it."""
    wanted = {key_of[number] for number in new_ids}
    if 4 * len(new_ids) <= total:
        for start in range(0, len(new_ids), UPSERT_BATCH):
            batch = list(new_ids[start : start + UPSERT_BATCH])
            vectors, missing = stored.lookup([key_of[number] for number in batch])
            if missing:  # pragma: no cover - the caller stored every text first
                raise RuntimeError(f"the embedding store lacks {len(missing)} vectors to send")
            yield batch, vectors
        return
    for hashes, vectors in stored.batches():
        keep = [row for row, text_key in enumerate(hashes) if text_key in wanted]
        for start in range(0, len(keep), UPSERT_BATCH):
            rows = keep[start : start + UPSERT_BATCH]
            yield [passage_id(hashes[row]) for row in rows], vectors[rows]


def content_problem(
    client: Any, name: str, stored: StoredVectors, key_of: dict[int, str], held: set[int]
) -> str | None:
    """Why the collection's points are not the store's vectors (None: the sample matches):
    the :data:`CHECKED_POINTS` smallest ids the collection and the corpus share."""
    sample = sorted(held & key_of.keys())[:CHECKED_POINTS]
    if not sample:
        return None
    points = client.retrieve(name, ids=sample, with_payload=False, with_vectors=True)
    found = {int(point.id): point.vector for point in points}
    expected, missing = stored.lookup([key_of[number] for number in sample])
    if missing:  # pragma: no cover - the caller stored every text first
        raise RuntimeError(f"the embedding store lacks {len(missing)} vectors to check")
    differ = sum(
        number not in found
        or not np.allclose(np.asarray(found[number], np.float32), want, atol=CHECK_TOLERANCE)
        for number, want in zip(sample, expected, strict=True)
    )
    if differ:
        return f"{differ} of {len(sample)} points checked differ from the embedding store"
    return None


# -------------------------------------------------------------------------- the index


class RemoteIndex:
    """Search through a Qdrant collection: ``rows_of`` maps a point id to the corpus rows
    holding that text (one, unless two chunks are the same text)."""

    kind = "qdrant"

    def __init__(
        self, client: Any, name: str, rows_of: dict[int, list[int]], *, added: int, removed: int
    ) -> None:
        self.client = client
        self.name = name
        self.rows_of = rows_of
        self.passages = sum(len(rows) for rows in rows_of.values())
        self.added = added
        self.removed = removed

    def top(self, query_vector: Vectors, k: int) -> tuple[list[int], list[float]]:
        """Rows and dot products of the ``k`` passages closest to a unit query, best first,
        ties by row; every passage when ``k`` is at least how many it holds."""
        k = min(k, self.passages)
        if k <= 0:
            return [], []
        found = self.client.query_points(
            self.name,
            query=np.asarray(query_vector, dtype=np.float32).reshape(-1).tolist(),
            limit=min(k, len(self.rows_of)),
            with_payload=False,
            with_vectors=False,
            timeout=REQUEST_TIMEOUT,
        ).points
        hits = [
            (float(point.score), row)
            for point in found
            for row in self.rows_of.get(int(point.id), [])
        ]
        hits.sort(key=lambda hit: (-hit[0], hit[1]))
        return [row for _, row in hits[:k]], [score for score, _ in hits[:k]]


def sync_qdrant_index(client: Any, stored: StoredVectors, text_keys: Sequence[str]) -> RemoteIndex:
    """Bring the model's collection to exactly ``text_keys`` (every one already in
    ``stored``): upsert the points it lacks, delete the departed, rebuild it when it cannot
    be trusted."""
    models = qdrant().models
    key = stored.key
    width = stored.width
    if width is None:
        raise ValueError("the store holds no vectors of this model to send to Qdrant")
    name = open_collection(client, key, width)
    delete_stale(client, key, keep=name)
    rows_of: dict[int, list[int]] = {}
    for row, text_key in enumerate(text_keys):
        rows_of.setdefault(passage_id(text_key), []).append(row)
    key_of = {passage_id(text_key): text_key for text_key in text_keys}
    held = held_ids(client, name)
    problem = content_problem(client, name, stored, key_of, held)
    if problem is not None:
        log.warning("qdrant collection %s is not trusted: %s; rebuilding it", name, problem)
        client.delete_collection(name)
        name = open_collection(client, key, width)
        held = set()
    departed = sorted(held - key_of.keys())
    new_ids = sorted(key_of.keys() - held)
    for start in range(0, len(departed), UPSERT_BATCH):
        selector = models.PointIdsList(points=departed[start : start + UPSERT_BATCH])
        client.delete(name, points_selector=selector, wait=True)
    for ids, vectors in new_vectors(stored, key_of, new_ids, len(key_of)):
        batch = models.Batch(ids=ids, vectors=np.ascontiguousarray(vectors).tolist())
        client.upsert(name, points=batch, wait=True)
    client.update_collection(name, metadata={_SYNCED_KEY: time.time_ns()})
    log.info(
        "search index (qdrant): %d passages' vectors added to %s, %d removed (%d held)",
        len(new_ids),
        name,
        len(departed),
        len(key_of),
    )
    return RemoteIndex(client, name, rows_of, added=len(new_ids), removed=len(departed))


class QdrantServer:
    """The server at ``url``, checked with one request when this is made: an unreachable
    one fails before the caller embeds anything."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.client = qdrant().QdrantClient(
            url=url, timeout=REQUEST_TIMEOUT, check_compatibility=False
        )
        with engine_errors(url):
            self.client.get_collections()

    def sync(self, stored: StoredVectors, text_keys: Sequence[str]) -> RemoteIndex:
        """:func:`sync_qdrant_index` on this server."""
        with engine_errors(self.url):
            return sync_qdrant_index(self.client, stored, text_keys)
