"""What replaying and recording through Blackbox cost, next to the floor and to vcrpy.

One agent run makes N model calls through the real ``anthropic`` SDK (N - 1 tool rounds with one wrapped
tool each, then the final answer), each request carrying the whole history so far; ``--calls 10,50,200``
measures every length side by side in one run. The script prints the machine and the versions, then
for each length, from one run of the benchmark:

(a) replay: runs replayed from a Blackbox cassette (``blackbox(mode="replay")`` + ``finish()``:
    cassette load, strict request comparison, synthesized responses), against
    - the floor: the same SDK calls on a client whose ``httpx2.MockTransport`` returns prebuilt
      response bytes (no interception, no cassette, no normalization, no comparison);
    - the interception floor: the same prebuilt bytes returned by an ``Interceptor`` (the respx
      routing every replay goes through, without the session);
    - vcrpy: the same SDK calls replayed from a vcrpy cassette recorded against the fake provider.
    Targets: ≤ 1.25x the floor, ≥ 1.5x faster than vcrpy.
(b) record: runs against the fake provider on 127.0.0.1, recorded (``blackbox(mode="record")`` +
    ``finish()``, which verifies and writes the cassette) against the same live runs unrecorded.
    Target: ≤ 1.5x.
(c) the cassette's size: bytes per model call (the format stores each request's whole history, so a
    run's cassette grows with the square of its length).

``--roads`` measures instead (a) for every road to a model (``roads.py``: the Anthropic SDK direct,
Anthropic on Vertex AI and on Bedrock, Azure OpenAI, boto3's and aiobotocore's Bedrock Converse),
each against its own floor: the same client with prebuilt answers in place of the network.

Every batch makes about ``--budget`` model calls (``--budget // N`` runs, at least 2), recorded
batches ``--live-budget``.

Each run is timed on its own, the variants taking turns run by run (A B C, then C B A, …), for
``--repeat`` batches of each; a figure is a batch's worth of the variant's lower-decile run (the
run time that 10 % of its runs beat, times the runs of a batch). On a shared machine another job's
burst of work stretches the few runs it lands on, not a whole batch: the ratios then move by a few
per cent between runs of the script, where the best of a few whole batches moved them by 10–15 %.
Long runs make few runs a batch (5 at 200 calls): give them more ``--repeat``.
Runs are timed by the process's CPU time (``--clock cpu``, the default: on a shared machine other jobs barely
move it, while they can stretch wall time many times over; it counts every thread, the fake
provider's included, and not the time spent waiting for the disk) or by the wall clock
(``--clock wall``).
The replays read the same unchanged cassette, so after the first one the session reuses its
check of the file (parse, schema, hash chain; keyed by the file's SHA-256): the printed "cold load"
is what the first replay of a cassette adds on top. The floor is mostly the SDK's own work, which
every variant pays, so "vcrpy / floor" bounds how much faster than vcrpy any replay could be.
``--ints`` keeps every tool value integral (see ``SCORE_SCALE``). ``--profile`` prints the top of a
cProfile of the Blackbox replay batch. ``--own`` also prints the CPU time spent inside pytest-blackbox's
entry points during a replay batch (``OWN``: the intercepted model calls, the wrapped tools, the
session's start and finish), the best of ``--repeat`` batches: the part of "over the floor" that is
blackbox's own work.

Run: ``python bench/replay_bench.py [--calls 10,50,200] [--budget 1000] [--live-budget 300] [--repeat 5]
[--ints] [--profile] [--own] [--clock cpu|wall] [--roads]``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import machine
import roads
import vcr  # type: ignore[import-untyped]

from pytest_blackbox import blackbox
from pytest_blackbox.engine.session import Session
from pytest_blackbox.engine.tools import ToolPort
from pytest_blackbox.interception import Forward, Interceptor, ModelRequest, Reply
from pytest_blackbox.interception.transport import InterceptTransport
from pytest_blackbox.providers import ROUTES
from pytest_blackbox.testing import FakeProvider
from pytest_blackbox.trace.io import load_trace

CALLS = 10
MODEL = roads.ROADS["anthropic"].model
TARGET_FLOOR, TARGET_VCR, TARGET_RECORD = 1.25, 1.5, 1.5


#: ``--ints`` makes every tool value integral: canonical JSON then stays on its C fast path, which
#: shows what floats in tool results (and in the JSON text sent back to the model) cost.
SCORE_SCALE = {"floats": 0.25, "ints": 25}
_scale = SCORE_SCALE["floats"]
#: The model calls of one run: the length being measured.
_calls = {"n": CALLS}


def lookup(n: int) -> dict[str, Any]:
    return {"n": n, "title": f"item {n}", "tags": ["a", "b"], "score": n * _scale}


def script(fake: FakeProvider) -> None:
    roads.ROADS["anthropic"].script(fake, _calls["n"])


def agent(client: anthropic.Anthropic, tools: dict[str, Callable[..., Any]]) -> str:
    """The agent loop every variant runs: the same requests, the same tool round trips."""
    return roads.messages_agent(client, MODEL, _calls["n"], tools)


#: What a batch is timed by (``--clock``): the process's CPU time (every thread's, the fake provider's
#: included), which other jobs on a shared machine barely move, or the wall clock.
CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}
_clock = {"now": CLOCKS["cpu"]}


def best_of(repeat: int, batch: Callable[[], object]) -> float:
    now = _clock["now"]
    times = []
    for _ in range(repeat):
        gc.collect()
        start = now()
        batch()
        times.append(now() - start)
    return min(times)


# -- the variants ----------------------------------------------------------------------------------


def blackbox_replay(cassette: Path, client: anthropic.Anthropic) -> Callable[[], None]:
    def run() -> None:
        with blackbox(mode="replay", cassette=cassette) as session:
            session.finish(result=agent(client, session.tools({"lookup": lookup})))

    return run


def prebuilt(bodies: list[bytes]) -> Callable[[ModelRequest], Reply]:
    """The floor's handler for one run: the next prebuilt answer, nothing else."""
    answers: Iterator[bytes] = iter(bodies)
    return lambda request: Reply(200, next(answers))


