"""A real MCP server over stdio, built with the ``mcp`` SDK's own server API, for the MCP tests.

Run as ``python mcp_weather_server.py STARTS_FILE``: each start appends a line to ``STARTS_FILE``, so a
test can prove a replay never started it. Its tools answer three ways: a result with structured
content, an ``isError`` result (a ``ToolError``), and a protocol error (an ``MCPError``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import BaseModel

server = MCPServer("weather")


class Forecast(BaseModel):
    city: str
    tempC: int
    sky: str


@server.tool()
def get_forecast(city: str) -> Forecast:
    """Today's forecast for a city."""
    if city == "Atlantis":
        raise ToolError("no weather station in Atlantis")
    return Forecast(city=city, tempC=21, sky="clear")


@server.tool()
def get_alerts(region: str) -> str:
    """Weather alerts for a region."""
    raise MCPError(
        INVALID_PARAMS, f"unknown region: {region}", {"region": region, "known": ["Île-de-France"]}
    )


if __name__ == "__main__":
    with Path(sys.argv[1]).open("a", encoding="utf-8") as starts:
        starts.write("started\n")
    server.run()
