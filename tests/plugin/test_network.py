"""Network blocking: a replay connects only to loopback and allowed hosts, whatever opens the
connection; with ``--blackbox-block-network`` a test without the marker gets no model call through."""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path

import pytest

from pytest_blackbox.errors import OfflineRequestError
from pytest_blackbox.plugin.sockets import CONNECT as CONNECT_TO
from pytest_blackbox.plugin.sockets import SocketGuard, loopback_names
from tests import QUIET

from .conftest import INNER_INI, Counted, exact, summary

#: 192.0.2.0/24 is TEST-NET-1 (RFC 5737): documentation only, never routed.
UNROUTED = "192.0.2.1"
CONNECT = {
    "urllib": f'urllib.request.urlopen("http://{UNROUTED}:8080/status", timeout=0.5)',
    "socket": f'socket.create_connection(("{UNROUTED}", 8080), timeout=0.5).close()',
    "aiohttp": f"""await _aiohttp_get("http://{UNROUTED}:8080/status")""",
}
FETCHING = """
import socket
import urllib.request

import pytest


async def _aiohttp_get(url):
    import aiohttp

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=0.5)) as session:
        async with session.get(url) as response:
            return response.status


def _loopback():
    try:
        socket.create_connection(("127.0.0.1", 9), timeout=0.5).close()
    except OSError:
        pass  # nothing listens there; what matters is that the connection was attempted


@pytest.mark.blackbox(MARKER)
ASYNC def test_fetch(blackbox):
    _loopback()  # loopback stays reachable: users run local services in tests
    try:
        CONNECT  # a tool the test forgot to wrap
    except OSError:
        pass  # allowed, but nothing answers at that address
    blackbox.finish(result="fetched")
"""
REFUSAL = [
    exact(
        f"blackbox: test_fetch.py::test_fetch tried to connect to {UNROUTED}:8080 during a replay; "
        "a replay reaches loopback only"
    ),
    exact(
        "wrap the code that makes the request as a tool (blackbox.tool), or allow the host: "
        f"@pytest.mark.blackbox(allowed_hosts=[...]) or --blackbox-allowed-hosts={UNROUTED}"
    ),
]

#: aiohttp's requests pass the interception, which refuses a request that is not a model call before
#: any connection, in the words it uses for httpx.
REQUEST_REFUSAL = [
    exact(
        "blackbox: replay mode answers only model calls (messages.create / chat.completions.create); a "
        f"request to GET http://{UNROUTED}:8080/status would need the network. Make it inside a wrapped "
        "tool (a replay returns its recorded result), or allow the host (allowed_hosts)"
    ),
    exact("cassette: cassettes/test_fetch/test_fetch.json"),
]


def _fetching(pytester: pytest.Pytester, client: str, marker: str = "", catch: str = "OSError") -> None:
    source = FETCHING.replace("MARKER", marker).replace("CONNECT", CONNECT[client])
    source = source.replace("ASYNC ", "async " if client == "aiohttp" else "")
    pytester.makepyfile(test_fetch=source.replace("except OSError:", f"except {catch}:"))


HAS_AIOHTTP = importlib.util.find_spec("aiohttp") is not None
CLIENTS = [
    "urllib",
    "socket",
    pytest.param("aiohttp", marks=pytest.mark.skipif(not HAS_AIOHTTP, reason="aiohttp is not installed")),
]


@pytest.mark.parametrize("client", CLIENTS)
def test_a_replay_refuses_connections_beyond_loopback(bare_dir: pytest.Pytester, client: str) -> None:
    _fetching(bare_dir, client)
    recorded = bare_dir.runpytest(*QUIET, "--record-mode=once")  # recording is not guarded
    recorded.assert_outcomes(passed=1)
    bare_dir._monkeypatch.setenv("CI", "1")
    replayed = bare_dir.runpytest(*QUIET)
    replayed.assert_outcomes(failed=1)
    replayed.stdout.fnmatch_lines(
        [
            "*_ test_fetch _*",
            *(REQUEST_REFUSAL if client == "aiohttp" else REFUSAL),
            "",
            "test_fetch.py:*: in test_fetch",
            "*",
            *(["test_fetch.py:*: in _aiohttp_get", "*"] if client == "aiohttp" else []),
            exact("E   pytest_blackbox.errors.OfflineRequestError: the blackbox error above"),
            exact(summary(refused=1)),
        ],
        consecutive=True,
    )