def floor_replay(bodies: list[bytes], base_url: str) -> Callable[[], None]:
    """The SDK alone: its client on a ``MockTransport`` that hands out the prebuilt answers in turn."""
    answers: list[Iterator[bytes]] = []
    headers = {"content-type": "application/json"}
    transport = httpx2.MockTransport(
        lambda request: httpx2.Response(200, content=next(answers[-1]), headers=headers)
    )
    client = anthropic.Anthropic(
        api_key="floor", base_url=base_url, max_retries=0, http_client=httpx2.Client(transport=transport)
    )

    def run() -> None:
        answers[:] = [iter(bodies)]
        agent(client, {"lookup": lookup})

    return run


def interception_replay(bodies: list[bytes], client: anthropic.Anthropic) -> Callable[[], None]:
    def run() -> None:
        with Interceptor(prebuilt(bodies), routes=ROUTES):
            agent(client, {"lookup": lookup})

    return run


def vcr_replay(cassette: Path, client: anthropic.Anthropic) -> Callable[[], None]:
    def run() -> None:
        with vcr.use_cassette(str(cassette), record_mode="none"):
            agent(client, {"lookup": lookup})

    return run


def live(
    fake: FakeProvider, client: anthropic.Anthropic, out: Path | None, tool: Callable[..., Any] = lookup
) -> Callable[[], None]:
    """A run against the fake provider, recorded to ``out`` (``None``: not recorded), ``tool`` as lookup."""

    def run() -> None:
        script(fake)
        if out is None:
            agent(client, {"lookup": tool})
            return
        with blackbox(mode="record", out=out) as session:
            session.finish(result=agent(client, session.tools({"lookup": tool})))

    return run


def batch_of(run: Callable[[], None], runs: int) -> Callable[[], None]:
    """``runs`` runs in a row (what ``--own`` and ``--profile`` time as one)."""

    def batch() -> None:
        for _ in range(runs):
            run()

    return batch


# -- set-up ----------------------------------------------------------------------------------------


