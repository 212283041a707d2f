"""What the pytest plugin costs: pytest start-up, and the time per replayed test.

1. Start-up: ``pytest --collect-only`` of an empty suite with the plugin and with ``-p no:blackbox``,
   best of N, and the difference (target: at most 30 ms). Also what importing the plugin module adds
   on top of pytest (``python -X importtime``): it must import nothing heavy.
2. Per test: 100 tests running the example weather agent (three model calls, two tools), replayed
   from cassettes by the plugin, against two floors with the plugin disabled: the same agent answered
   by a respx route (the interception layer the plugin uses, without the session) and by an
   ``httpx2.MockTransport`` (the SDK alone). Per-test time is (suite time - empty start-up) / 100.

Times are CPU seconds of the pytest process (user + system), so other work on the machine does not
inflate them; on Windows, where they cannot be read, wall-clock seconds. Run:
``python bench/plugin_bench.py [--repeat N]``. It prints numbers only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import machine

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "weather"
TESTS = 100
#: Plugins left out of every timed run, so their own start-up noise does not hide ours.
QUIET = ("-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest")
INI = "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"

PLUGIN_SUITE = """
import anthropic
import pytest
from agent import TOOLS, run_agent


@pytest.mark.parametrize("n", range({tests}))
@pytest.mark.blackbox
def test_agent(n, blackbox, anthropic_options):
    client = anthropic.Anthropic(**anthropic_options)
    assert run_agent(client, "What is the weather in Paris?", blackbox.tools(TOOLS))
"""

RESPX_SUITE = """
import json

import anthropic
import pytest
from agent import run_agent
from fake_model import respond

from pytest_blackbox.providers import ROUTES
from pytest_blackbox.interception import Interceptor, Reply


def answer(request):
    status, body = respond("/v1/messages", json.loads(request.body))
    return Reply(status, json.dumps(body).encode())


@pytest.mark.parametrize("n", range({tests}))
def test_agent(n):
    with Interceptor(answer, routes=ROUTES):
        client = anthropic.Anthropic(base_url="http://127.0.0.1:9", api_key="floor")
        assert run_agent(client, "What is the weather in Paris?")
"""

SDK_SUITE = """
import json

import anthropic
import httpx2
import pytest
from agent import run_agent
from fake_model import respond


def answer(request):
    status, body = respond("/v1/messages", json.loads(request.content))
    return httpx2.Response(status, json=body)


@pytest.mark.parametrize("n", range({tests}))
def test_agent(n):
    http = httpx2.Client(transport=httpx2.MockTransport(answer))
    client = anthropic.Anthropic(base_url="http://127.0.0.1:9", api_key="floor", http_client=http)
    assert run_agent(client, "What is the weather in Paris?")
"""


def _pytest(directory: Path, *args: str) -> float:
    """Seconds of CPU one pytest run takes (wall-clock seconds where CPU time cannot be read)."""
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS", "ANTHROPIC_API_KEY")}
    started = machine.children_cpu()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *QUIET, *args],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = machine.children_cpu() - started
    if done.returncode not in (0, 5):  # 5: no tests collected, expected for the empty suite
        raise SystemExit(f"pytest failed in {directory}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return elapsed


def _best(repeat: int, directory: Path, *args: str) -> float:
    return min(_pytest(directory, *args) for _ in range(repeat))


def _suite(base: Path, name: str, source: str) -> Path:
    directory = base / name
    directory.mkdir()
    for file in ("agent.py", "fake_model.py", "conftest.py"):
        shutil.copyfile(EXAMPLE / file, directory / file)
    (directory / "pytest.ini").write_text(INI, encoding="utf-8")
    (directory / "test_bench.py").write_text(source.replace("{tests}", str(TESTS)), encoding="utf-8")
    return directory


def _import_cost() -> tuple[float, list[str]]:
    """Milliseconds importing the plugin adds after pytest, and the modules it brings in."""
    code = (
        "import sys, time, pytest; before = set(sys.modules); t = time.perf_counter();"
        "import pytest_blackbox.plugin; t = time.perf_counter() - t;"
        "print(t * 1000); print(' '.join(sorted(set(sys.modules) - before)))"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.splitlines()
        for _ in range(5)
    ]
    return min(float(run[0]) for run in runs), runs[0][1].split()


def start_up(repeat: int, base: Path) -> None:
    empty = base / "empty"
    empty.mkdir()
    (empty / "pytest.ini").write_text(INI, encoding="utf-8")
    pairs = [
        (_pytest(empty, "--collect-only"), _pytest(empty, "--collect-only", "-p", "no:blackbox"))
        for _ in range(repeat)
    ]  # interleaved, so a busy machine slows both alike
    with_plugin, without = min(p[0] for p in pairs), min(p[1] for p in pairs)
    print(f"start-up, empty suite (best of {repeat}):")
    print(f"  with the plugin        {with_plugin * 1000:8.1f} ms")
    print(f"  with -p no:blackbox    {without * 1000:8.1f} ms")
    print(f"  added by the plugin    {(with_plugin - without) * 1000:8.1f} ms   (target <= 30 ms)")
    cost, modules = _import_cost()
    print(f"  import pytest_blackbox.plugin after pytest: {cost:.2f} ms, new modules: {', '.join(modules)}")


def per_test(repeat: int, base: Path) -> None:
    empty_run = _best(repeat, base / "empty", "--collect-only")
    plugin = _suite(base, "plugin", PLUGIN_SUITE)
    _pytest(plugin, "--record-mode=once")  # record the cassettes (against the bundled fake provider)
    results = {
        "replayed by the plugin": _best(repeat, plugin),
        "respx route floor (-p no:blackbox)": _best(
            repeat, _suite(base, "respx", RESPX_SUITE), "-p", "no:blackbox"
        ),
        "httpx2.MockTransport floor (-p no:blackbox)": _best(
            repeat, _suite(base, "sdk", SDK_SUITE), "-p", "no:blackbox"
        ),
    }
    print(f"\n{TESTS} tests of the weather agent, 3 model calls + 2 tools each (best of {repeat}):")
    per = {name: (total - empty_run) / TESTS * 1000 for name, total in results.items()}
    for name, total in results.items():
        print(f"  {name:45} {total:7.2f} s   {per[name]:6.2f} ms/test")
    overhead = per["replayed by the plugin"] - per["respx route floor (-p no:blackbox)"]
    print(f"  plugin cost over the respx floor: {overhead:.2f} ms/test")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement; the best is kept")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="plugin-bench-") as tmp:
        base = Path(tmp)
        start_up(args.repeat, base)
        per_test(max(1, args.repeat // 2), base)


if __name__ == "__main__":
    main()
