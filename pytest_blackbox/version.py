"""The installed distribution's version: the one number, written in pyproject.toml and read from the
package metadata, for ``pytest_blackbox.__version__`` and ``blackbox --version``."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["installed_version"]


def installed_version() -> str:
    """The version pip installed; ``0+unknown`` for a source tree that was never installed."""
    try:
        return version("pytest-blackbox")
    except PackageNotFoundError:
        return "0+unknown"
