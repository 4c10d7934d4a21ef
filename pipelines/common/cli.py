"""What every ``mathembed`` command shares: its ``--params``/``--root`` options and one
error contract.

Exit codes, the same in every command: 0 done, 1 bad input (data missing or malformed, a
failed check, an unusable model), 2 configuration (``params.yaml`` or an argument). The
message is one line on stderr, prefixed with the command, and says what to do about it.

Nothing heavy is imported here: ``mathembed --help`` loads every command module, so a
command imports its stage's code inside its body.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from pipelines.common.config import (
    PARAMS_FILE,
    PROJECT_PARAMS_FILE,
    ConfigError,
    Params,
    load_params,
)
from pipelines.common.locks import StageBusyError, stage_lock

EXIT_BAD_INPUT = 1
EXIT_CONFIG = 2
#: The Rust extension (``metrics_rs/``), built by ``make build``; commands import it lazily.
EXTENSION = "metrics_rs"
MISSING_EXTENSION = f"{EXTENSION} is not built; run `make build` (then rerun this command)"

ParamsOption = Annotated[
    Path,
    typer.Option(
        "--params",
        help=(
            "params.yaml to read: a relative path is inside --root (without a params.yaml "
            "there, the project's); an absolute one as is."
        ),
        dir_okay=False,
    ),
]
RootOption = Annotated[
    Path,
    typer.Option(
        "--root", help="Project root: data/, models/, metrics/, reports/ and mlruns/ live in it."
    ),
]
ProgressOption = Annotated[
    bool, typer.Option("--progress/--no-progress", help="Show progress bars on a terminal.")
]
DEFAULT_PARAMS = PARAMS_FILE
DEFAULT_ROOT = Path(".")


def params_path(params: Path, root: Path) -> Path:
    """The ``--params`` file a command reads: relative to ``--root`` (as the flows' is), so
    a command run from another folder reads that project's knobs, not the cwd's.

    A ``--root`` that is only a data folder (no ``params.yaml`` of its own) runs on the
    project's ``params.yaml``, the file every default comes from.
    """
    if params.is_absolute():
        return params
    inside_root = root / params
    if params == DEFAULT_PARAMS and not inside_root.exists():
        return PROJECT_PARAMS_FILE
    return inside_root


def fail(command: str, message: object, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print ``command: message`` on stderr and exit with ``code``."""
    typer.echo(f"{command}: {message}", err=True)
    raise typer.Exit(code=code)


@contextmanager
def command_errors(
    command: str, bad_input: tuple[type[BaseException], ...] = (FileNotFoundError, ValueError)
) -> Iterator[None]:
    """Turn the errors a command expects into its one-line message and exit code.

    A :class:`ConfigError` exits 2; the ``bad_input`` errors exit 1, and so does a file
    operation the system refused (a read-only ``data/``, a full disk); anything else is a
    bug and keeps its traceback.
    """
    try:
        yield
    except ConfigError as error:
        fail(command, error, EXIT_CONFIG)
    except (ImportError, AttributeError) as error:
        if not is_missing_extension(error):
            raise
        fail(command, MISSING_EXTENSION, EXIT_CONFIG)
    except bad_input as error:
        fail(command, error, EXIT_BAD_INPUT)
    except OSError as error:
        fail(command, refused_message(error), EXIT_BAD_INPUT)


def is_missing_extension(error: BaseException) -> bool:
    """Whether ``error`` says :data:`EXTENSION` was never built (pure).

    Not installed: an ImportError naming it. Run from the checkout, where the unbuilt
    source folder ``./metrics_rs`` imports as an empty namespace package: an
    AttributeError on that module, which has no ``__file__``.
    """
    if isinstance(error, ImportError):
        return (error.name or "").split(".")[0] == EXTENSION
    if isinstance(error, AttributeError):
        module = getattr(error, "obj", None)
        return getattr(module, "__name__", None) == EXTENSION and not getattr(
            module, "__file__", None
        )
    return False


class MathembedGroup(TyperGroup):
    """The ``mathembed`` command group: headed ``mathembed`` however it is launched, and a
    command that needs the unbuilt extension says so.

    Commands import their stage's code (and so ``metrics_rs``) in their body, before
    :func:`command_errors` is entered; catching it here covers every command at once.
    """

    def main(  # type: ignore[override]  # same parameters; only prog_name's default differs
        self, args: Sequence[str] | None = None, prog_name: str | None = None, **extra: Any
    ) -> Any:
        # Click names the program after argv[0]: "-c" or "__main__.py" unless launched
        # through the console script; usage lines should name the command a person types.
        return super().main(args, prog_name or self.name, **extra)

    # typer.Context is the public name of the (vendored, private) click Context it extends.
    def invoke(self, ctx: typer.Context) -> object:  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except (ImportError, AttributeError) as error:
            if not is_missing_extension(error):
                raise
            fail(ctx.invoked_subcommand or "mathembed", MISSING_EXTENSION, EXIT_CONFIG)


def refused_message(error: OSError) -> str:
    """One line for a file operation the system refused, naming the file and the fix."""
    where = error.filename or "a file"
    reason = error.strerror or str(error)
    return (
        f"cannot write or read {where}: {reason}; make it writable by this user (and check "
        "the disk has space), then rerun"
    )


def log_progress() -> None:
    """Let the pipeline's own INFO lines (embedding progress, what the embedding store
    reused) reach stderr, one message a line. Without a handler Python drops INFO records,
    so a long embedding was silent in ``dvc repro``'s output and so in the Prefect flow log,
    which shows a stage's output lines (training configures the same in its command)."""
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("pipelines").setLevel(logging.INFO)


@contextmanager
def stage_command(
    command: str,
    params: Path,
    root: Path,
    bad_input: tuple[type[BaseException], ...] = (FileNotFoundError, ValueError),
    *,
    lock: bool = True,
) -> Iterator[Params]:
    """What every stage command does around its work: hold ``root``'s stage lock, read the
    params (``--params`` relative to ``--root``), and turn the expected errors into one line
    (:func:`command_errors`; a busy root is bad input too). ``lock=False``: a process
    whose lock another holds for it (the other ranks of a multi-process training)."""
    with (
        command_errors(command, (*bad_input, StageBusyError)),
        stage_lock(root, command) if lock else nullcontext(),
    ):
        yield load_params(params_path(params, root))
