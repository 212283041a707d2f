"""A whole replayed pytest suite: pytest-blackbox against no replay layer and against pytest-recording.

Users feel a replay tool as the time of their test suite, not of one call, so this script builds a
suite and times whole ``pytest`` processes. The suite: 40 parametrized tests of an Anthropic-SDK
agent, each making 3 model calls and 3 tool calls (``get_weather``, then ``get_time`` and
``get_forecast`` in parallel, then the answer). It is run in four variants:

- **floor**: the same tests with the client on an ``httpx2.MockTransport`` that returns prebuilt
  response bytes; no record/replay plugin is loaded;
- **floor, SDK client**: the same, but the client is built as the replayed tests build it (the SDK's
  default HTTP client, ``anthropic.DefaultHttpxClient``, whose real transport loads the system's CA
  certificates, about 20 ms per client), and the ``MockTransport`` is mounted for every URL; the
  difference from the floor is what building the SDK's client costs, which both replay plugins pay
  because their tests build the client as users do;
- **floor, SDK client, one TLS context**: the same, with every client given one TLS context built
  once per process (``verify=``), as pytest-blackbox hands the clients a test builds while it
  intercepts (see docs/engine.md#model-calls); pytest-blackbox's time over this one is what its own
  work costs, with the certificate authorities loaded once in both;
- **pytest-recording**: ``@pytest.mark.vcr`` replaying vcrpy cassettes, matching on method, path
  and body (``-p recording``);
- **pytest-blackbox**: ``@pytest.mark.blackbox`` replaying Blackbox cassettes, strict, in CI
  (``CI=1``) with no API key in the environment (``-p blackbox``).

By default every variant runs in this environment as a user's suite would, with its installed pytest
plugins (the framework extras bring some); the replay plugin a variant does not use is turned off.
``--isolated`` turns plugin autoloading off instead (``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``), so each
variant loads only its own replay plugin: the same absolute overhead then shows as a larger ratio.

Python caches compiled modules, as on a developer's machine: ``PYTHONDONTWRITEBYTECODE`` is removed
from the runs' environment, and an untimed first round fills the caches. (pytest keeps its own,
assertion-rewritten copy of every module of a pytest plugin's distribution: where that variable is
set and no such copy exists yet, every run parses and rewrites them again, which costs about a second
with the framework extras installed.)

All variants are recorded first against the fake provider on 127.0.0.1 (the floor's bytes are captured
from the same conversations), then timed interleaved, ``--repeat`` times each, and the median
time of each variant is printed with the ratios (and, for the two targets, the median of the ratios
round by round). No replay may reach the fake provider: the script
checks that it served nothing after recording.

Each run is timed by the CPU time (user + system) of its pytest process (``--clock cpu``, the
default: on a shared machine other jobs barely move it, while they can stretch wall time many times
over) or by the wall clock (``--clock wall``).

``--baseline DIR`` adds a fifth variant, interleaved with the others: pytest-blackbox replaying the
same cassettes with the package found in ``DIR`` first on ``PYTHONPATH``, another revision exported
there (``git archive main pytest_blackbox schemas | tar -x -C DIR``), so a change is measured side by
side with the code before it.

Run: ``python bench/suite_bench.py [--tests 40] [--repeat 5] [--isolated] [--keep DIR] [--clock cpu|wall]
[--baseline DIR]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import machine

from pytest_blackbox.testing import FakeProvider

#: The targets: against the floor that builds the SDK's own client, and against pytest-recording.
TARGET_SDK_FLOOR, TARGET_RECORDING = 1.03, 0.95
VARIANTS = ("floor", "floor-sdk-client", "floor-one-tls-context", "pytest-recording", "pytest-blackbox")
#: The replay plugins each variant turns off: the floors run with neither loaded.
DISABLED = {
    "floor": ("-p", "no:blackbox", "-p", "no:recording"),
    "floor-sdk-client": ("-p", "no:blackbox", "-p", "no:recording"),
    "floor-one-tls-context": ("-p", "no:blackbox", "-p", "no:recording"),
    "pytest-recording": ("-p", "no:blackbox"),
    "pytest-blackbox": ("-p", "no:recording"),
    "capture": ("-p", "no:blackbox", "-p", "no:recording"),
}
#: ``--baseline``: the variant replaying with another revision of the package, and where it is.
BASELINE_VARIANT = "pytest-blackbox-baseline"
BASELINE: dict[str, Path | None] = {"path": None}
#: With ``--isolated``, plugin autoloading is off and each variant loads only its own plugin.
ISOLATED = {
    "floor": (),
    "floor-sdk-client": (),
    "floor-one-tls-context": (),
    "pytest-recording": ("-p", "recording"),
    "pytest-blackbox": ("-p", "blackbox"),
    "capture": (),
}
COMMON = ("-q", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning")

AGENT = '''
"""The agent under test: three model calls, three tool calls."""

import json

MODEL = "claude-sonnet-5"
SYSTEM = "You are a travel assistant. Answer only from the tools' data."
TOOLS = [
    {
        "name": name,
        "description": f"The {name.split('_')[1]} for a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
    for name in ("get_weather", "get_time", "get_forecast")
]


def get_weather(city):
    return {"city": city, "tempC": 21, "sky": "clear"}


def get_time(city):
    return {"city": city, "time": "14:05"}


def get_forecast(city):
    return {"city": city, "tomorrow": "rain", "days": [1, 2, 3]}


FUNCTIONS = {"get_weather": get_weather, "get_time": get_time, "get_forecast": get_forecast}


def run_agent(client, city, tools):
    messages = [{"role": "user", "content": f"Weather, time and forecast in {city}?"}]
    while True:
        response = client.messages.create(
            model=MODEL, max_tokens=512, system=SYSTEM, messages=messages, tools=TOOLS
        )
        uses = [block for block in response.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in response.content if block.type == "text")
        messages.append({"role": "assistant", "content": response.content})
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": use.id,
                        "content": json.dumps(tools[use.name](**use.input)),
                    }
                    for use in uses
                ],
            }
        )
'''

CONFTEST = '''
"""One suite, three ways to answer the model calls (SUITE_VARIANT)."""

import functools
import json
import os
import ssl
from pathlib import Path

import anthropic
import httpx2
import pytest

from agent import FUNCTIONS

VARIANT = os.environ["SUITE_VARIANT"]
BASE_URL = os.environ.get("SUITE_BASE_URL", "http://127.0.0.1:9")
BODIES = Path(__file__).with_name("floor_bodies.json")


def pytest_collection_modifyitems(items):
    mark = {"pytest-blackbox": pytest.mark.blackbox, "pytest-recording": pytest.mark.vcr}.get(VARIANT)
    for item in items:
        if mark is not None:
            item.add_marker(mark)


@functools.cache
def one_context():
    return ssl.create_default_context()


@pytest.fixture(scope="session")
def vcr_config():
    return {"match_on": ["method", "path", "body"]}


@pytest.fixture(scope="session")
def floor_bodies():
    return json.loads(BODIES.read_text()) if VARIANT.startswith("floor") else {}


@pytest.fixture
def client(request, floor_bodies):
    city = request.node.callspec.params["city"]
    if VARIANT.startswith("floor"):
        answers = iter(floor_bodies[city])
        headers = {"content-type": "application/json"}
        transport = httpx2.MockTransport(
            lambda req: httpx2.Response(200, content=next(answers).encode(), headers=headers)
        )
        if VARIANT == "floor":
            http_client = httpx2.Client(transport=transport)
        elif VARIANT == "floor-sdk-client":  # the SDK's own client, real transport built, every URL mocked
            http_client = anthropic.DefaultHttpxClient(mounts={"all://": transport})
        else:  # the same, its TLS context built once per process
            http_client = anthropic.DefaultHttpxClient(mounts={"all://": transport}, verify=one_context())
        return anthropic.Anthropic(api_key="floor", base_url=BASE_URL, http_client=http_client)
    if VARIANT == "capture":
        captured = floor_bodies.setdefault(city, [])

        class Capture(httpx2.HTTPTransport):
            def handle_request(self, req):
                response = super().handle_request(req)
                response.read()
                captured.append(response.content.decode())
                return response

        http_client = httpx2.Client(transport=Capture())
        request.addfinalizer(lambda: BODIES.write_text(json.dumps(floor_bodies)))
        return anthropic.Anthropic(base_url=BASE_URL, max_retries=0, http_client=http_client)
    return anthropic.Anthropic(base_url=BASE_URL, max_retries=0)


@pytest.fixture
def tools(request):
    if VARIANT == "pytest-blackbox":
        return request.getfixturevalue("blackbox").tools(FUNCTIONS)
    return FUNCTIONS
'''

TESTS = """
import pytest