def prepare(work: Path, fake: FakeProvider) -> tuple[Path, Path, list[bytes]]:
    """A Blackbox cassette, a vcrpy cassette and the floor's prebuilt answers, all of the same run."""
    client = anthropic.Anthropic(base_url=fake.base_url, max_retries=0)
    cassette = work / "run.json"
    live(fake, client, cassette)()
    vcr_cassette = work / "run.vcr.yaml"
    script(fake)
    with vcr.use_cassette(str(vcr_cassette), record_mode="all"):
        agent(client, {"lookup": lookup})
    bodies: list[bytes] = []
    script(fake)
    with Interceptor(lambda request: Forward(lambda response: bodies.append(response.body)), routes=ROUTES):
        agent(client, {"lookup": lookup})
    return cassette, vcr_cassette, bodies


@dataclass
class Results:
    calls: int
    runs: int
    live_runs: int
    ours: float
    floor: float
    interception: float
    vcr: float
    cold_load: float
    plain: float
    recorded: float
    cassette_bytes: int
    #: ``--own``: CPU seconds inside pytest-blackbox per part, in the best replay batch.
    own: dict[str, float] | None = None


#: pytest-blackbox's entry points in a replay (``--own``), none called from inside another: the
#: client's transport (a whole model call: parse, normalize, compare, answer), a wrapped tool's call,
#: and a session's life.
OWN: tuple[tuple[type, str, str], ...] = (
    (InterceptTransport, "handle_request", "model calls"),
    (ToolPort, "run", "wrapped tools"),
    (Session, "__init__", "session"),
    (Session, "start", "session"),
    (Session, "finish", "session"),
    (Session, "__exit__", "session"),
)


def own_time(repeat: int, batch: Callable[[], object]) -> dict[str, float]:
    """The CPU time spent inside the ``OWN`` entry points during ``batch``, in the best of ``repeat``."""
    spent: dict[str, float] = {}

    def timed(original: Callable[..., Any], label: str) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + time.process_time() - start

        return wrapper

    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in OWN]
    for (owner, name, label), (_, _, original) in zip(OWN, originals, strict=True):
        setattr(owner, name, timed(original, label))
    best: dict[str, float] | None = None
    try:
        for _ in range(repeat):
            spent.clear()
            gc.collect()
            batch()
            if best is None or sum(spent.values()) < sum(best.values()):
                best = dict(spent)
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)
    return best or {}


#: Which of a variant's run times stands for it: the one that this share of its runs beat.
QUANTILE = 0.1


