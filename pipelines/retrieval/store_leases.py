"""Readers' leases on the embedding store's models: eviction never pulls a table from under
a process that has it open.

The store keeps the tables of at most a few models and evicts the least recently used
(:mod:`pipelines.retrieval.vector_store`). A process that opened a model's table a while ago
(``mathembed search --alias previous``, a ``serve-search`` started before a night) would
otherwise find it deleted by a night writing new models, and fail its next write. So a
process holds a shared ``flock`` on ``<store>/.leases/m<model id>.lease`` for each model
it has open, for as long as it lives; eviction takes the exclusive lock without waiting
and skips a model it cannot get (a lease is held), keeping it past the bound until its
readers are gone. The kernel drops a dead process's locks, so no lease outlives its
holder. Leases belong to the process, not to one store object: a process is what another
must not pull a table from under, and it may evict what it opened itself.

The lease files stay (empty files, one per model ever opened): removing one while
another process is about to lock it would let two processes lock different files of the
same name.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator
from pathlib import Path

LEASE_FOLDER = ".leases"


def lease_path(store_folder: Path, model_id: str) -> Path:
    return store_folder / LEASE_FOLDER / f"m{model_id}.lease"


#: This process's leases: lease file -> the descriptor holding its shared lock.
_held: dict[Path, int] = {}
_held_lock = threading.Lock()


def hold(store_folder: Path, model_id: str) -> None:
    """Take this process's shared lease on ``model_id`` (once; waits while an eviction
    holds it exclusively, which takes as long as deleting a table)."""
    path = lease_path(store_folder, model_id)
    with _held_lock:
        if path in _held:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_SH)
        except OSError:
            os.close(descriptor)
            raise
        _held[path] = descriptor


def release(store_folder: Path, model_id: str) -> None:
    """Give up this process's lease on ``model_id`` (closing the descriptor drops it)."""
    with _held_lock:
        descriptor = _held.pop(lease_path(store_folder, model_id), None)
    if descriptor is not None:
        os.close(descriptor)


@contextlib.contextmanager
def evicting(store_folder: Path, model_id: str) -> Iterator[bool]:
    """Hold ``model_id`` exclusively while its tables are deleted: yields False (and
    nothing may be deleted) when another process has a lease on it. This process's own
    lease is given up first: a process may evict what it opened itself."""
    release(store_folder, model_id)
    path = lease_path(store_folder, model_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(descriptor)
