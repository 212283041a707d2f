"""Child processes follow their test: a Python child's model calls are recorded into the test's
cassette and replayed from it (subprocess, multiprocessing spawn / fork / forkserver, a process pool),
a child that cannot follow is refused in a replay, and a child's divergence fails the test.

Every scenario records against the counted fake provider, then replays in CI mode with no key:
the provider must see no further request. See docs/pytest.md#child-processes.
"""

from __future__ import annotations

# Imported once here, so that the in-process inner runs reuse these modules: the classes a child
# unpickles must be the very ones the parent pickled (pytester restores sys.modules after each run).
import concurrent.futures.process  # noqa: F401
import json
import multiprocessing.pool
import multiprocessing.resource_tracker  # noqa: F401
import os
import shutil
import site
from typing import Any

import pytest

from .conftest import Counted, exact, summary

#: The child's agent: one model call through the real anthropic SDK; the fake answers with a
#: ``get_weather`` tool call naming the city it was asked about.
KID_AGENT = """
import os
import sys

import anthropic


def ask(city):
    client = anthropic.Anthropic(base_url=os.environ["FAKE_PROVIDER_URL"], api_key="fake-provider-key")
    message = client.messages.create(
        model="claude-haiku-4-5",
        max_tokens=100,
        messages=[{"role": "user", "content": f"What is the weather {os.environ.get('HOW', 'in')} {city}?"}],
    )
    return message.content[0].input["city"]


def ask_or_exit(city):
    sys.exit(0 if ask(city) == city else 3)


if __name__ == "__main__":
    print("the child was told about", ask(sys.argv[1]))
"""

KIDS = """
import concurrent.futures
import multiprocessing
import os
import subprocess
import sys

import pytest

import kid_agent

AGENT = os.path.join(os.path.dirname(__file__), "kid_agent.py")


def ask_in_pool(method, city):
    with multiprocessing.get_context(method).Pool(1) as pool:
        return pool.apply(kid_agent.ask, (city,))


@pytest.mark.blackbox
def test_subprocess():
    done = subprocess.run([sys.executable, AGENT, "Paris"], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "the child was told about Paris\\n"), done.stderr


@pytest.mark.blackbox
@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_multiprocessing_pool(method):
    assert ask_in_pool(method, "Oslo") == "Oslo"


@pytest.mark.blackbox
def test_fork_process():
    child = multiprocessing.get_context("fork").Process(target=kid_agent.ask_or_exit, args=("Lima",))
    child.start()
    child.join()
    assert child.exitcode == 0


@pytest.mark.blackbox
@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_process_pool_executor(method):
    context = multiprocessing.get_context(method)
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        assert pool.submit(kid_agent.ask, "Paris").result() == "Paris"
"""
TESTS = [
    "test_subprocess",
    "test_multiprocessing_pool[spawn]",
    "test_multiprocessing_pool[forkserver]",
    "test_multiprocessing_pool[fork]",
    "test_fork_process",
    "test_process_pool_executor[spawn]",
    "test_process_pool_executor[fork]",
]


def _kids(counted: Counted, body: str = KIDS) -> None:
    counted.pytester.makepyfile(kid_agent=KID_AGENT, test_kids=body)


def _model_inputs(counted: Counted, test: str) -> list[Any]:
    cassette = json.loads(counted.cassette("test_kids", test).read_text(encoding="utf-8"))
    return [step["payload"] for step in cassette["steps"] if step["type"] == "model_input"]


def test_python_children_record_into_the_test_cassette_and_replay_offline(counted_sync: Counted) -> None:
    counted = counted_sync
    _kids(counted)
    recorded = counted.run("--record-mode=once")
    recorded.assert_outcomes(passed=len(TESTS))
    recorded.stdout.fnmatch_lines([exact(summary(recorded=len(TESTS)))])
    assert counted.sent == len(TESTS)
    for test in TESTS:
        inputs = _model_inputs(counted, test)
        assert len(inputs) == 1, test
        assert "What is the weather in" in json.dumps(inputs[0]), test
    cassettes = {test: counted.cassette("test_kids", test).read_bytes() for test in TESTS}

    counted.pytester._monkeypatch.setenv("CI", "1")
    replayed = counted.run()
    replayed.assert_outcomes(passed=len(TESTS))
    replayed.stdout.fnmatch_lines([exact(summary(replayed=len(TESTS)))])
    assert counted.sent == len(TESTS)  # not one more request reached the provider
    assert {test: counted.cassette("test_kids", test).read_bytes() for test in TESTS} == cassettes


def test_a_changed_prompt_in_a_child_fails_the_parent_test(counted_sync: Counted) -> None:
    counted = counted_sync
    _kids(counted)
    counted.run("--record-mode=once", "-k", "test_subprocess").assert_outcomes(passed=1)
    monkeypatch = counted.pytester._monkeypatch
    monkeypatch.setenv("CI", "1")
    monkeypatch.setenv("HOW", "near")
    replayed = counted.run("-k", "test_subprocess")
    replayed.assert_outcomes(failed=1)
    replayed.stdout.fnmatch_lines(
        [
            "*_ test_subprocess _*",
            "blackbox: replay diverged at step 0, messages[[]0[]].content",
            '  recorded: "What is the weather in Paris?"',
            '  actual:   "What is the weather near Paris?"',
        ],
        consecutive=True,
    )
    replayed.stdout.fnmatch_lines([exact(summary(diverged=1, checked=False))])
    assert counted.sent == 1


