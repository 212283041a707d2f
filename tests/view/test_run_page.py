"""The run page: one row per step, turns reduced to what is new, verdict badge, escaping, masking."""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any, cast

from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.analysis.view import FOLD_CHARS, VALUE_CAP, render_run_html
from pytest_blackbox.trace.model import Trace
from pytest_blackbox.trace.recorder import TraceRecorder
from tests import vector_path

from .conftest import ERROR, FORK_CHILD, SUCCESS, TRIAGE, Node, meta, parse_page, raw_vector, vector


def run_page(name: str, **kwargs: Any) -> Node:
    return parse_page(render_run_html(vector(name), verify_report=verify_trace(vector_path(name)), **kwargs))


def rows(page: Node) -> list[Node]:
    return page.one("ol", "timeline").find_all("li", "step")


def row(page: Node, index: int) -> Node:
    return page.one("li", "step", id=f"step-{index}")


def head_text(node: Node, cls: str) -> str:
    return node.one("div", "head").one(cls=cls).text()


def one_round(result_payload: dict[str, Any], answer: str = "done") -> Trace:
    """A small valid run whose single tool result is ``result_payload`` (``result`` or ``error``)."""
    recorder = TraceRecorder("planted-run", 1000)
    call = {"toolCallId": "call-0", "toolName": "lookup", "toolInput": {"q": "x"}}
    recorder.append("model_input", {"messages": [{"role": "user", "content": "go"}], "tools": []}, 1000)
    recorder.append("model_output", {"type": "tool_call", **call}, 1001)
    recorder.append("tool_call", dict(call), 1002)
    recorder.append("tool_result", {"toolCallId": "call-0", "toolName": "lookup", **result_payload}, 1003)
    recorder.append("model_output", {"type": "final_answer", "text": answer}, 1004)
    recorder.append("metadata", {"event": "run_completed", "status": "success", "result": answer}, 1005)
    return recorder.trace()


# --------------------------------------------------------------------------------------------
# Timeline


def test_success_tool_use_has_one_row_per_step_with_index_type_time_and_hash() -> None:
    trace = vector(SUCCESS)
    page = run_page(SUCCESS)
    found = rows(page)
    assert len(found) == 15
    for position, (node, step) in enumerate(zip(found, trace["steps"], strict=True)):
        assert node.attrs["data-index"] == str(position)
        assert node.attrs["data-type"] == step["type"]
        assert head_text(node, "idx") == f"#{position}"
        assert head_text(node, "type") == step["type"].replace("_", " ")
        assert head_text(node, "time") == "+0 ms"
        hash_node = node.one("code", "hash")
        assert hash_node.text() == step["hash"][:8]
        assert hash_node.attrs["title"] == step["hash"]
    assert [node.text() for node in page.find_all("span", "turn-label")] == [
        "turn 1",
        "turn 2",
        "turn 3",
        "turn 4",
    ]
    assert head_text(row(page, 9), "summary") == "Model → tool_call: booking"


def test_header_shows_trace_id_badges_invariants_and_the_final_answer() -> None:
    page = run_page(SUCCESS)
    assert page.one("h1").text() == "Run fixture-success-tool-use"
    badge = page.one("span", "verify")
    assert (badge.attrs["data-verdict"], badge.text()) == ("pass", "verify: pass")
    assert page.one("span", "outcome").text() == "outcome: success"
    cells = [[td.text() for td in tr.find_all("td")] for tr in page.one("table", "invariants").find_all("tr")]
    assert cells == [
        ["schema_version", "pass", "version 2"],
        ["hash_chain", "pass", "15 step(s), chain intact"],
        ["provider_neutrality", "pass", "no forbidden markers"],
        ["replayability", "pass", "status=success"],
    ]
    assert (
        page.one("div", "outcome-line").text() == "final answerHotel booked for Alice on 2024-03-15 at 14:00."
    )


def test_times_count_from_created_at() -> None:
    page = run_page(TRIAGE)
    assert head_text(row(page, 0), "time") == "+700 ms"
    assert head_text(row(page, 16), "time") == "+10,150 ms"
    assert row(page, 0).one(cls="time").attrs["title"] == "2026-09-29T09:05:01.050Z"


def test_parallel_round_shows_the_text_and_every_call() -> None:
    output = row(run_page(TRIAGE), 1)
    calls = output.find_all("div", "call")
    assert [call.one("b").text() for call in calls] == ["lookup_dtc", "get_telemetry"]
    assert [call.one("code").text() for call in calls] == ["call-0", "call-1"]
    assert calls[1].one("pre").text() == '{"vehicle_id":"VAN-14"}'
    assert output.find_all("pre", "text")[0].text() == (
        "I'll look up P0217 and pull VAN-14's latest telematics readings."
    )


