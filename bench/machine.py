"""The machine and the versions a benchmark ran on, printed at the top of its output."""

from __future__ import annotations

import os
import platform
import sys
import time
from importlib import metadata

try:
    import resource
except ImportError:  # Windows
    resource = None  # type: ignore[assignment]

PACKAGES = (
    "anthropic",
    "openai",
    "pydantic",
    "respx",
    "httpx",
    "httpx2",
    "boto3",
    "aiobotocore",
    "vcrpy",
    "pytest-recording",
    "pytest",
    "pytest-blackbox",
)


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            names = [line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")]
        return names[0] if names else platform.processor()
    except OSError:
        return platform.processor() or platform.machine()


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


def children_cpu() -> float:
    """CPU seconds (user + system) of every child process waited for so far: steadier than wall time
    on a shared machine. Where it cannot be read (Windows), the wall clock instead."""
    if resource is None:
        return time.perf_counter()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def load() -> str:
    """The 1-minute load average (what else the machine was doing), or "unknown"."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "unknown"


def describe() -> str:
    """Two lines: the machine (cores, CPU, OS, Python, load) and the versions of the packages measured."""
    machine = (
        f"machine: {os.cpu_count()} cores, {_cpu()}, {platform.system()} {platform.release()}, "
        f"{platform.python_implementation()} {platform.python_version()}, load average {load()}"
    )
    versions = ", ".join(f"{name} {_version(name)}" for name in PACKAGES)
    return f"{machine}\nversions: {versions}"


if __name__ == "__main__":
    print(describe(), file=sys.stdout)