def interleaved(repeat: int, runs: int, variants: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Each variant's time for a batch of ``runs`` runs: ``runs`` times its lower-decile run, of
    ``repeat * runs`` runs timed one by one, the variants taking turns run by run (in one order, then
    the reverse), so a busy moment of the shared machine lands on every variant alike."""
    now = _clock["now"]
    times: dict[str, list[float]] = {name: [] for name in variants}
    order = list(variants.items())
    for run in variants.values():  # warm: caches filled, the cassette's check remembered
        run()
    gc.collect()
    for turn in range(repeat * runs):
        for name, run in order if turn % 2 == 0 else reversed(order):
            start = now()
            run()
            times[name].append(now() - start)
    return {name: runs * sorted(values)[int(QUANTILE * (len(values) - 1))] for name, values in times.items()}


def measure(args: argparse.Namespace, work: Path, fake: FakeProvider, calls: int) -> Results:
    _calls["n"] = calls
    runs = max(2, args.budget // calls)
    live_runs = max(2, args.live_budget // calls)
    cassette, vcr_cassette, bodies = prepare(work, fake)
    # vcrpy matches the port too, so every variant uses the fake's address; no replay may reach it
    client = anthropic.Anthropic(base_url=fake.base_url, max_retries=0)
    served = len(fake.requests)
    replays = interleaved(
        args.repeat,
        runs,
        {
            "ours": blackbox_replay(cassette, client),
            "floor": floor_replay(bodies, fake.base_url),
            "interception": interception_replay(bodies, client),
            "vcr": vcr_replay(vcr_cassette, client),
        },
    )
    if len(fake.requests) != served:
        raise RuntimeError("a replay reached the fake provider")
    cold_load = best_of(args.repeat, lambda: load_trace(cassette))
    lives = interleaved(
        args.repeat,
        live_runs,
        {"plain": live(fake, client, None), "recorded": live(fake, client, work / "rec.json")},
    )
    replay = batch_of(blackbox_replay(cassette, client), runs)
    own = own_time(args.repeat, replay) if args.own else None
    if args.profile:
        profile(replay)
        profile(batch_of(live(fake, client, work / "rec.json"), live_runs))
    return Results(
        calls,
        runs,
        live_runs,
        replays["ours"],
        replays["floor"],
        replays["interception"],
        replays["vcr"],
        cold_load,
        lives["plain"],
        lives["recorded"],
        cassette.stat().st_size,
        own,
    )


@dataclass
class RoadResult:
    road: str
    calls: int
    runs: int
    ours: float
    floor: float


def measure_road(
    args: argparse.Namespace, work: Path, fake: FakeProvider, road: roads.Road, calls: int
) -> RoadResult:
    """One road's replay beside its floor: a cassette recorded against the fake provider, replayed
    through the live client, and the same client on prebuilt answers captured from the same run."""
    runs = max(2, args.budget // calls)
    cassette = work / f"{road.name}.json"
    client = road.live(fake.base_url)
    road.script(fake, calls)
    with blackbox(mode="record", out=cassette) as session:
        session.finish(result=road.run(client, calls, session.tools({"lookup": lookup})))
    bodies: list[bytes] = []
    road.script(fake, calls)
    with Interceptor(lambda request: Forward(lambda response: bodies.append(response.body)), routes=ROUTES):
        road.run(client, calls, {"lookup": lookup})
    answers, next_body = roads.turns(bodies)
    floor_client = road.floor(fake.base_url, next_body)

    def replay() -> None:
        with blackbox(mode="replay", cassette=cassette) as session:
            session.finish(result=road.run(client, calls, session.tools({"lookup": lookup})))

    def floor() -> None:
        answers[:] = [iter(bodies)]
        road.run(floor_client, calls, {"lookup": lookup})

    served = len(fake.requests)
    times = interleaved(args.repeat, runs, {"ours": replay, "floor": floor})
    if len(fake.requests) != served:
        raise RuntimeError(f"a replay of the {road.name} road reached the fake provider")
    return RoadResult(road.name, calls, runs, times["ours"], times["floor"])


def report_roads(results: list[RoadResult]) -> None:
    """Each road's per-call replay beside its own floor."""
    print("road        | calls | blackbox µs/call | floor µs/call | over floor | blackbox/floor")
    for r in results:
        per_call = r.runs * r.calls
        ours, floor = r.ours * 1e6 / per_call, r.floor * 1e6 / per_call
        print(
            f"{r.road:<11} | {r.calls:5} | {ours:16.0f} | {floor:13.0f} | {ours - floor:+10.0f} | "
            f"{r.ours / r.floor:13.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--calls", default=str(CALLS), help="model calls per run, comma-separated lengths (10,50,200)"
    )
    parser.add_argument("--budget", type=int, default=1000, help="model calls per replayed batch")
    parser.add_argument("--live-budget", type=int, default=300, help="model calls per live batch")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--own", action="store_true", help="also the CPU time inside pytest-blackbox during a replay (OWN)"
    )
    parser.add_argument("--ints", action="store_true", help="integral tool values only (see SCORE_SCALE)")
    parser.add_argument(
        "--clock", choices=sorted(CLOCKS), default="cpu", help="time batches by CPU time (default) or wall"
    )
    parser.add_argument(
        "--roads", action="store_true", help="replay of every road (roads.py) beside its own floor instead"
    )
    args = parser.parse_args()
    _clock["now"] = CLOCKS[args.clock]
    lengths = [int(part) for part in args.calls.split(",") if part.strip()]
    if not lengths or min(lengths) < 2:
        parser.error("--calls takes lengths of at least 2 model calls, e.g. 10,50,200")
    global _scale
    _scale = SCORE_SCALE["ints" if args.ints else "floats"]
    warnings.simplefilter("ignore")
    os.environ.setdefault("ANTHROPIC_API_KEY", "bench-key-not-secret")
    print(machine.describe())
    print(f"clock: {args.clock} time")
    results = []
    with tempfile.TemporaryDirectory() as tmp, FakeProvider() as fake:
        if args.roads:
            report_roads(
                [
                    measure_road(args, Path(tmp), fake, road, n)
                    for n in lengths
                    for road in roads.ROADS.values()
                ]
            )
            print(f"load average at the end: {machine.load()}")
            return
        for calls in lengths:
            work = Path(tmp) / str(calls)
            work.mkdir()
            results.append(measure(args, work, fake, calls))
            report(results[-1])
    summary(results)
    print(f"load average at the end: {machine.load()}")


