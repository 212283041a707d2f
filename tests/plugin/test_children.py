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

from tests import QUIET

from .conftest import Counted, exact, summary

#: The child's agent: one model call through the real anthropic SDK, at the address
#: ``ANTHROPIC_BASE_URL`` gives (the fake provider's, which the test's run points at its relay: the
#: followed children still reach the provider while recording); the fake answers with a
#: ``get_weather`` tool call naming the city it was asked about.
KID_AGENT = """
import os
import sys

import anthropic


def ask(city):
    client = anthropic.Anthropic(api_key="fake-provider-key")
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
    counted.pytester._monkeypatch.setenv("ANTHROPIC_BASE_URL", counted.fake.anthropic_base_url)


def _model_inputs(counted: Counted, test: str) -> list[Any]:
    cassette = json.loads(counted.cassette("test_kids", test).read_text(encoding="utf-8"))
    return [step["payload"] for step in cassette["steps"] if step["type"] == "model_input"]


def test_python_children_record_into_the_test_cassette_and_replay_offline(counted_sync: Counted) -> None:
    """Then a changed prompt in a child fails the parent test's replay (the same recording serves)."""
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

    counted.pytester._monkeypatch.setenv("HOW", "near")
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
    assert counted.sent == len(TESTS)
    assert {test: counted.cassette("test_kids", test).read_bytes() for test in TESTS} == cassettes