def test_a_swallowed_refusal_still_fails_the_test(bare_dir: pytest.Pytester) -> None:
    _fetching(bare_dir, "urllib", catch="Exception")
    bare_dir.runpytest(*QUIET, "--record-mode=once").assert_outcomes(passed=1)
    bare_dir._monkeypatch.setenv("CI", "1")
    replayed = bare_dir.runpytest(*QUIET)
    replayed.assert_outcomes(failed=1)
    replayed.stdout.fnmatch_lines(["*_ test_fetch _*", *REFUSAL, exact(summary(refused=1))], consecutive=True)


@pytest.mark.parametrize(
    ("marker", "ini", "option"),
    [
        (f'allowed_hosts=["{UNROUTED}"]', "", ""),
        ('allowed_hosts="192.0.2.*"', "", ""),
        ("", f"blackbox_allowed_hosts = 10.0.0.1, {UNROUTED}", ""),
        ("", "", f"--blackbox-allowed-hosts=10.0.0.1,{UNROUTED}"),
    ],
    ids=["marker", "marker-wildcard", "ini", "option"],
)
def test_allowed_hosts_are_reached(bare_dir: pytest.Pytester, marker: str, ini: str, option: str) -> None:
    bare_dir.makeini(f"{INNER_INI}{ini}\n")
    _fetching(bare_dir, "urllib", marker=marker)
    bare_dir.runpytest(*QUIET, "--record-mode=once").assert_outcomes(passed=1)
    bare_dir._monkeypatch.setenv("CI", "1")
    replayed = bare_dir.runpytest(*QUIET, *([option] if option else []))
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines([exact(summary(replayed=1))])


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (
            (),
            "blackbox_allowed_hosts = https://api.example.com",
            "ERROR: bad ini value: blackbox_allowed_hosts: 'https://api.example.com' is not a host name "
            'or IP address (write the host only, such as "api.example.com" or "*.internal": '
            "no scheme, port or path)",
        ),
        (
            ("--blackbox-allowed-hosts=db:5432",),
            "",
            "ERROR: bad option: --blackbox-allowed-hosts: 'db:5432' is not a host name or IP address "
            '(write the host only, such as "api.example.com" or "*.internal": no scheme, port or path)',
        ),
    ],
    ids=["ini", "option"],
)
def test_bad_allowed_hosts_are_a_usage_error(
    bare_dir: pytest.Pytester, args: tuple[str, ...], ini: str, message: str
) -> None:
    bare_dir.makeini(f"{INNER_INI}{ini}\n")
    bare_dir.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = bare_dir.runpytest(*QUIET, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([exact(message)])


UNMARKED = {
    "sync": """
def test_forgot_the_marker(anthropic_options):
    client = anthropic.Anthropic(**anthropic_options)
    assert run_agent(client, "What is the weather in Paris?", TOOLS)
""",
    "async": """
async def test_forgot_the_marker(anthropic_options):
    async with anthropic.AsyncAnthropic(**anthropic_options) as client:
        assert await run_agent_async(client, "What is the weather in Paris?", TOOLS)
""",
}
SWALLOWED = """
def test_forgot_the_marker(anthropic_options):
    try:
        run_agent(anthropic.Anthropic(**anthropic_options), "What is the weather in Paris?", TOOLS)
    except Exception:
        pass
"""
BLOCKED = [
    "blackbox: test_weather.py::test_forgot_the_marker is not a blackbox test, and --blackbox-block-network "
    "refuses its model calls: POST http://127.0.0.1:*/v1/messages was not sent",
    exact(
        "mark it @pytest.mark.blackbox (or give it the blackbox fixture) to record and replay its model calls"
    ),
]


@pytest.mark.parametrize("switch", [("--blackbox-block-network",), ("ini",)], ids=["option", "ini"])
def test_block_network_refuses_the_model_calls_of_tests_without_the_marker(
    counted: Counted, switch: tuple[str, ...]
) -> None:
    counted.write(body=UNMARKED[counted.flavor])
    if switch == ("ini",):
        counted.pytester.makeini(INNER_INI + "blackbox_block_network = true\n")
        switch = ()
    counted.pytester._monkeypatch.setenv("CI", "1")
    result = counted.run(*switch)
    result.assert_outcomes(failed=1)
    call = "response = client.messages.create(**_request(messages))"
    if counted.flavor == "async":
        call = "response = await client.messages.create(**_request(messages))"
    result.stdout.fnmatch_lines(
        [
            "*_ test_forgot_the_marker _*",
            *BLOCKED,
            "",
            "test_weather.py:*: in test_forgot_the_marker",
            "*",
            "agent.py:*: in run_agent*",
            f"    {call}",
            exact("E   anthropic.BadRequestError: the blackbox error above"),
            exact(summary(refused=1)),
        ],
        consecutive=True,
    )
    assert counted.sent == 0


def test_block_network_fails_a_test_that_swallowed_the_refusal(counted_sync: Counted) -> None:
    counted_sync.write(body=SWALLOWED)
    result = counted_sync.run("--blackbox-block-network")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*_ test_forgot_the_marker _*", *BLOCKED, exact(summary(refused=1))])
    assert counted_sync.sent == 0


MARKED_AND_UNMARKED = """
@pytest.mark.blackbox
def test_marked(blackbox, anthropic_options):
    assert ask(blackbox, anthropic_options, "Paris").endswith(" in Paris.")


def test_no_model_call():
    assert 1 + 1 == 2
"""


def test_block_network_leaves_blackbox_tests_and_other_tests_alone(counted_sync: Counted) -> None:
    counted_sync.write(body=MARKED_AND_UNMARKED)
    counted_sync.run("--record-mode=once").assert_outcomes(passed=2)
    assert counted_sync.sent == 3
    counted_sync.pytester._monkeypatch.setenv("CI", "1")
    result = counted_sync.run("--blackbox-block-network")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([exact(summary(replayed=1))])
    assert counted_sync.sent == 3


def _describe(action: str, where: str) -> str:
    return "refused " + where if action == CONNECT_TO else f"refused: {action} {where}"


def test_the_guard_names_the_host_the_code_resolved_and_matches_allowed_names() -> None:
    """The address connected to is what the socket sees; the name comes from the resolution before it."""
    info = (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("203.0.113.7", 443))
    guard = SocketGuard(("*.internal",), _describe)
    guard.note_resolved("search.example.com", [info])
    guard.note_resolved("db.internal", [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("198.51.100.2", 5432))])
    with pytest.raises(OfflineRequestError, match=r"^refused search\.example\.com:443 \(203\.0\.113\.7\)$"):
        guard.check(socket.AF_INET, ("203.0.113.7", 443))
    guard.check(socket.AF_INET, ("198.51.100.2", 5432))  # allowed by its name
    guard.check(socket.AF_INET6, ("::1", 80, 0, 0))
    guard.check(socket.AF_INET6, ("::ffff:127.0.0.1", 80, 0, 0))
    guard.check(socket.AF_INET, ("0.0.0.0", 80))
    guard.check(socket.AF_UNIX, "/tmp/service.sock")
    assert str(guard.refusal) == "refused search.example.com:443 (203.0.113.7)"  # the first one is kept


