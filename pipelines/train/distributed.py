"""Training on several processes: data parallelism (DDP) under ``torchrun``.

``train.processes`` says how many: ``auto`` is one per visible CUDA device (one on a CPU
machine), a number asks for exactly that many (CPU processes on the gloo backend need
``train.device: cpu``; CUDA ones one GPU each). ``mathembed train`` with more than one
becomes torchrun's launcher, ``--standalone`` (:mod:`pipelines.train.launcher`,
:func:`torchrun_arguments`), and runs itself as the ranks; a process that ``torchrun``
started (``RANK``/``WORLD_SIZE`` set, :func:`current_world`) trains as one rank of it, so
``torchrun --nproc-per-node N -m pipelines train`` works too (and is how several machines
would share a run).

What the processes share and what only rank 0 does:

* **The batch.** ``train.batch_size`` stays the *global* batch: every optimiser step takes
  one no-duplicates batch of that many pairs, drawn by the same seeded sampler on every
  rank, and each rank embeds its ``batch_size / processes`` share (accelerate's
  ``split_batches``). The loss gathers the embeddings of all ranks
  (``gather_across_devices``), so each anchor still has ``batch_size - 1`` in-batch
  negatives and a step computes the loss one process would: the learning rate, the step
  count and the method's batch of 128 mean the same on one GPU and on eight.
* **The data.** Every rank reads the same validated pairs file; nothing is sharded on disk.
* **The writes.** Rank 0 alone decides the resume (:mod:`pipelines.train.checkpoints`),
  saves checkpoints, runs the validation IR evaluation (the trainer broadcasts its scores,
  so every rank keeps the same best checkpoint), mixes it with the base model
  (:mod:`pipelines.train.mixing`), publishes the candidate, writes
  ``metrics/train.json``, logs progress and keeps the one MLflow run. The other ranks
  write only their own random-number state into each checkpoint (``rng_state_<rank>.pth``,
  which transformers' resume reads back) and return rank 0's report (:func:`share`).
* **A rank that dies** ends the run: the launcher stops the others (rank 0 sees SIGTERM,
  which the command turns into an interrupt: MLflow run KILLED, no candidate published)
  and exits 1 with one line naming the rank and how it ended; the checkpoints left behind
  are resumed or discarded as for a killed single-process run.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pipelines.train.setup import TrainError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformerTrainer

T = TypeVar("T")

#: How long a rank waits for the others at a collective before the run fails: long enough
#: for rank 0 to evaluate and save a checkpoint of a large model, short of a night.
COLLECTIVE_TIMEOUT = timedelta(minutes=30)


@dataclass(frozen=True)
class World:
    """This process's place in a launch: its rank, its rank on this machine, how many."""

    rank: int = 0
    local_rank: int = 0
    size: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


# -- pure helpers -------------------------------------------------------------------------


def current_world(environ: Mapping[str, str] | None = None) -> World:
    """The launch this process belongs to, from the variables ``torchrun`` sets (one
    process alone when they are absent)."""
    env = os.environ if environ is None else environ
    if "WORLD_SIZE" not in env or "RANK" not in env:
        return World()
    return World(
        rank=int(env["RANK"]),
        local_rank=int(env.get("LOCAL_RANK", env["RANK"])),
        size=int(env["WORLD_SIZE"]),
    )


def resolve_processes(
    requested: Literal["auto"] | int,
    device: Literal["auto", "cpu", "cuda"],
    cuda_devices: int,
) -> int:
    """How many processes ``train.processes`` asks for on this machine, given ``train.device``
    and the CUDA devices torch sees; :class:`TrainError` naming the knob when it cannot be.

    ``auto``: one per CUDA device (when ``train.device`` allows CUDA and there is one), else 1.
    """
    if requested == "auto":
        return cuda_devices if device != "cpu" and cuda_devices > 0 else 1
    if requested == 1 or device == "cpu":
        return requested
    if cuda_devices == 0:
        raise TrainError(
            f"train.processes is {requested} but torch sees no CUDA device, so there is no "
            f"GPU for each process; set train.processes to 1 or auto, or train.device to cpu "
            f"for {requested} CPU processes"
        )
    if requested > cuda_devices:
        raise TrainError(
            f"train.processes is {requested} but torch sees only {cuda_devices} CUDA "
            f"device(s) (CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}); "
            f"set train.processes to auto or at most {cuda_devices}"
        )
    return requested


def check_batch_split(batch_size: int, processes: int) -> None:
    """The global batch must split evenly over the processes, at least 1 pair each."""
    if processes > 1 and batch_size % processes:
        raise TrainError(
            f"train.batch_size {batch_size} does not split evenly over train.processes "
            f"{processes} (each process embeds batch_size / processes pairs); use a batch "
            f"size that is a multiple of {processes}"
        )