def ratio_line(name: str, value: float, target: float, at_most: bool) -> str:
    ok = value <= target if at_most else value >= target
    sign = "<=" if at_most else ">="
    return f"  {name:<17} {value:8.2f}x  target {sign} {target}x  {'ok' if ok else 'MISSED'}"


def report(r: Results) -> None:
    """Totals, per-call figures, the ratios against the targets, and the overhead above the floor.

    The floor is mostly the SDK's own work (building, sending and parsing each call), which every
    variant pays; the overhead above it is what a replay tool adds.
    """
    calls = r.runs * r.calls
    print(f"replay, {r.runs} runs x {r.calls} model calls (a batch of lower-decile runs):")
    variants = (
        ("blackbox replay", r.ours),
        ("floor (mock)", r.floor),
        ("interception", r.interception),
        ("vcrpy", r.vcr),
    )
    for name, total in variants:
        above = (total - r.floor) * 1e6 / calls
        print(
            f"  {name:<17} {total * 1e3:8.1f} ms  {total * 1e6 / calls:6.0f} µs/call  {above:+6.0f} vs floor"
        )
    print(ratio_line("blackbox / floor", r.ours / r.floor, TARGET_FLOOR, at_most=True))
    print(f"  interception / floor {r.interception / r.floor:5.2f}x  (respx routing, no session)")
    print(ratio_line("vcrpy / blackbox", r.vcr / r.ours, TARGET_VCR, at_most=False))
    print(f"  vcrpy / floor     {r.vcr / r.floor:8.2f}x  (no replay tool can be faster than the floor)")
    print(f"  a cassette's first (cold) load: {r.cold_load * 1e3:.1f} ms; later sessions reuse the check")
    if r.own is not None:
        parts = ", ".join(f"{label} {seconds * 1e6 / calls:.0f}" for label, seconds in r.own.items())
        print(f"  inside pytest-blackbox: {sum(r.own.values()) * 1e6 / calls:.0f} µs/call ({parts})")
    print(
        f"record, {r.live_runs} live runs x {r.calls} model calls against the fake provider "
        "(a batch of lower-decile runs):"
    )
    added = (r.recorded - r.plain) * 1e3 / r.live_runs
    print(f"  live, recorded    {r.recorded * 1e3:8.1f} ms  ({added:.1f} ms added per run, writing included)")
    print(f"  live, plain       {r.plain * 1e3:8.1f} ms")
    print(ratio_line("recorded / plain", r.recorded / r.plain, TARGET_RECORD, at_most=True))
    print(f"cassette: {r.cassette_bytes:,} bytes, {r.cassette_bytes // r.calls:,} bytes per model call")


def summary(results: list[Results]) -> None:
    """One table of every length: the issue's figures side by side (with ``--own``, blackbox's own
    CPU time per call as a last column)."""
    own = all(r.own is not None for r in results)
    print(
        "calls | µs/call over floor | blackbox/floor | vcrpy/blackbox | recorded/plain | bytes/call"
        + (" | own µs/call" if own else "")
    )
    for r in results:
        above = (r.ours - r.floor) * 1e6 / (r.runs * r.calls)
        inside = f" | {sum(r.own.values()) * 1e6 / (r.runs * r.calls):11.0f}" if own and r.own else ""
        print(
            f"{r.calls:5} | {above:+18.0f} | {r.ours / r.floor:13.2f}x | {r.vcr / r.ours:13.2f}x | "
            f"{r.recorded / r.plain:13.2f}x | {r.cassette_bytes // r.calls:10,}{inside}"
        )


def profile(batch: Callable[[], None]) -> None:
    profiler = cProfile.Profile()
    profiler.runcall(batch)
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