def test_the_guard_patches_sockets_only_while_started() -> None:
    connect = socket.socket.connect
    guard = SocketGuard((), _describe).start()
    try:
        assert socket.socket.connect is not connect
        with socket.socket() as sock, pytest.raises(OfflineRequestError, match=r"refused 192\.0\.2\.1:9"):
            sock.connect((UNROUTED, 9))
    finally:
        guard.stop()
    assert socket.socket.connect is connect
    assert "connect" not in vars(socket.socket)


#: Ways out other than a TCP connect: (what the unwrapped code does, what the refusal says it tried).
DATAGRAMS_AND_NAMES = {
    "sendto": (f'_udp().sendto(b"hits:1|c", ("{UNROUTED}", 8125))', f"send a datagram to {UNROUTED}:8125"),
    "sendto-flags": (
        f'_udp().sendto(b"hits:1|c", 0, ("{UNROUTED}", 8125))',
        f"send a datagram to {UNROUTED}:8125",
    ),
    "sendmsg": (
        f'_udp().sendmsg([b"hits:1|c"], [], 0, ("{UNROUTED}", 8125))',
        f"send a datagram to {UNROUTED}:8125",
    ),
    "connected-udp": (f'_udp().connect(("{UNROUTED}", 8125))', f"connect to {UNROUTED}:8125"),
    "getaddrinfo": ('socket.getaddrinfo("example.com", 443)', "resolve example.com"),
    "gethostbyname": ('socket.gethostbyname("example.com")', "resolve example.com"),
    "gethostbyname_ex": ('socket.gethostbyname_ex("example.com")', "resolve example.com"),
    "asyncio-getaddrinfo": ('asyncio.run(_resolve("example.com"))', "resolve example.com"),
}
SENDING = """
import asyncio
import socket

import pytest


def _udp():
    return socket.socket(socket.AF_INET, socket.SOCK_DGRAM)


async def _resolve(name):
    return await asyncio.get_running_loop().getaddrinfo(name, 443)


def _local():
    \"\"\"Loopback stays reachable: a local statsd, a local DNS name.\"\"\"
    _udp().sendto(b"hits:1|c", ("127.0.0.1", 8125))
    _udp().sendto(b"hits:1|c", ("localhost", 8125))
    socket.getaddrinfo("localhost", 8125)
    socket.gethostbyname("localhost")
    socket.getaddrinfo(LOOPBACK_NAME, 8125)
    socket.getaddrinfo("127.0.0.1", 8125)


@pytest.mark.blackbox(MARKER)
def test_send(blackbox):
    _local()
    try:
        SEND  # a metrics client or a lookup the test forgot to wrap
    except OSError:
        pass  # allowed, but nothing answers (or no DNS) here
    blackbox.finish(result="sent")
"""