def torchrun_arguments(processes: int, arguments: Sequence[str]) -> list[str]:
    """torchrun's arguments that run ``mathembed <arguments>`` as ``processes`` ranks on this
    machine (what :mod:`pipelines.train.launcher` runs).

    ``--standalone``: a rendezvous on a free local port, no store to set up.
    """
    return ["--standalone", f"--nproc-per-node={processes}", "-m", "pipelines", *arguments]


def torchrun_command(processes: int, arguments: Sequence[str]) -> list[str]:
    """The same launch as a command line (what the log shows, and a person can rerun)."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        *torchrun_arguments(processes, arguments),
    ]


# -- collectives --------------------------------------------------------------------------


def _joined() -> bool:
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def join(world: World, device: Literal["cpu", "cuda"]) -> None:
    """Join the process group of ``world`` (gloo on CPU, NCCL on CUDA; each rank on the GPU
    of its local rank). Nothing for a single process or a group already joined."""
    if world.size == 1 or _joined():
        return
    import torch
    import torch.distributed as dist

    # Deprecations inside the libraries' own DDP code (accelerate wraps the model with
    # broadcast_buffers, sentence-transformers gathers with torch.distributed.nn): nothing
    # this project calls, and repeated by every rank at every gather.
    for message in (
        r"`broadcast_buffers` is deprecated",
        r"torch\.distributed\.nn\.functional\.all_gather is deprecated",
    ):
        warnings.filterwarnings("ignore", message=message, category=FutureWarning)

    if device == "cuda":
        if world.local_rank >= torch.cuda.device_count():
            raise TrainError(
                f"rank {world.rank} has no GPU of its own: this machine runs "
                f"{world.local_rank + 1} or more processes but torch sees "
                f"{torch.cuda.device_count()} CUDA device(s); start at most one process per "
                "GPU (train.processes: auto, or torchrun --nproc-per-node <GPUs>)"
            )
        torch.cuda.set_device(world.local_rank)
        dist.init_process_group(
            "nccl",
            timeout=COLLECTIVE_TIMEOUT,
            device_id=torch.device("cuda", world.local_rank),
        )
    else:
        dist.init_process_group("gloo", timeout=COLLECTIVE_TIMEOUT)


def leave() -> None:
    """Leave the process group (before the process exits, as torch asks)."""
    if _joined():
        import torch.distributed as dist

        dist.destroy_process_group()


def share(value: T) -> T:
    """Rank 0's ``value`` on every rank (a picklable object); ``value`` itself alone.

    Also a meeting point: no rank goes past it before rank 0 has reached it.
    """
    if not _joined():
        return value
    import torch.distributed as dist

    box: list[T] = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


@contextmanager
def main_first(world: World) -> Iterator[None]:
    """Rank 0 runs the block first (it may write a cache), then the others (which read it)."""
    import torch.distributed as dist

    if not _joined():
        yield
        return
    if not world.is_main:
        dist.barrier()
    yield
    if world.is_main:
        dist.barrier()


#: What gloo's transport errors say (a plain RuntimeError, "[.../gloo/transport/tcp/pair.cc:545]
#: Read error ...: Connection reset by peer"): the connection to another rank broke.
GLOO_TRANSPORT = "/gloo/transport/"


def lost_another_rank(error: BaseException) -> bool:
    """Whether ``error`` says that this rank lost its connection to another rank: one of
    torch's distributed errors, or gloo's transport error when a peer's process died."""
    import torch.distributed as dist

    return isinstance(error, dist.DistError) or (
        isinstance(error, RuntimeError) and GLOO_TRANSPORT in str(error)
    )


@contextmanager
def lost_rank_as_interrupt(world: World) -> Iterator[None]:
    """A rank that loses another rank ends as a stopped one does (``KeyboardInterrupt``).

    When a rank dies, the others can fail at their next collective before the launcher's
    SIGTERM reaches them: that failure is the other rank's death, not theirs. Turned into
    the interrupt the SIGTERM would have been, it ends the MLflow run KILLED, as for the
    launcher's stop, and prints no traceback; the launcher names the rank that died.
    """
    try:
        yield
    except Exception as error:
        if world.size > 1 and lost_another_rank(error):
            raise KeyboardInterrupt(f"rank {world.rank} lost another rank: {error}") from error
        raise


def rank_zero_saving_trainer() -> type[SentenceTransformerTrainer]:
    """``SentenceTransformerTrainer`` whose model saves happen on rank 0 alone.

    transformers 5's ``Trainer.save_model`` calls ``_save`` on every rank and leaves it to
    ``_save`` to return on the ranks that do not write; sentence-transformers 6.2 overrides
    ``_save`` assuming only rank 0 calls it, so every rank wrote the same checkpoint files
    at once. Harmless with one process.
    """
    from sentence_transformers import SentenceTransformerTrainer

    class RankZeroSaves(SentenceTransformerTrainer):
        def _save(self, output_dir: str | None = None, state_dict: Any = None) -> None:
            if self.args.should_save:
                super()._save(output_dir, state_dict=state_dict)

    return RankZeroSaves