def test_a_later_turn_shows_only_the_messages_new_since_the_previous_turn() -> None:
    turn = row(run_page(TRIAGE), 6)
    assert turn.one("p", "note").text() == "1 earlier message(s) as in step 0; new:"
    assert turn.one("p", "note").one("a").attrs["href"] == "#step-0"
    messages = turn.find_all("div", "msg")
    assert [message.one(cls="role").text() for message in messages] == ["assistant", "user"]
    results = messages[1].find_all("div", "result")
    assert [result.one("b").text() for result in results] == ["lookup_dtc", "get_telemetry"]
    # the first turn's settings (system prompt, tools) are not repeated when unchanged
    assert turn.find_all(cls="setting") == []
    first = row(run_page(TRIAGE), 0)
    assert [node.one(cls="label").text() for node in first.find_all(cls="setting")] == [
        "systemPrompt",
        "model",
        "params",
        "tools",
    ]


def test_an_error_result_is_highlighted_and_the_outcome_is_error() -> None:
    page = run_page(ERROR)
    result_row = row(page, 3)
    assert "error" in result_row.classes
    error = result_row.one("div", "result")
    assert "error" in error.classes
    assert error.one("span", "error-label").text() == "ERROR"
    assert (
        error.one("pre").text()
        == 'Unknown fixture tool: "flights". Known tools: "search", "calendar", "booking"'
    )
    assert page.one("span", "outcome").text() == "outcome: error"
    assert page.one("div", "outcome-line").text() == "failure reasonunknown_tool"
    assert row(page, 4).one("div", "terminal").text() == "run failed · unknown_tool"
    assert [node.attrs["id"] for node in page.find_all("li", "error")] == ["step-3"]


def test_a_fork_shows_its_parent_and_fork_point() -> None:
    pairs = meta(run_page(FORK_CHILD))
    assert pairs["Trace id"] == "fixture-fork-parent-fork"
    assert pairs["Parent"] == "fixture-fork-parent"
    assert pairs["Fork point"] == "fixture-fork-parent:4 (a step of the parent)"


# --------------------------------------------------------------------------------------------
# A cassette that fails verification still renders


def test_a_broken_chain_renders_with_the_failure_marked_at_its_step() -> None:
    doc = raw_vector(SUCCESS)
    doc["steps"][3]["payload"]["result"]["results"][0]["title"] = "edited after recording"
    report = verify_trace(cast(Trace, doc))
    page = parse_page(render_run_html(doc, verify_report=report))
    assert len(rows(page)) == 15
    badge = page.one("span", "verify")
    assert badge.attrs["data-verdict"] == "fail"
    assert badge.text() == "verify: FAIL · hash_chain at step 3"
    assert badge.one("a").attrs["href"] == "#step-3"
    assert [node.attrs["id"] for node in page.find_all("li", "failed")] == ["step-3"]
    assert row(page, 3).one("div", "failure").text().startswith("✗ verify failed here: hash_chain — ")


def test_without_a_report_the_badge_says_verify_was_not_run() -> None:
    page = parse_page(render_run_html(vector(SUCCESS)))
    assert page.one("span", "verify").text() == "verify: not run"
    assert page.find_all("table", "invariants") == []


def test_a_run_with_missing_and_malformed_fields_still_renders() -> None:
    doc: dict[str, Any] = {
        "id": "odd",
        "steps": [{"type": "model_output"}, "not a step", {"type": "mystery"}],
    }
    page = parse_page(render_run_html(doc))
    assert [node.attrs["data-type"] for node in rows(page)] == ["model_output", "None", "mystery"]
    assert head_text(row(page, 0), "time") == "?"
    assert "t-unknown" in row(page, 2).classes
    assert page.one("span", "outcome").text() == "outcome: incomplete"


# --------------------------------------------------------------------------------------------
# Escaping, masking, self-containment


PAYLOAD = '<script>window.__pwned=1;alert(1)</script><img src=x onerror="window.__pwned=2">'


def test_markup_in_a_tool_result_is_text_and_never_an_element() -> None:
    text = render_run_html(one_round({"result": PAYLOAD}, answer=f"answer {PAYLOAD}"))
    page = parse_page(text)
    assert len(page.find_all("script")) == 1
    assert page.find_all("img") == []
    assert row(page, 3).one("pre").text() == PAYLOAD
    assert PAYLOAD not in text
    assert "&lt;script&gt;window.__pwned=1;alert(1)&lt;/script&gt;" in text


