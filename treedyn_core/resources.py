"""How much memory a command may use: the smaller of what the machine has available and the
process's address-space limit (RLIMIT_AS), so that work that would not fit is refused with
one line before it starts instead of failing half-way."""

from __future__ import annotations

import os

from .errors import TreedynError

try:
    import resource
except ImportError:  # not on every platform
    resource = None


def machine_available_bytes() -> float:
    """Bytes the machine has available to new processes (MemAvailable), inf if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as stream:
            for line in stream:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024.0
    except OSError:
        pass
    return float("inf")


def available_bytes() -> float:
    """Bytes this process may still allocate: min(MemAvailable, RLIMIT_AS − in use), inf when
    neither is known."""
    limit = machine_available_bytes()
    if resource is not None:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            limit = min(limit, soft - _address_space_in_use())
    return limit


def _address_space_in_use() -> float:
    """Bytes of address space this process has mapped (VmSize), 0 if unknown."""
    try:
        with open(f"/proc/{os.getpid()}/status", encoding="ascii") as stream:
            for line in stream:
                if line.startswith("VmSize:"):
                    return float(line.split()[1]) * 1024.0
    except OSError:
        pass
    return 0.0


def check_memory(needed: float, what: str, fix: str, other_processes: bool = False) -> None:
    """Refuse (TreedynError, one line) work that needs `needed` bytes when less is available
    (to this process; with `other_processes`, to new processes of the machine)."""
    available = machine_available_bytes() if other_processes else available_bytes()
    if needed > available:
        raise TreedynError(f"{what} would need {needed / 2**30:.2f} GiB of memory, more than "
                           f"the {max(available, 0) / 2**30:.2f} GiB available; {fix}")
