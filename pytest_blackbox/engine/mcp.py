"""MCP tools through a session: every ``tools/list`` and ``tools/call`` is an ordinary pair of tool steps,
and a replay answers them from the cassette without starting the server. User guide: docs/mcp.md.

The client owns the connection, so it can leave it closed: it opens it when a call must really run
(recording, or a replay that went live), in a task of its own that ``async with`` ends.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..errors import BlackboxUnsupportedError, BlackboxUsageError, RecordedToolError

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup  # type: ignore[import-not-found, unused-ignore]

if TYPE_CHECKING:
    import anyio
    from anyio.abc import TaskGroup, TaskStatus
    from mcp import Client
    from mcp.shared.exceptions import MCPError
    from mcp_types import CallToolResult, ListToolsResult
    from typing_extensions import Self

    from .session import Session

__all__ = ["MCP_ERROR_PREFIX", "MCPClient", "listing_tool_name", "mcp_client"]

#: How a tool step records an ``MCPError``: this prefix, then its ``ErrorData`` as JSON.
MCP_ERROR_PREFIX = "MCPError "
#: Modes in which every call runs on the server from the start, so the client connects on entry.
_LIVE_MODES = ("record", "off")
#: What a missing MCP SDK is told: the package is importable without it, the client is not.
MISSING_SDK = (
    "mcp_client needs the MCP Python SDK, which is not installed: pip install 'pytest-blackbox[mcp]'"
)


def require_sdk() -> None:
    """Raise the one-line install hint when the ``mcp`` SDK cannot be imported.

    The SDK is imported where it is used, so ``import pytest_blackbox`` (and ``import *``) works
    without it; this check makes the first use of the client say what to install, not a traceback.
    """
    try:
        import mcp  # noqa: F401
    except ModuleNotFoundError as missing:
        raise BlackboxUsageError(MISSING_SDK) from missing


def listing_tool_name(server: str) -> str:
    """The tool name a ``tools/list`` step records: the server's name, and a form no model tool can take.

    Model tool names are letters, digits, ``_`` and ``-``, so a listing never claims a model's call,
    and each server's listings stay apart.
    """
    return f"mcp:{server}/tools/list"


def mcp_client(
    session: Session, server: Any, *, name: str, tool_prefix: str = "", **client_options: Any
) -> MCPClient:
    """An MCP client whose tool listings and tool calls the session records and replays.

    ``server`` is what ``mcp.Client`` takes (a ``StdioServerParameters``, a URL, a transport, a server
    object); ``client_options`` go to ``mcp.Client`` when it connects. ``name`` names the server in
    the cassette. A call records under ``tool_prefix + tool name``: the name the model knows the tool
    by, which is what ties the step to the model's request.
    """
    return MCPClient(session, server, name=name, tool_prefix=tool_prefix, client_options=client_options)


class MCPClient:
    """``list_tools`` and ``call_tool`` of an ``mcp.Client``, through the session's wrapped tools."""

    def __init__(
        self,
        session: Session,
        server: Any,
        *,
        name: str,
        tool_prefix: str = "",
        client_options: Mapping[str, Any] | None = None,
    ) -> None:
        require_sdk()
        if not isinstance(name, str) or not name:
            raise BlackboxUsageError("an MCP server needs a name (name=...): its tool listings record it")
        if not isinstance(tool_prefix, str):
            raise BlackboxUsageError("tool_prefix must be a string: it starts every recorded tool name")
        self.name = name
        self.tool_prefix = tool_prefix
        self._session = session
        self._server = server
        self._options = dict(client_options or {})
        self._stack: AsyncExitStack | None = None
        self._tasks: TaskGroup | None = None
        self._lock: anyio.Lock | None = None
        self._closing: anyio.Event | None = None
        self._client: Client | None = None

    @property
    def connected(self) -> bool:
        """Whether the server was started (or its connection opened): never in a replay."""
        return self._client is not None

    # -- the connection --------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        import anyio

        if self._stack is not None:
            raise BlackboxUsageError(f"the MCP client for {self.name!r} is already open")
        stack = AsyncExitStack()
        self._tasks = await stack.enter_async_context(anyio.create_task_group())
        self._lock, self._closing, self._stack = anyio.Lock(), anyio.Event(), stack
        if self._session.mode in _LIVE_MODES:
            try:
                await self._connected()
            except BaseException as exc:
                await self.__aexit__(type(exc), exc, exc.__traceback__)
                raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close the connection, if one was opened; an exception from the block comes out as itself.

        anyio wraps it in an ``ExceptionGroup`` on its way through the connection's task group (so does
        ``mcp.Client``); unwrapped, a test catches the agent's own error alike in a recording and in a
        replay, where no connection ever ran.
        """
        stack, self._stack = self._stack, None
        if self._closing is not None:
            self._closing.set()
        try:
            if stack is not None:
                await stack.__aexit__(exc_type, exc, tb)
        except BaseExceptionGroup as group:
            if exc is None or _leaves(group) != [exc]:
                raise
        finally:
            self._client = self._tasks = None

    async def _connected(self) -> Client:
        """The connected ``mcp.Client``, started on first use in a task the ``async with`` owns.

        The client runs in that task rather than the caller's so that the first call to need it may
        come from any task (an agent runs tools in tasks of its own), while the transport is still
        entered and left in one task, as anyio requires.
        """
        assert self._tasks is not None and self._lock is not None
        async with self._lock:
            if self._client is None:
                self._client = await self._tasks.start(self._serve)
        return self._client

    async def _serve(self, *, task_status: TaskStatus[Client]) -> None:
        from mcp import Client

        assert self._closing is not None
        async with Client(self._server, **self._options) as client:
            task_status.started(client)
            await self._closing.wait()

    # -- the recorded operations -----------------------------------------------------------------

    async def list_tools(self, *, cursor: str | None = None, **options: Any) -> ListToolsResult:
        """The server's tools: recorded as a ``tools/list`` step, its input ``{}`` or ``{"cursor": ...}``."""
        from mcp_types import ListToolsResult

        async def list_on_server(_request: Mapping[str, Any]) -> Any:
            client = await self._connected()
            return _wire(await client.list_tools(cursor=cursor, **options))

        request = {} if cursor is None else {"cursor": cursor}
        listed = await self._through_session(listing_tool_name(self.name), list_on_server, request)
        return ListToolsResult.model_validate(listed)

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, *args: Any, **options: Any
    ) -> CallToolResult:
        """One tool call: recorded with the arguments as the tool input and the whole result, ``isError``
        included; an ``MCPError`` is recorded as the step's error and raised again in a replay."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CallToolResult

        async def call_on_server(_arguments: Mapping[str, Any]) -> Any:
            client = await self._connected()
            try:
                return _wire(await client.call_tool(name, arguments, *args, **options))
            except MCPError as error:
                raise _RecordableMCPError(error) from error

        result = await self._through_session(self.tool_prefix + name, call_on_server, arguments or {})
        return CallToolResult.model_validate(result)

    async def _through_session(
        self, step_name: str, run: Callable[[Mapping[str, Any]], Awaitable[Any]], request: Mapping[str, Any]
    ) -> Any:
        """Run (record) or answer (replay) one operation as the wrapped tool ``step_name``."""
        __tracebackhide__ = True
        if self._stack is None:
            raise BlackboxUsageError(
                f"the MCP client for {self.name!r} is not open: use it inside `async with mcp_client(...)`"
            )
        wrapped = self._session.tool(step_name, run)
        try:
            return await wrapped(request)
        except _RecordableMCPError as recorded:
            raise recorded.error from None
        except RecordedToolError as recorded:
            error = mcp_error_from_text(str(recorded))
            if error is None:
                raise
            raise error from None

    def __getattr__(self, attribute: str) -> Any:
        from mcp import Client

        if hasattr(Client, attribute):
            raise BlackboxUnsupportedError(
                f"{attribute} of an MCP client is not recorded in this version; only list_tools and "
                "call_tool go through the session"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {attribute!r}")


class _RecordableMCPError(Exception):
    """An ``MCPError`` on its way through the session: its text is what the tool step records."""

    def __init__(self, error: MCPError) -> None:
        super().__init__(mcp_error_text(error))
        self.error = error


def mcp_error_text(error: MCPError) -> str:
    """``MCPError {"code":…,"message":…,"data":…}``: readable, and enough to raise the same error again."""
    fields = error.error.model_dump(mode="json", exclude_none=True)
    return MCP_ERROR_PREFIX + json.dumps(fields, ensure_ascii=False, separators=(",", ":"))


def mcp_error_from_text(text: str) -> MCPError | None:
    """The ``MCPError`` a recorded error text stands for; ``None`` for any other tool error."""
    if not text.startswith(MCP_ERROR_PREFIX):
        return None
    from mcp.shared.exceptions import MCPError
    from mcp_types import ErrorData
    from pydantic import ValidationError

    try:
        data = ErrorData.model_validate(json.loads(text[len(MCP_ERROR_PREFIX) :]))
    except (ValueError, ValidationError):
        return None
    return MCPError.from_error_data(data)


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    """The exceptions a (nested) exception group holds."""
    return [
        leaf
        for error in group.exceptions
        for leaf in (_leaves(error) if isinstance(error, BaseExceptionGroup) else [error])
    ]


def _wire(result: ListToolsResult | CallToolResult) -> Any:
    """A result as the protocol sends it (camelCase, ``_meta``): what the step records, and what a
    replay validates back into the same object."""
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)