def test_markup_in_the_trace_id_and_tool_name_is_escaped_too() -> None:
    trace = one_round({"result": 1})
    trace["id"] = '"><script>window.__pwned=3</script>'
    trace["steps"][3]["payload"]["toolName"] = "<b onclick=x>lookup</b>"
    page = parse_page(render_run_html(trace))
    assert len(page.find_all("script")) == 1
    assert page.one("h1").text() == 'Run "><script>window.__pwned=3</script>'
    assert row(page, 3).one("div", "result").one("b").text() == "<b onclick=x>lookup</b>"
    assert page.one("title").text() == 'blackbox · "><script>window.__pwned=3</script>'


def test_known_keys_and_realistic_credentials_are_masked_everywhere() -> None:
    key = "plain-env-key-value-1234"
    credential = "sk-ant-api03-" + "A" * 30
    trace = one_round({"result": {"token": credential, "echo": key}}, answer=f"key {key}")
    text = render_run_html(trace, secrets=[key])
    assert key not in text
    assert credential not in text
    page = parse_page(text)
    assert row(page, 3).one("pre").text() == '{\n  "token": "[redacted]",\n  "echo": "[redacted]"\n}'
    assert page.one("div", "outcome-line").text() == "final answerkey [redacted]"


def test_the_page_loads_nothing_and_pins_its_own_style_and_script_by_hash() -> None:
    page = run_page(TRIAGE)
    for node in page.iter():
        assert "src" not in node.attrs
        assert node.attrs.get("href", "#").startswith("#")
        assert node.tag not in ("link", "iframe", "object", "embed", "img")
    (style,) = page.find_all("style")
    (script,) = page.find_all("script")
    policy = page.one("meta", http_equiv="Content-Security-Policy").attrs["content"]

    def pin(source: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"

    assert policy.startswith("default-src 'none'; ")
    assert f"style-src {pin(style.text())};" in policy
    assert f"script-src {pin(script.text())};" in policy
    assert "innerHTML" not in script.text()
    assert "insertAdjacentHTML" not in script.text()
    assert "document.write" not in script.text()


# --------------------------------------------------------------------------------------------
# Long values


def test_short_values_are_open_long_ones_folded_and_huge_ones_cut() -> None:
    short = render_run_html(one_round({"result": "x" * FOLD_CHARS}))
    assert row(parse_page(short), 3).find_all("details", "fold") == []
    long_page = parse_page(render_run_html(one_round({"result": "y" * (FOLD_CHARS + 1)})))
    (fold,) = row(long_page, 3).find_all("details", "fold")
    assert fold.one("span", "size").text() == f"(1 line, {FOLD_CHARS + 1} chars)"
    assert fold.one("pre").text() == "y" * (FOLD_CHARS + 1)
    lines = "\n".join(f"line {n}" for n in range(9))
    (folded_lines,) = row(parse_page(render_run_html(one_round({"result": lines}))), 3).find_all("details")
    assert (
        folded_lines.one("span", "preview").text()
        == "line 0 line 1 line 2 line 3 line 4 line 5 line 6 line 7 line 8…"
    )
    huge = parse_page(render_run_html(one_round({"result": "z" * (VALUE_CAP + 1000)})))
    cut = row(huge, 3)
    assert cut.one("pre").text() == "z" * VALUE_CAP + "…"
    assert re.fullmatch(r"1,000 more characters not shown; .*", cut.one("p", "note").text())


def test_the_other_choices_of_a_request_for_several_follow_the_first() -> None:
    recorder = TraceRecorder("choices", 1000)
    recorder.append("model_input", {"messages": [{"role": "user", "content": "hi"}], "tools": []}, 1000)
    call = {"toolCallId": "call-0", "toolName": "lookup", "toolInput": {"city": "Paris"}}
    choices = [{"type": "tool_calls", "calls": [call]}, {"type": "final_answer", "text": "Rainy."}]
    recorder.append("model_output", {"type": "final_answer", "text": "Sunny.", "choices": choices}, 1001)
    page = parse_page(render_run_html(recorder.trace()))
    notes = [node.text() for node in page.find_all("p", "note")]
    assert [note for note in notes if note.startswith("choice")] == ["choice 2", "choice 3"]
    assert [node.text() for node in page.find_all("span", "label")][-2:] == ["final answer", "final answer"]
    assert meta(page)["Extensions"].startswith("stops, choices, logprobs and moderation")
