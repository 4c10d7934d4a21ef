"""What the benchmarks record about the machine and code, and how they measure memory.

Imported by the ``bench_*.py`` scripts (run as scripts, so this folder is on
``sys.path``). Imports nothing numeric, so a script can still pin its thread pools
through the environment before NumPy loads.
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import os
import platform
import resource
import subprocess
import time
from pathlib import Path
from typing import Any


def proc_status_kb(field_name: str, pid: int | str = "self") -> int | None:
    """A ``kB`` field of ``/proc/<pid>/status`` (Linux), or None."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def reset_peak_rss() -> str:
    """Reset the peak-RSS mark to the current RSS; say how the peak will be read."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear_refs:
            clear_refs.write("5")
    except OSError:
        return "ru_maxrss since child start (no /proc/self/clear_refs; may overstate)"
    return "VmHWM after resetting it via /proc/self/clear_refs just before the call"


def peak_rss_bytes() -> int:
    hwm = proc_status_kb("VmHWM")
    kb = hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb * 1024


def rss_bytes() -> int:
    rss = proc_status_kb("VmRSS")
    return 0 if rss is None else rss * 1024


def load_average() -> list[float] | None:
    """1/5/15-minute load averages: other work on the machine skews every number here."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _cpu_times() -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs from ``/proc/stat``."""
    try:
        first_line = Path("/proc/stat").read_text(encoding="ascii").split("\n", 1)[0]
    except OSError:
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = map(int, first_line.split()[1:9])
    busy = user + nice + system + irq + softirq + steal
    return busy, busy + idle + iowait


def cpu_busy_fraction(interval_s: float = 1.0) -> float | None:
    """Share of the machine's CPU time that was busy over ``interval_s`` (this process idles)."""
    before = _cpu_times()
    time.sleep(interval_s)
    after = _cpu_times()
    if before is None or after is None or after[1] == before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])


def _first_cpu_fields() -> dict[str, str]:
    """``/proc/cpuinfo`` fields of the first processor (empty off Linux)."""
    fields: dict[str, str] = {}
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return fields
    for line in text.split("\n\n", 1)[0].splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


def cpu_facts() -> dict[str, Any]:
    """CPU model, core count, memory and the SIMD flags that decide which kernels can run."""
    fields = _first_cpu_fields()
    flags = set(fields.get("flags", "").split())
    wanted = ("avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni")
    return {
        "cpu_model": fields.get("model name", platform.processor() or "unknown"),
        # family 25 + AVX-512 is AMD Zen 4; model numbers pin the exact part
        "cpu_family": fields.get("cpu family"),
        "cpu_model_number": fields.get("model"),
        "cpu_mhz": fields.get("cpu MHz"),
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)),
        "flags": {flag: flag in flags for flag in wanted},
        "platform": platform.platform(),
        "memory_gb": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9,
    }


def fmt(value: float | None, spec: str = ".3g") -> str:
    """A table cell: ``-`` for a missing or NaN value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:{spec}}"


def to_jsonable(value: Any) -> Any:
    """Plain JSON types: NumPy scalars (via ``.item()``), tuples, non-finite floats → None."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):  # a NumPy scalar
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


REPO_ROOT = Path(__file__).resolve().parent.parent


def installed_versions(*names: str) -> dict[str, str | None]:
    """Python's version and each named distribution's (None = not installed)."""

    def dist(name: str) -> str | None:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None

    return {"python": platform.python_version(), **{name: dist(name) for name in names}}


def git_state() -> dict[str, Any]:
    """The commit measured and whether the working tree had changes (None without git)."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=True
            )
        except (OSError, subprocess.CalledProcessError):
            return None
        return done.stdout.strip()

    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": git("rev-parse", "HEAD"), "dirty": None if status is None else bool(status)}


def write_record(path: Path, record: dict[str, Any]) -> None:
    """A bench's JSON record, with the commit measured and the machine's load beside it."""
    full = {**record, "git": git_state(), "load_average": load_average()}
    path.write_text(json.dumps(to_jsonable(full), indent=1) + "\n", encoding="utf-8")