UNFOLLOWED = """
import os
import subprocess
import sys

import pytest


@pytest.mark.blackbox
def test_unfollowed():
    if os.environ.get("RUN_CHILD"):  # the recording did not run it; the replay does
        done = subprocess.run(COMMAND, capture_output=True, text=True)
        print("the child said:", done.stdout.strip(), done.stderr.strip())
"""
#: ``python -S`` skips the start-up hook (it finds the SDK through ``KID_SITE``); curl is no Python.
#: Both use the SDK's default address, which a replay's variables send to the refusing port.
UNFOLLOWED_COMMANDS = {
    "python -S": "[sys.executable, '-S', '-c', PYTHON_CALL]",
    "curl": "['curl', '-sS', '-o', '/dev/null', 'https://api.anthropic.com/v1/messages']",
}
PYTHON_CALL = """
import os, sys
sys.path[:0] = os.environ["KID_SITE"].split(os.pathsep)
import anthropic
try:
    anthropic.Anthropic(api_key="fake-provider-key").messages.create(
        model="claude-haiku-4-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
except anthropic.APIStatusError as error:
    print(error.status_code)
"""


@pytest.mark.parametrize("child", list(UNFOLLOWED_COMMANDS))
def test_a_child_that_cannot_follow_is_refused_in_a_replay(counted_sync: Counted, child: str) -> None:
    if child == "curl" and shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    counted = counted_sync
    command = UNFOLLOWED_COMMANDS[child].replace("PYTHON_CALL", repr(PYTHON_CALL))
    counted.pytester.makepyfile(test_kids=UNFOLLOWED.replace("COMMAND", command))
    counted.run("--record-mode=once").assert_outcomes(passed=1)  # a cassette with no model call
    monkeypatch = counted.pytester._monkeypatch
    monkeypatch.setenv("KID_SITE", os.pathsep.join(site.getsitepackages()))
    monkeypatch.setenv("RUN_CHILD", "1")
    monkeypatch.setenv("CI", "1")
    replayed = counted.run()
    replayed.assert_outcomes(failed=1)
    tried = "api.anthropic.com:443" if child == "curl" else "POST /v1/messages"
    replayed.stdout.fnmatch_lines(
        [
            "*_ test_unfollowed _*",
            exact(
                f"blackbox: a request to {tried} came during a replay through the base-URL or proxy "
                "variables a replay sets (from a child process pytest-blackbox cannot follow, or code "
                "reading those variables); nothing was sent. Only Python children started with the "
                "test's environment are followed (not other programs, `python -S`, or an env= of their "
                "own): run it that way, or make the request inside a wrapped tool (blackbox.tool)"
            ),
            "cassette: cassettes/test_kids/test_unfollowed.json",
        ],
        consecutive=True,
    )
    replayed.stdout.fnmatch_lines([exact(summary(refused=1))])
    assert counted.sent == 0


STRAY = """
import threading

import anthropic
import pytest

import kid_agent

go = threading.Event()
late = {}


def call_later():
    go.wait(120)
    try:
        late["answer"] = kid_agent.ask("Oslo")
    except anthropic.BadRequestError as error:
        late["answer"] = error.response.json()["error"]["message"]


@pytest.mark.blackbox
def test_a():
    late["thread"] = threading.Thread(target=call_later, daemon=True)
    late["thread"].start()
    assert kid_agent.ask("Paris") == "Paris"


@pytest.mark.blackbox
def test_b():
    assert kid_agent.ask("Lima") == "Lima"
    go.set()
    late["thread"].join(120)
    assert late["answer"].startswith("[blackbox] a model call came from a thread or task started by ")
"""
STRAY_REFUSAL = (
    "a model call came from a thread or task started by test_kids.py::test_a, which has ended, while "
    "test_kids.py::test_b ran: it was not sent, nor recorded in this test's cassette; join the thread "
    "(or await the task) before the test that started it ends"
)


def test_a_call_from_a_thread_of_an_ended_test_is_refused_naming_that_test(counted_sync: Counted) -> None:
    counted = counted_sync
    counted.pytester.makepyfile(kid_agent=KID_AGENT, test_kids=STRAY)
    for run, args in (("record", ("--record-mode=once",)), ("replay", ())):
        if run == "replay":
            counted.pytester._monkeypatch.setenv("CI", "1")
        result = counted.run(*args)
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines(
            [
                "*= warnings summary =*",
                "test_kids.py::test_b",
                "  *: StrayCallWarning: " + exact(STRAY_REFUSAL),
            ]
        )
        assert counted.sent == 2  # test_a's call and test_b's, recorded once; the stray one never
        for test, city in (("test_a", "Paris"), ("test_b", "Lima")):
            inputs = _model_inputs(counted, test)
            assert len(inputs) == 1 and f"in {city}?" in json.dumps(inputs[0]), (run, test)
