"""Where a replayed model call's time goes, measured by cutting its parts away.

The replay of ``replay_bench.py`` (the anthropic SDK, one wrapped tool per round) runs in several
variants beside the floor, all taking turns run by run in one process (``replay_bench.interleaved``).
In every variant but the first, the session's model-call handler is replaced, for that variant's
runs only, by one that stops earlier. Each one answers with the same recorded call, so the agent
runs alike. The sessions, the wrapped tools and the interception are the shipped ones:

- ``shipped``: the handler as released;
- ``direct``: the same body parser, normalization and strict comparison, called one after the other
  without the layers and checks around them (routing, key noting, the unknown-field and media
  checks, the refusal checks);
- ``no comparison``: parse and normalize the request, then answer without comparing it;
- ``parse only``: parse the request (the session's incremental parser), then answer;
- ``nothing read``: answer the next recorded call without reading the request.

The cut-down handlers are measurement only. They skip checks a release must keep, and they are
right only for this benchmark's run: sequential, strict, no redaction, and plain answers. The
difference between two neighbouring rows is what that part of the handler costs in place, between
the SDK's own work.

Run: ``python bench/replay_parts.py [--calls 10] [--budget 1000] [--repeat 3] [--clock cpu|wall]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anthropic
import machine
import replay_bench as bench

from pytest_blackbox import providers
from pytest_blackbox.engine.recorded import RecordedTurn
from pytest_blackbox.engine.session import Session
from pytest_blackbox.engine.wire import WireCall
from pytest_blackbox.interception import ModelRequest, Reply
from pytest_blackbox.testing import FakeProvider

#: A model-call handler in place of ``Session._on_model``.
Handler = Callable[[Session, ModelRequest], Any]


def _answer(session: Session, request: ModelRequest, body: Any, model_input: Any | None) -> Reply:
    """The next recorded call, used and answered as the shipped handler answers it (a variant that did
    not normalize the request names the recorded one's model, the same)."""
    dispatch = session._dispatch
    cursor = dispatch.cursor
    assert cursor is not None
    turn: RecordedTurn | None = cursor._first_unused()
    assert turn is not None and turn.output is not None
    if model_input is not None:
        cursor.compare.check_request(turn, model_input, model_input)
    cursor._use(turn)
    dispatch._ids.register_identity(*turn.handed_out)
    call = WireCall(WireCall.provider_of(request), urlsplit(request.url).path, body)
    return call.reply(model_input if model_input is not None else turn.request, turn.output)


def _parsed(session: Session, request: ModelRequest) -> Any:
    return session._dispatch._bodies.parse(request.body.decode("utf-8"), "messages")


def _normalized(session: Session, body: Any) -> Any:
    return providers.provider_for_call("anthropic", "/v1/messages").normalize_request(
        body, session._dispatch._ids, path="/v1/messages"
    )


def direct(session: Session, request: ModelRequest) -> Reply:
    with session._lock:
        body = _parsed(session, request)
        return _answer(session, request, body, _normalized(session, body))


def no_comparison(session: Session, request: ModelRequest) -> Reply:
    with session._lock:
        body = _parsed(session, request)
        _normalized(session, body)
        return _answer(session, request, body, None)


def parse_only(session: Session, request: ModelRequest) -> Reply:
    with session._lock:
        return _answer(session, request, _parsed(session, request), None)


def nothing_read(session: Session, request: ModelRequest) -> Reply:
    with session._lock:
        return _answer(session, request, {}, None)


CUTS: dict[str, Handler | None] = {
    "shipped": None,
    "direct": direct,
    "no comparison": no_comparison,
    "parse only": parse_only,
    "nothing read": nothing_read,
}


def with_handler(handler: Handler | None, run: Callable[[], None]) -> Callable[[], None]:
    """``run`` with the sessions' model calls answered by ``handler`` (``None``: the shipped one)."""
    if handler is None:
        return run
    shipped = Session._on_model

    def cut() -> None:
        Session._on_model = handler  # type: ignore[method-assign,assignment]
        try:
            run()
        finally:
            Session._on_model = shipped  # type: ignore[method-assign]

    return cut


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=bench.CALLS, help="model calls per run")
    parser.add_argument("--budget", type=int, default=1000, help="model calls per batch")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--clock", choices=sorted(bench.CLOCKS), default="cpu")
    args = parser.parse_args()
    if args.calls < 2:
        parser.error("--calls takes a length of at least 2 model calls")
    bench._clock["now"] = bench.CLOCKS[args.clock]
    bench._calls["n"] = args.calls
    warnings.simplefilter("ignore")
    os.environ.setdefault("ANTHROPIC_API_KEY", "bench-key-not-secret")
    print(machine.describe())
    print(f"clock: {args.clock} time")
    runs = max(2, args.budget // args.calls)
    with tempfile.TemporaryDirectory() as tmp, FakeProvider() as fake:
        cassette, _, bodies = bench.prepare(Path(tmp), fake)
        client = anthropic.Anthropic(base_url=fake.base_url, max_retries=0)
        served = len(fake.requests)
        variants = {
            name: with_handler(cut, bench.blackbox_replay(cassette, client)) for name, cut in CUTS.items()
        }
        times = bench.interleaved(
            args.repeat, runs, {**variants, "floor": bench.floor_replay(bodies, fake.base_url)}
        )
        if len(fake.requests) != served:
            raise RuntimeError("a replay reached the fake provider")
    floor = times["floor"]
    print(
        f"replay, {runs} runs x {args.calls} model calls (a batch of lower-decile runs), against the floor:"
    )
    for name in CUTS:
        over = (times[name] - floor) * 1e6 / (runs * args.calls)
        print(f"  {name:<14} {times[name] / floor:6.3f}x  {over:+6.0f} µs/call")
    print(f"  {'floor (mock)':<14} {floor * 1e6 / (runs * args.calls):6.0f} µs/call")
    print(f"load average at the end: {machine.load()}")


if __name__ == "__main__":
    main()