from agent import run_agent

CITIES = {cities!r}


@pytest.mark.parametrize("city", CITIES)
def test_agent(city, client, tools):
    answer = run_agent(client, city, tools)
    assert city in answer
"""


def cities(count: int) -> list[str]:
    return [f"City{index:03d}" for index in range(count)]


def write_suite(root: Path, count: int) -> None:
    (root / "agent.py").write_text(textwrap.dedent(AGENT))
    (root / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (root / "test_suite.py").write_text(TESTS.format(cities=cities(count)))
    (root / "pytest.ini").write_text("[pytest]\n")


def script(fake: FakeProvider, count: int) -> None:
    """The model's answers for every test in collection order: a call, two parallel calls, the answer."""
    for city in cities(count):
        fake.queue_anthropic_tool_calls([("get_weather", {"city": city})])
        fake.queue_anthropic_tool_calls(
            [("get_time", {"city": city}), ("get_forecast", {"city": city})], text=f"Checking {city}."
        )
        fake.queue_anthropic_text(f"{city}: 21 °C, clear, 14:05; rain tomorrow.")


ISOLATE = {"on": False}


def environment(variant: str, base_url: str, *, key: bool) -> dict[str, str]:
    """The variant's environment; ``key`` false is CI for pytest-blackbox: no key at all.

    pytest-recording needs a key in replay too (the SDK refuses to build a request without one),
    so its replays get a dummy one.
    """
    env = {name: value for name, value in os.environ.items() if not name.endswith("_API_KEY")}
    env.pop("CI", None)
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if ISOLATE["on"]:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env["SUITE_VARIANT"] = variant
    env["SUITE_BASE_URL"] = base_url
    if key or variant == "pytest-recording":
        env["ANTHROPIC_API_KEY"] = "sk-ant-bench-recording-key-0123456789"
    return env