LOOPBACK_ONLY = "a replay reaches loopback only"


def _sending(pytester: pytest.Pytester, how: str, marker: str = "") -> None:
    name = sorted(loopback_names() | {"localhost"})[0]
    source = SENDING.replace("MARKER", marker).replace("SEND", DATAGRAMS_AND_NAMES[how][0])
    pytester.makepyfile(test_send=source.replace("LOOPBACK_NAME", repr(name)))


@pytest.mark.parametrize("how", list(DATAGRAMS_AND_NAMES))
def test_a_replay_refuses_datagrams_and_name_lookups_beyond_loopback(
    bare_dir: pytest.Pytester, how: str
) -> None:
    _sending(bare_dir, how)
    bare_dir.runpytest(*QUIET, "--record-mode=once").assert_outcomes(passed=1)  # recording is not guarded
    bare_dir._monkeypatch.setenv("CI", "1")
    replayed = bare_dir.runpytest(*QUIET)
    replayed.assert_outcomes(failed=1)
    tried = DATAGRAMS_AND_NAMES[how][1]
    host = tried.rsplit(" ", 1)[1].split(":", 1)[0]
    replayed.stdout.fnmatch_lines(
        [
            "*_ test_send _*",
            exact(f"blackbox: test_send.py::test_send tried to {tried} during a replay; {LOOPBACK_ONLY}"),
            exact(
                "wrap the code that makes the request as a tool (blackbox.tool), or allow the host: "
                f"@pytest.mark.blackbox(allowed_hosts=[...]) or --blackbox-allowed-hosts={host}"
            ),
            "",
        ],
        consecutive=True,
    )
    replayed.stdout.fnmatch_lines(
        [exact("E   pytest_blackbox.errors.OfflineRequestError: the blackbox error above")]
    )
    replayed.stdout.fnmatch_lines([exact(summary(refused=1))])


@pytest.mark.parametrize("how", ["sendto", "getaddrinfo"])
def test_allowed_hosts_still_apply_to_datagrams_and_names(bare_dir: pytest.Pytester, how: str) -> None:
    _sending(bare_dir, how, marker=f'allowed_hosts=["{UNROUTED}", "example.com"]')
    bare_dir.runpytest(*QUIET, "--record-mode=once").assert_outcomes(passed=1)
    bare_dir._monkeypatch.setenv("CI", "1")
    replayed = bare_dir.runpytest(*QUIET)
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines([exact(summary(replayed=1))])