UNFOLLOWED = """
import os
import subprocess
import sys

import anthropic
import pytest
from agent import TOOLS, run_agent

COMMANDS = {COMMANDS}
MESSAGES = "/v1/messages"


@pytest.mark.blackbox
@pytest.mark.parametrize("child", list(COMMANDS))
def test_unfollowed(blackbox, child):
    # the test's own client, built from ANTHROPIC_BASE_URL while the test runs: unaffected
    client = anthropic.Anthropic(api_key="fake-provider-key")
    assert run_agent(client, "What is the weather in Paris?", blackbox.tools(TOOLS)).endswith(" in Paris.")
    if os.environ.get("RUN_CHILD"):  # the first recording did not run it
        done = subprocess.run(eval(COMMANDS[child]), capture_output=True, text=True)
        print("the child said:", done.stdout.strip(), done.stderr.strip())
"""
#: Children that cannot follow: ``python -S`` skips the start-up hook (it finds the SDK through
#: ``KID_SITE``), curl is no Python. The first two go where ``ANTHROPIC_BASE_URL`` says, which a
#: recording and a replay point at the relay's refusing port; the third at a fixed address, which only
#: a replay's proxy variables send there (a recording does not see it: it is never run recording).
UNFOLLOWED_COMMANDS = {
    "python-S": "[sys.executable, '-S', '-c', PYTHON_CALL]",
    "curl": "['curl', '-sS', '-o', '/dev/null', '-d', '{}', os.environ['ANTHROPIC_BASE_URL'] + MESSAGES]",
    "curl-fixed": "['curl', '-sS', '-o', '/dev/null', 'https://api.anthropic.com/v1/messages']",
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
FOLLOWED_ONLY = (
    "Only Python children started with the test's environment are followed (not other programs, "
    "`python -S`, or an env= of their own): run it that way, or make the request inside a wrapped tool "
    "(blackbox.tool)"
)


def _refusals(result: pytest.RunResult, children: list[str], first: str, cassette: str) -> None:
    for child in children:
        tried = "api.anthropic.com:443" if child == "curl-fixed" else "POST 127.0.0.1:*/v1/messages"
        result.stdout.fnmatch_lines(
            [
                f"*_ test_unfollowed[[]{child}[]] _*",
                exact(first).replace("TRIED", tried),
                exact(f"cassette: cassettes/test_kids/test_unfollowed[{child}].json{cassette}"),
            ],
            consecutive=True,
        )


def test_a_child_that_cannot_follow_fails_a_recording_and_is_refused_in_a_replay(
    counted_sync: Counted,
) -> None:
    counted = counted_sync
    children = [c for c in UNFOLLOWED_COMMANDS if not c.startswith("curl") or shutil.which("curl")]
    commands = {c: UNFOLLOWED_COMMANDS[c].replace("PYTHON_CALL", repr(PYTHON_CALL)) for c in children}
    counted.pytester.makepyfile(test_kids=UNFOLLOWED.replace("{COMMANDS}", repr(commands)))
    monkeypatch = counted.pytester._monkeypatch
    monkeypatch.setenv("ANTHROPIC_BASE_URL", counted.fake.anthropic_base_url)
    counted.run("--record-mode=once").assert_outcomes(passed=len(children))
    per_run = counted.sent // len(children)  # the test's own calls, recorded through its relay URL
    assert per_run == 3
    cassettes = {c: counted.cassette("test_kids", f"test_unfollowed[{c}]").read_bytes() for c in children}

    monkeypatch.setenv("KID_SITE", os.pathsep.join(site.getsitepackages()))
    monkeypatch.setenv("RUN_CHILD", "1")
    by_address = [c for c in children if c != "curl-fixed"]
    recorded = counted.run("--record-mode=all", "-k", "not fixed")
    recorded.assert_outcomes(failed=len(by_address))
    _refusals(
        recorded,
        by_address,
        "blackbox: a request to TRIED came during a recording through a base-URL variable the recording "
        "points at its own port (from a child process pytest-blackbox cannot follow, or code reading "
        "that variable without an SDK); it was not sent, and the cassette would have missed it. "
        + FOLLOWED_ONLY,
        " (not written: the test failed)",
    )
    recorded.stdout.fnmatch_lines([exact(summary(refused=len(by_address), checked=False))])
    assert counted.sent == per_run * (len(children) + len(by_address))  # the test's own calls only

    monkeypatch.setenv("CI", "1")
    replayed = counted.run()
    replayed.assert_outcomes(failed=len(children))
    _refusals(
        replayed,
        children,
        "blackbox: a request to TRIED came during a replay through the base-URL or proxy variables a "
        "replay sets (from a child process pytest-blackbox cannot follow, or code reading those "
        f"variables); nothing was sent. {FOLLOWED_ONLY}",
        "",
    )
    replayed.stdout.fnmatch_lines([exact(summary(refused=len(children)))])
    assert counted.sent == per_run * (len(children) + len(by_address))  # not one more request
    assert {
        c: counted.cassette("test_kids", f"test_unfollowed[{c}]").read_bytes() for c in children
    } == cassettes


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
    _kids(counted, STRAY)
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


PROXIES_SEEN = """
import os
import subprocess
import sys

import pytest

SHOW = "import os; print(os.environ.get('HTTPS_PROXY'), os.environ.get('no_proxy'))"


def child(**kwargs):
    done = subprocess.run([sys.executable, "-S", "-c", SHOW], capture_output=True, text=True, **kwargs)
    return done.stdout.strip()


@pytest.mark.blackbox
def test_replayed():
    print("own:", os.environ.get("HTTPS_PROXY"), os.environ.get("no_proxy"))
    print("inherited:", child())
    print("copied:", child(env={**os.environ, "EXTRA": "1"}))
    print("own env:", child(env={"PATH": os.environ.get("PATH", "")}))


def test_after():
    print("after:", child())
"""


def test_a_replay_sets_the_proxy_variables_for_its_children_not_for_its_own_process(
    bare_dir: pytest.Pytester,
) -> None:
    """An SDK client built in the test's process builds no proxy transports (the socket guard covers
    that process); a child inherits the variables, or gets them in an environment copied from the
    test's, and nothing is left once the test ends."""
    bare_dir.makepyfile(test_proxies=PROXIES_SEEN)
    bare_dir.runpytest(*QUIET, "--record-mode=once").assert_outcomes(passed=2)
    bare_dir._monkeypatch.setenv("CI", "1")
    replayed = bare_dir.runpytest(*QUIET, "-s")
    replayed.assert_outcomes(passed=2)
    replayed.stdout.fnmatch_lines(
        [
            "*own: None None",
            "inherited: http://127.0.0.1:* localhost,127.0.0.1,::1",
            "copied: http://127.0.0.1:* localhost,127.0.0.1,::1",
            "own env: None None",
            "*after: None None",
        ],
        consecutive=True,
    )
