"""Where a cassette cannot be written, the test says what to fix before any model call is paid for;
a run killed mid-recording leaves no hidden file for ``git add`` to pick up."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import pytest

from tests import QUIET

from .conftest import Counted, exact, summary

WRITING_MODES = ["once", "all", "rewrite", "new_episodes"]
#: Root writes through permission bits; without these two capabilities it meets them as a user does.
AS_A_USER = (
    ("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--")
    if os.name == "posix" and os.geteuid() == 0
    else ()
)


def _permissions_bind() -> bool:
    """Whether a folder's mode stops this process's children (as root, through ``setpriv``)."""
    if os.name != "posix":
        return False
    if not AS_A_USER:
        return True
    return shutil.which("setpriv") is not None and subprocess.run([*AS_A_USER, "true"]).returncode == 0


@pytest.mark.parametrize("mode", ["none", *WRITING_MODES])
def test_a_directory_at_the_cassette_path_is_named_as_such(counted_sync: Counted, mode: str) -> None:
    counted_sync.write()
    counted_sync.cassette().mkdir(parents=True)
    result = counted_sync.run(f"--record-mode={mode}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_weather _*",
            exact("blackbox: cassettes/test_weather/test_weather.json is a directory, not a cassette file"),
            exact("remove or rename it, or give the test another cassette (cassette= on its marker)"),
            exact(summary(invalid=1)),
        ],
        consecutive=True,
    )
    assert counted_sync.sent == 0


BLOCKED_FOLDER = """
@pytest.mark.blackbox(cassette_dir="blocker/cassettes")
DEF test_weather(blackbox, anthropic_options):
    assert AWAIT ask(blackbox, anthropic_options, city())
"""


def test_a_cassette_folder_that_cannot_be_created_is_refused_before_the_model_is_called(
    counted: Counted,
) -> None:
    counted.write(body=BLOCKED_FOLDER)
    (counted.pytester.path / "blocker").write_text("a file, where the cassettes' parent folder should be")
    result = counted.run("--record-mode=once")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_weather _*",
            exact(
                "blackbox: cannot write blocker/cassettes/test_weather.json: blocker/cassettes does not take "
                "new files (Not a directory); nothing was recorded"
            ),
            exact(
                "make the folder writable, or put the cassettes elsewhere (the cassette_dir setting, the "
                "blackbox_cassette_dir ini key)"
            ),
            exact(summary(unwritable=1)),
        ],
        consecutive=True,
    )
    assert counted.sent == 0


#: Module → the record mode its marker sets and the city its test asks about: one module per case, so
#: one run as another user (a Python start-up each) checks every mode against a read-only folder.
READ_ONLY = {
    "test_once": ("once", '"Paris"'),
    "test_all": ("all", '"Paris"'),
    "test_rewrite": ("rewrite", '"Paris"'),
    "test_matching": ("new_episodes", '"Paris"'),
    "test_new_episode": ("new_episodes", "city()"),
}
IN_MODE = """
@pytest.mark.blackbox(record_mode="{mode}")
DEF test_weather(blackbox, anthropic_options):
    answer = AWAIT ask(blackbox, anthropic_options, {city})
    assert answer.endswith(" in " + {city} + ".")
"""


@pytest.mark.skipif(
    not _permissions_bind(), reason="needs a POSIX user that permissions bind (as root: setpriv)"
)
def test_a_read_only_cassette_folder_is_refused_before_the_model_is_called(counted_sync: Counted) -> None:
    """Each writing mode is refused before the model is called. new_episodes replays a matching run
    (nothing needs writing); a new episode could not be kept, so it diverges."""
    for module, (mode, city) in READ_ONLY.items():
        counted_sync.write(name=module, body=IN_MODE.format(mode=mode, city=city))
    counted_sync.run("--record-mode=once").assert_outcomes(passed=len(READ_ONLY))
    once = counted_sync.cassette("test_once")
    once.rename(once.with_name("elsewhere.json"))  # once writes only a missing cassette (this one: unused)
    kept = {
        module: counted_sync.cassette(module).read_bytes() for module in ("test_matching", "test_new_episode")
    }
    sent = counted_sync.sent
    counted_sync.pytester._monkeypatch.setenv("WEATHER_CITY", "Oslo")
    folders = [counted_sync.cassette(module).parent for module in READ_ONLY]
    for folder in folders:
        folder.chmod(0o555)
    try:
        result = counted_sync.pytester.run(*AS_A_USER, sys.executable, "-m", "pytest", *QUIET)
    finally:
        for folder in folders:
            folder.chmod(0o755)
    result.assert_outcomes(passed=1, failed=4)
    for module in ("test_once", "test_all", "test_rewrite"):
        result.stdout.fnmatch_lines(
            [
                exact(
                    f"blackbox: cannot write cassettes/{module}/test_weather.json: "
                    f"cassettes/{module} does not take new files (Permission denied); nothing was recorded"
                ),
            ]
        )
    result.stdout.fnmatch_lines(["blackbox: replay diverged at step 0, *"])
    result.stdout.fnmatch_lines([exact(summary(replayed=1, diverged=1, unused=1, unwritable=3))])
    assert counted_sync.sent == sent
    assert {module: counted_sync.cassette(module).read_bytes() for module in kept} == kept
    for module in kept:
        assert sorted(p.name for p in counted_sync.cassette(module).parent.iterdir()) == ["test_weather.json"]


KILLED = """
import signal


@pytest.mark.blackbox
DEF test_weather(blackbox, anthropic_options):
    answer = AWAIT ask(blackbox, anthropic_options, city())
    if os.environ.get("KILL_ME"):
        os.kill(os.getpid(), signal.SIGTERM)  # CI cancelling the job, a laptop closing
    assert answer.endswith(" in " + city() + ".")
"""


def test_a_pending_file_left_by_a_killed_run_is_removed_by_the_next(counted: Counted) -> None:
    counted.write(body=KILLED)
    counted.run("--record-mode=once").assert_outcomes(passed=1)
    folder = counted.cassette().parent
    monkeypatch = counted.pytester._monkeypatch
    monkeypatch.setenv("KILL_ME", "1")
    killed = counted.pytester.runpytest_subprocess(*QUIET, "--record-mode=new_episodes")
    assert killed.ret == -signal.SIGTERM
    leftovers = [p.name for p in folder.iterdir() if p.name != "test_weather.json"]
    assert len(leftovers) == 1 and leftovers[0].startswith(".test_weather.json.")
    assert leftovers[0].endswith(".pending")

    monkeypatch.delenv("KILL_ME")
    monkeypatch.setenv("CI", "1")
    replayed = counted.run()
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines([exact(summary(replayed=1))])
    assert [p.name for p in folder.iterdir()] == ["test_weather.json"]
    assert counted.sent == 3