def test_a_refused_datagram_or_lookup_never_reaches_the_system(monkeypatch: pytest.MonkeyPatch) -> None:
    """The refusal comes before the real call: nothing is sent, not even a DNS query."""
    reached: list[str] = []

    def sendto(sock: socket.socket, *args: object) -> int:
        reached.append("sendto")
        return 0

    def getaddrinfo(*args: object, **kwargs: object) -> list[object]:
        reached.append("getaddrinfo")
        return []

    monkeypatch.setattr(socket.socket, "sendto", sendto)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    guard = SocketGuard((), _describe).start()
    try:
        refused = r"^refused: send a datagram to 192\.0\.2\.1:8125$"
        with (
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock,
            pytest.raises(OfflineRequestError, match=refused),
        ):
            sock.sendto(b"x", (UNROUTED, 8125))
        with pytest.raises(OfflineRequestError, match=r"^refused: resolve example\.com$"):
            socket.getaddrinfo("example.com", 443)
        assert reached == []
        socket.getaddrinfo("localhost", 443)
        assert reached == ["getaddrinfo"]
    finally:
        guard.stop()
    assert socket.getaddrinfo is getaddrinfo and vars(socket.socket)["sendto"] is sendto


def test_the_hosts_file_names_loopback_names(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text(
        "# comment\n127.0.0.1 localhost box\n::1 ip6-box # six\n10.0.0.2 db\n\n", encoding="utf-8"
    )
    assert loopback_names(str(hosts)) == {"localhost", "box", "ip6-box"}
    assert loopback_names(str(hosts) + ".missing") == frozenset()
    hosts.write_text("127.0.0.1 localhost box other\n", encoding="utf-8")  # read again once changed
    assert loopback_names(str(hosts)) == {"localhost", "box", "other"}


#: A test without the marker for each way out: a TCP connection, then those of ``DATAGRAMS_AND_NAMES``.
UNMARKED_WAYS = {"tcp": (CONNECT["socket"], f"connect to {UNROUTED}:8080"), **DATAGRAMS_AND_NAMES}
UNMARKED_SENDING = """
import asyncio
import socket

import pytest

WAYS = WAYS_SOURCE


def _udp():
    return socket.socket(socket.AF_INET, socket.SOCK_DGRAM)


async def _resolve(name):
    return await asyncio.get_running_loop().getaddrinfo(name, 443)


@pytest.mark.parametrize("how", list(WAYS))
def test_way_out(how):
    _udp().sendto(b"hits:1|c", ("127.0.0.1", 8125))  # loopback stays reachable
    socket.getaddrinfo("localhost", 8125)
    try:
        exec(WAYS[how])  # a metrics client, a lookup or a fetch of a test without the marker
    except OSError:
        pass  # allowed, but nothing answers (or no DNS) here
"""


def test_block_network_refuses_every_way_out_of_tests_without_the_marker(bare_dir: pytest.Pytester) -> None:
    """The same ways out as the replay's guard (TCP, datagrams, name lookups), in one inner run;
    then the allowed hosts let every one of them through."""
    ways = {how: code for how, (code, _) in UNMARKED_WAYS.items()}
    bare_dir.makepyfile(test_send=UNMARKED_SENDING.replace("WAYS_SOURCE", repr(ways)))
    result = bare_dir.runpytest(*QUIET, "--blackbox-block-network")
    result.assert_outcomes(failed=len(UNMARKED_WAYS))
    for how, (_, tried) in UNMARKED_WAYS.items():
        host = tried.rsplit(" ", 1)[1].split(":", 1)[0]
        result.stdout.fnmatch_lines(
            [
                f"*_ {exact(f'test_way_out[{how}]')} _*",
                exact(
                    f"blackbox: test_send.py::test_way_out[{how}] is not a blackbox test, and "
                    f"--blackbox-block-network refuses its network access: it tried to {tried}; only "
                    "loopback and the allowed hosts are reachable"
                ),
                exact(
                    f"allow the host: --blackbox-allowed-hosts={host} (or the ini key blackbox_allowed_hosts)"
                ),
            ],
            consecutive=True,
        )
    result.stdout.fnmatch_lines([exact(summary(refused=len(UNMARKED_WAYS)))])

    allowed = bare_dir.runpytest(*QUIET, "--blackbox-block-network", f"--blackbox-allowed-hosts={UNROUTED}")
    to_address = sum(UNROUTED in tried for _, tried in UNMARKED_WAYS.values())
    allowed.assert_outcomes(passed=to_address, failed=len(UNMARKED_WAYS) - to_address)
    bare_dir.makeini(INNER_INI + f"blackbox_allowed_hosts = {UNROUTED} example.com\n")
    both = bare_dir.runpytest(*QUIET, "--blackbox-block-network")
    both.assert_outcomes(passed=len(UNMARKED_WAYS))
    assert not any(line.startswith("blackbox:") for line in both.stdout.lines)