#: How a run is timed (``--clock``): the pytest process's CPU time, which other jobs on a shared
#: machine barely move, or the wall clock.
CLOCKS = {"cpu": machine.children_cpu, "wall": time.perf_counter}
CLOCK: dict[str, Any] = {"now": CLOCKS["cpu"], "name": "cpu"}


def pytest_run(root: Path, variant: str, env: dict[str, str], *extra: str) -> float:
    isolated = env.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD") == "1"
    plugins = ISOLATED[variant] if isolated else DISABLED[variant]
    command = [sys.executable, "-m", "pytest", *COMMON, *plugins, *extra]
    now: Callable[[], float] = CLOCK["now"]
    start = now()
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, check=False)
    elapsed = now() - start
    if done.returncode != 0:
        raise RuntimeError(f"{variant} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return elapsed


def record(root: Path, fake: FakeProvider, count: int) -> None:
    """Record both plugins' cassettes and capture the floor's bytes, each from the same conversations."""
    for variant, extra in (
        ("capture", ()),
        ("pytest-recording", ("--record-mode=once",)),
        ("pytest-blackbox", ("--record-mode=once",)),
    ):
        script(fake, count)
        pytest_run(root, variant, environment(variant, fake.base_url, key=True), *extra)
        if fake.pending:
            raise RuntimeError(f"{variant} left {fake.pending} scripted answers unused")


def measure(root: Path, fake: FakeProvider, repeat: int) -> dict[str, list[float]]:
    """Interleaved runs, so a busy moment of the machine costs every variant alike.

    A first, untimed round fills the caches every later run finds (compiled modules, the OS's).
    """
    served = len(fake.requests)
    baseline = BASELINE["path"]
    variants = (*VARIANTS, BASELINE_VARIANT) if baseline is not None else VARIANTS
    times: dict[str, list[float]] = {variant: [] for variant in variants}
    for round_ in range(repeat + 1):
        for variant in variants:
            kind = "pytest-blackbox" if variant == BASELINE_VARIANT else variant
            env = environment(kind, fake.base_url, key=False)
            if kind == "pytest-blackbox":
                env["CI"] = "1"
            if variant == BASELINE_VARIANT:
                env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(baseline), env.get("PYTHONPATH"))))
            elapsed = pytest_run(root, kind, env)
            if round_ > 0:
                times[variant].append(elapsed)
    if len(fake.requests) != served:
        raise RuntimeError("a replay reached the fake provider")
    return times


