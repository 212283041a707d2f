"""A Vertex AI access token never reaches a cassette, a report or any output.

The token comes from Google's credentials, not from a key variable: the session learns it from the
``Authorization`` header of the first call, masks it in every message and refuses any cassette that
would hold it (docs/providers.md#gemini-on-vertex-ai).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_blackbox import blackbox
from pytest_blackbox.errors import SecretLeakError
from pytest_blackbox.testing import FakeProvider
from tests.agents.travel import FINAL, SYSTEM
from tests.agents.vertex import ROADS, TOKEN

from .conftest import files_in
from .test_secrets import assert_clean


@pytest.mark.parametrize("road", list(ROADS))
def test_the_token_is_never_written_and_a_cassette_holding_it_is_refused(
    road: str, fake_provider: FakeProvider, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, script, _ = ROADS[road]
    script(fake_provider)
    out, report = tmp_path / "run.json", tmp_path / "report.json"
    session = blackbox(mode="record", out=out, report_path=report)
    answer = run(fake_provider.base_url, session, is_async=False, stream=False, token=TOKEN, system=SYSTEM)
    session.finish(result=answer)
    assert answer == FINAL
    assert_clean(TOKEN, out.read_text(encoding="utf-8"), report.read_text(encoding="utf-8"))

    script(fake_provider)
    leaky = tmp_path / "leaky"
    leaky.mkdir()
    session = blackbox(mode="record", out=leaky / "run.json", report_path=leaky / "report.json")
    system = f"Sign with {TOKEN}."
    answer = run(fake_provider.base_url, session, is_async=False, stream=False, token=TOKEN, system=system)
    with pytest.raises(SecretLeakError) as caught:
        session.finish(result=answer)
    assert str(caught.value).startswith(
        "refusing to write the cassette: it contains your API key (the value of the authorization request "
        "header) in step 0 (model_input) at systemPrompt"
    )
    assert files_in(leaky) == ["report.json"]
    status = json.loads((leaky / "report.json").read_text(encoding="utf-8"))
    captured = capsys.readouterr()
    assert_clean(TOKEN, str(caught.value), json.dumps(status), captured.out, captured.err)