def round_by_round(times: dict[str, list[float]], variant: str, other: str) -> float:
    """The median of ``variant``'s time over ``other``'s within each round. A round runs every variant
    once, one after the other, so the two runs of a pair met much the same machine; on a host whose
    speed drifts between rounds this moves less than the ratio of the two medians."""
    return statistics.median(ours / theirs for ours, theirs in zip(times[variant], times[other], strict=True))


def report(times: dict[str, list[float]], count: int) -> None:
    medians = {variant: statistics.median(values) for variant, values in times.items()}
    floor, sdk_floor, one_context, recording, ours = (medians[v] for v in VARIANTS)
    how = "only its own plugin" if ISOLATE["on"] else "installed plugins autoloaded"
    repeat = len(times["floor"])
    print(
        f"{count} tests x (3 model calls + 3 tool calls), whole pytest process ({how}), "
        f"{CLOCK['name']} time, median of {repeat}"
    )
    for variant in times:
        runs = ", ".join(f"{value:.2f}" for value in times[variant])
        extra = (medians[variant] - floor) * 1e3 / count
        print(f"  {variant:<24} {medians[variant]:6.2f} s  ({extra:+6.1f} ms/test vs floor)  runs: {runs}")
    for name, other, target in (
        ("blackbox / floor, SDK client", "floor-sdk-client", TARGET_SDK_FLOOR),
        ("blackbox / pytest-recording", "pytest-recording", TARGET_RECORDING),
    ):
        value = medians["pytest-blackbox"] / medians[other]
        verdict = "ok" if value <= target else "MISSED"
        paired = round_by_round(times, "pytest-blackbox", other)
        print(f"  {name:<28} {value:5.2f}x  target <= {target}x  {verdict}  (round by round: {paired:.2f}x)")
    print(f"  blackbox / floor             {ours / floor:5.2f}x")
    print(f"  pytest-recording / floor     {recording / floor:5.2f}x")
    own = (ours - one_context) * 1e3 / count
    paired = round_by_round(times, "pytest-blackbox", "floor-one-tls-context")
    print(
        f"  blackbox / floor, one TLS context {ours / one_context:4.2f}x  ({own:+.1f} ms/test: the replay "
        f"layer's own work; round by round: {paired:.2f}x)"
    )
    client = (sdk_floor - floor) * 1e3 / count
    print(f"  building the SDK's client    {client:+5.1f} ms/test (pytest-recording pays it each test)")
    print(f"  recording / floor, SDK client {recording / sdk_floor:4.2f}x")
    if BASELINE_VARIANT in medians:
        base = medians[BASELINE_VARIANT]
        change = (ours - base) * 1e3 / count
        print(f"  blackbox / baseline          {ours / base:5.2f}x  ({change:+.1f} ms/test)")
        print(f"  baseline / floor, SDK client {base / sdk_floor:5.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--keep", type=Path, help="build the suite here and keep it (default: a temporary folder)"
    )
    parser.add_argument(
        "--isolated", action="store_true", help="plugin autoloading off: only each variant's plugin"
    )
    parser.add_argument(
        "--clock", choices=sorted(CLOCKS), default="cpu", help="time runs by CPU time (default) or wall"
    )
    parser.add_argument(
        "--baseline", type=Path, help="also replay with the package in DIR (another revision), interleaved"
    )
    args = parser.parse_args()
    print(machine.describe())
    ISOLATE["on"] = args.isolated
    BASELINE["path"] = args.baseline.resolve() if args.baseline is not None else None
    CLOCK.update(now=CLOCKS[args.clock], name=args.clock)
    with tempfile.TemporaryDirectory() as tmp, FakeProvider() as fake:
        root = args.keep or Path(tmp) / "suite"
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        write_suite(root, args.tests)
        record(root, fake, args.tests)
        report(measure(root, fake, args.repeat), args.tests)


if __name__ == "__main__":
    main()
