"""Drive one server through every level x repeat and keep the evidence of each.

For each level: scrape /metrics, run `vllm bench serve` (in one warm process per server, see
bench_client) while sampling the server's memory and gauges, scrape again, then check the client's
token totals against the server's counters and the achieved load against the requested one. Raw
outputs and an envelope land in `out_dir`.

With a load search (`LoadPlan.search`) the levels are the search's probes (accelbench.search): each
probe is a level at the load the search asks for, its repeats the level's repeats, each record marked with
the probe's step and phase, and the search's result goes into the envelope. A failed level stops a search
as it stops fixed levels: its probes are kept, and the search's result says "probe_failed" with the
bracket found before it. A concurrency probe whose client kept fewer requests in flight than asked
(`in_flight_kept`) is client-limited, as a rate probe whose client sent below the rate.

Fixed levels end with a recheck when there is more than one level: the first level measured once more
(`recheck`, its repeat numbered on), compared with its first repeat (`accelbench.core.drift`); a host that
drifted under the run is said in the envelope (`drift`), and the report shows the run's figures undecided.

A level is "ok" (every request finished), "errors" (some failed, the server is still healthy: the run
goes on, as one failed request in 10^4 must not end a campaign) or "failed" (no usable result, nothing
completed, or the server died or stopped answering: the run stops, and everything measured before it
is kept). A failed level keeps whatever the client wrote: the counts and latencies of the requests that
finished, and how the server died when the executor can see its process (exit code, last log lines).
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from accelbench import __version__
from accelbench.core.changes import Spread
from accelbench.core.evidence import Envelope, LevelRecord, LevelStatus, RunSummary
from accelbench.core.levels import Level, levels
from accelbench.core.metrics import CLIENT_LIMITED_RATIO, arrival_rate, peak_concurrency
from accelbench.core.model_origin import model_origin
from accelbench.core.search_plan import (
    TAIL_LIMITS,
    Phase,
    ProbeResult,
    RepeatResult,
    SearchPlan,
    SearchResult,
)
from accelbench.core.spec import BenchmarkSpec
from accelbench.core.workloads import TRACE_FILE
from accelbench.errors import AccelbenchError, ConfigError
from accelbench.lake.ingest import request_table
from accelbench.lake.raw import ENVELOPE
from accelbench.lake.traces import fetch_trace
from accelbench.loadgen import server_metrics
from accelbench.loadgen.bench_client import BenchClient, BenchProcessError
from accelbench.loadgen.bench_command import bench_args, repeat_seed
from accelbench.loadgen.sampling import Sampler, memory_probe
from accelbench.search.load_search import LoadSearch
from accelbench.search.statistics import repeats_drift

log = logging.getLogger(__name__)
REQUIRED_RESULT_KEYS = (
    "completed",
    "failed",
    "duration",
    "total_input_tokens",
    "total_output_tokens",
    "ttfts",
    "itls",
    "output_lens",
    "input_lens",
)
# What a level keeps of a dead server's log (local mode's file, the pod's server container): enough to
# say why it died, bounded so that a row stays small.
SERVER_LOG_TAIL_LINES, SERVER_LOG_TAIL_BYTES = 20, 4096
SERVER_EXIT_WAIT_S = 5.0  # a server that stopped answering gets this long to be seen exiting
# (exit code, last log lines) once the server process has ended, None while it runs.
ServerExit = Callable[[], tuple[int, str] | None]


class LevelFailed(AccelbenchError):
    """A level did not produce a usable result (the bench process failed or wrote nonsense)."""


def clip_log_tail(text: str) -> str:
    """The end of a server log as a level keeps it: the last lines, at most SERVER_LOG_TAIL_BYTES."""
    tail = "".join(text.splitlines(keepends=True)[-SERVER_LOG_TAIL_LINES:])
    return tail.encode()[-SERVER_LOG_TAIL_BYTES:].decode(errors="ignore")


def first_error(result: dict[str, Any]) -> str:
    """The last line of the first failed request's error (vLLM keeps a traceback there), shortened."""
    text = next((e for e in result.get("errors") or () if e), "")
    lines = text.strip().splitlines()
    return lines[-1][:200] if lines else "no error text"


def server_info(base_url: str) -> dict[str, Any]:
    """What the running server says it is: version and served model (its root path or id)."""
    info: dict[str, Any] = {}
    for path in ("/version", "/v1/models"):
        try:
            with urllib.request.urlopen(base_url + path, timeout=5) as resp:
                info[path.strip("/").replace("/", "_")] = json.loads(resp.read())
        except (OSError, ValueError) as exc:
            info[path] = f"unavailable: {exc}"
    return info


def read_result(path: Path, spec: BenchmarkSpec, num_prompts: int) -> dict[str, Any]:
    """The bench JSON, checked for the fields the lake needs; a clear error otherwise."""
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        raise LevelFailed(f"`vllm bench serve` wrote no result file {path.name}") from None
    except ValueError as exc:
        raise LevelFailed(f"{path.name} is not JSON: {exc}") from None
    missing = [k for k in REQUIRED_RESULT_KEYS if k not in data]
    if missing:
        raise LevelFailed(f"{path.name} lacks {', '.join(missing)} (was --save-detailed passed?)")
    if len(data["ttfts"]) != num_prompts:
        raise LevelFailed(f"{path.name}: {len(data['ttfts'])} per-request records for {num_prompts} prompts")
    return data


def in_flight_kept(starts: Sequence[float], latencies: Sequence[float], concurrency: float) -> float | None:
    """How much of a concurrency level the client kept in flight: the time-weighted mean of requests in
    flight (each from its start stamp to its end) over the sending span, first start to last start,
    divided by the concurrency it could have (the level's, or fewer when it has fewer requests). After
    the last start the level drains, so that tail is left out. A client that cannot send the next request
    as soon as one ends (a saturated one-core load generator) leaves slots empty: below
    CLIENT_LIMITED_RATIO (the rate levels' tolerance, 10%) its latencies are the client's, not the
    server's. None when it cannot be told (no stamps, or every request started at once)."""
    start = np.asarray(starts, dtype=float)
    if len(start) < 2 or len(start) != len(latencies):
        return None
    first, last = float(start.min()), float(start.max())
    if last <= first:
        return None
    times = np.concatenate([start, start + np.asarray(latencies, dtype=float)])
    steps = np.concatenate([np.ones(len(start)), -np.ones(len(start))])
    order = np.lexsort((-steps, times))  # at one instant a start before an end: no gap between them
    times, in_flight = times[order], np.cumsum(steps[order])
    spans = np.diff(np.clip(times, first, last))  # how long each count held within the sending span
    mean = float(np.dot(in_flight[:-1], spans) / (last - first))
    return mean / min(concurrency, len(start))


@dataclass
class Driver:
    spec: BenchmarkSpec
    base_url: str
    out_dir: Path
    vllm: str = "vllm"
    server_pid: int | None = None
    metrics_interval_s: float = 1.0
    memory_interval_s: float = 0.25
    level_timeout_s: float = 3600.0
    client_cpus: set[int] | None = None  # pin `vllm bench serve` beside the API server, off the engine
    # Who asked for this run (the benchmark task's try): ingest accepts only evidence of its own attempt.
    attempt: str | None = None
    # A runner started early (local mode: while the server starts); the caller closes it. Else run() owns one.
    client: BenchClient | None = None
    # How the server died, where the executor can see its process (local mode); checked after each level.
    server_exit: ServerExit | None = None
    # The judged p99s' run-to-run spreads from the lake's earlier runs (`loadgen.earlier`), for a search.
    earlier_spreads: Mapping[str, Sequence[Spread]] | None = None
    # False: no recheck at the end of this run; a server's first workload is rechecked after the server's
    # other workloads instead (`recheck_after`, accelbench.loadgen.workload_group).
    recheck: bool = True
    records: list[LevelRecord] = field(default_factory=list)

    @property
    def spec_dir(self) -> Path:
        return self.out_dir / self.spec.spec_id

    def _bench(self, name: str, level: Level | None, num_prompts: int, seed: int, run_id: str) -> Path:
        args = bench_args(
            self.spec,
            self.base_url,
            num_prompts=num_prompts,
            seed=seed,
            result_dir=self.spec_dir,
            result_file=f"{name}.json",
            level=level,
            metadata={"accelbench_run_id": run_id, "accelbench_spec_id": self.spec.spec_id},
        )
        (self.spec_dir / f"{name}.json").unlink(missing_ok=True)
        assert self.client is not None, "run() provides the bench client"
        code = self.client.run(args, self.spec_dir / f"{name}.log", self.level_timeout_s)
        if code != 0:
            tail = (self.spec_dir / f"{name}.log").read_text(errors="replace").splitlines()[-15:]
            raise LevelFailed(f"`vllm bench serve` exited with {code}:\n" + "\n".join(tail))
        return self.spec_dir / f"{name}.json"

    def fetch_trace(self) -> None:
        """A trace workload's file, beside the results (so the raw evidence keeps what was replayed)."""
        workload = self.spec.load.workload
        if workload is None or workload.trace is None:
            return
        log.info("trace: %s", workload.trace.words())
        try:
            fetch_trace(workload.trace, self.spec_dir / TRACE_FILE)
        except ConfigError as exc:
            raise LevelFailed(f"the trace: {exc}") from None

    def warm_up(self) -> None:
        n = self.spec.load.warmups
        if n:
            log.info("warm-up: %d requests", n)
            self._bench("warmup", Level("concurrency", 1), n, self.spec.load.seed + 10_000, "warmup")

    def warm_up_level(self, level: Level, repeat: int, seed: int, run_id: str, recheck: bool = False) -> None:
        """Before a level's first repeat (and before its recheck, which follows other levels as the first
        repeat followed the warm-up), `LoadPlan.level_warmup_count` requests at the level's own load, not
        measured: run apart, before the level's first scrape, so that the server's counters and the
        client's result hold the measured requests only (`vllm bench serve --num-warmups` would run them
        inside that window)."""
        n = self.spec.load.level_warmup_count(int(level.value) if level.kind == "concurrency" else None)
        if n and (repeat == 0 or recheck):
            name = f"{level.key}-{'recheck-' if recheck else ''}warmup"  # the first one's evidence kept
            self._bench(name, level, n, seed + 10_000, f"{run_id}-warmup")

    def run_level(self, level: Level, repeat: int, recheck: bool = False) -> LevelRecord:
        seed = repeat_seed(self.spec, repeat)
        name = f"{level.key}-r{repeat}"
        run_id = f"{self.spec.campaign_id}/{self.spec.spec_id}/{name}"
        rec = LevelRecord(
            run_id, level.kind, level.value, repeat, seed, "running", started_at=datetime.now(UTC).isoformat()
        )
        prompts = self.spec.load.prompts_per_level
        started = time.monotonic()
        problem: str | None = None
        before: dict[str, float] | None = None
        gauges = Sampler(
            lambda: {
                k: v for k, v in server_metrics.scrape(self.base_url).items() if k in server_metrics.GAUGES
            },
            self.metrics_interval_s,
        )
        memory = Sampler(memory_probe(self.server_pid), self.memory_interval_s) if self.server_pid else None
        try:
            self.warm_up_level(level, repeat, seed, run_id, recheck)
            before = server_metrics.scrape(self.base_url)
            with contextlib.ExitStack() as stack:
                stack.enter_context(gauges)
                if memory:
                    stack.enter_context(memory)
                self._bench(name, level, prompts, seed, run_id)
        except (LevelFailed, BenchProcessError, OSError, ValueError, subprocess.TimeoutExpired) as exc:
            problem = f"{type(exc).__name__}: {exc}"
        rec.wall_s = time.monotonic() - started
        rec.server_gauge_peaks = dict(gauges.peaks)
        if memory:
            rec.memory_peaks, rec.memory_samples = dict(memory.peaks), memory.samples
        # The client's result before the server's counters: a server that died mid-level cannot be
        # scraped, and the result still holds the counts and latencies of the requests that finished.
        result: dict[str, Any] | None = None
        try:
            result = read_result(self.spec_dir / f"{name}.json", self.spec, prompts)
        except LevelFailed as exc:
            problem = problem or str(exc)
        if result is not None:
            rec.result_file = f"{name}.json"
            self._client_facts(rec, level, result)
        after, gone = self._server_after(before)
        if before is not None and after is not None:
            rec.server_counters = server_metrics.counter_delta(before, after)
            if result is not None:
                rec.tokens_agree = (
                    rec.server_counters["generation_tokens"] == rec.client_output_tokens
                    and rec.server_counters["prompt_tokens"] == rec.client_input_tokens
                )
        exited = self._server_exited(wait_s=SERVER_EXIT_WAIT_S if gone else 0.0)
        if exited is not None:
            rec.server_exit_code, rec.server_log_tail = exited
            last = next((ln.strip() for ln in reversed(exited[1].splitlines()) if ln.strip()), "")
            gone = f"exit code {exited[0]}" + (f"; its log ends: {last[:300]}" if last else "")
        rec.status, rec.error = self._verdict(result, prompts, problem, gone, died=exited is not None)
        return rec

    def _client_facts(self, rec: LevelRecord, level: Level, result: dict[str, Any]) -> None:
        """What the bench result says about the load the client applied (also for a failed level)."""
        rec.client_completed, rec.client_failed = int(result["completed"]), int(result["failed"])
        rec.client_input_tokens = int(result["total_input_tokens"])
        rec.client_output_tokens = int(result["total_output_tokens"])
        rec.max_concurrent_requests = result.get("max_concurrent_requests")
        if "start_times" in result and "latencies" in result:
            rec.peak_concurrency = peak_concurrency(result["start_times"], result["latencies"])
        rec.achieved_rate = arrival_rate(result)
        trace = self.spec.load.workload.trace if self.spec.load.workload else None
        if level.kind == "scale" and trace is not None:  # the trace's mean rate at this pace
            rec.requested_rate = trace.mean_rate * level.value
            rec.client_limited = bool(
                rec.achieved_rate is not None
                and rec.achieved_rate < CLIENT_LIMITED_RATIO * rec.requested_rate
            )
        elif level.kind == "rate":
            rec.requested_rate = level.value
            rec.client_limited = bool(
                rec.achieved_rate is not None and rec.achieved_rate < CLIENT_LIMITED_RATIO * level.value
            )
        else:
            kept = in_flight_kept(result.get("start_times") or [], result.get("latencies") or [], level.value)
            rec.client_limited = None if kept is None else kept < CLIENT_LIMITED_RATIO

    def _server_after(self, before: dict[str, float] | None) -> tuple[dict[str, float] | None, str | None]:
        """The server's counters after a level, or why it cannot be trusted any more (gone, restarted)."""
        try:
            after = server_metrics.scrape(self.base_url)
        except (OSError, ValueError) as exc:
            return None, f"it stopped answering ({type(exc).__name__}: {exc})"
        if before is not None and any(after[k] < before[k] for k in server_metrics.COUNTERS):
            return None, "its counters went back (it restarted)"
        return after, None

    def _server_exited(self, wait_s: float) -> tuple[int, str] | None:
        """(exit code, log tail) if the executor sees the server process ended; waits up to `wait_s`."""
        if self.server_exit is None:
            return None
        deadline = time.monotonic() + wait_s
        while (exited := self.server_exit()) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        return exited

    @staticmethod
    def _verdict(
        result: dict[str, Any] | None, prompts: int, problem: str | None, gone: str | None, died: bool
    ) -> tuple[LevelStatus, str | None]:
        """(status, error) of a level: see the module's docstring for what each status means."""
        lost = "server died" if died else "server lost"
        if result is None:
            return "failed", "; ".join(filter(None, [problem, f"{lost}: {gone}" if gone else None]))
        counts = f"{result['failed']} of {prompts} requests failed"
        if gone:
            return "failed", f"{lost} during the level: {counts}; {gone}"
        if problem:
            return "failed", f"{problem} ({counts})"
        if not result["completed"]:
            return "failed", f"{counts}, none completed (first error: {first_error(result)})"
        if result["failed"]:
            return "errors", f"{counts} (first error: {first_error(result)})"
        return "ok", None

    def _level(
        self,
        level: Level,
        step: int | None = None,
        phase: Phase | None = None,
        first: int = 0,
        count: int | None = None,
        recheck: bool = False,
    ) -> tuple[list[LevelRecord], str | None]:
        """Every repeat of one level (a search's probe with its step and phase; a probe measured again, or
        a recheck, numbers its repeats on from `first`; `count` of them, else the plan's repeats):
        (records, failure), where failure is the failed repeat's "run_id: error" that stops the run."""
        done: list[LevelRecord] = []
        for repeat in range(first, first + (count or self.spec.load.repeats)):
            rec = self.run_level(level, repeat, recheck)
            rec.search_step, rec.search_phase, rec.recheck = step, phase, recheck
            self.records.append(rec)
            log.log(
                logging.INFO if rec.status == "ok" else logging.WARNING,
                "%s: %s, %s completed, %s failed%s",
                rec.run_id,
                rec.status,
                rec.client_completed,
                rec.client_failed,
                f" ({rec.error})" if rec.error else "",
            )
            if rec.server_log_tail:
                log.warning("%s: the server's log ends:\n%s", rec.run_id, rec.server_log_tail)
            if rec.status == "failed":
                return done, f"{rec.run_id}: {rec.error}"
            done.append(rec)
        return done, None

    def _search(self, plan: SearchPlan) -> tuple[str | None, SearchResult | None]:
        """Probe the loads the search asks for until it is done: (failure, result); a failed level stops
        it with the outcome "probe_failed" and the bracket found before it."""
        search = LoadSearch(plan, self.earlier_spreads)
        while (load := search.next_load()) is not None:
            level, step = Level(plan.level_kind, load), search.step
            # A load measured again (a probe made longer, the recheck) numbers its repeats on: run ids differ.
            first = sum(1 for r in self.records if (r.level_kind, r.level_value) == (level.kind, level.value))
            done, failure = self._level(level, step, search.phase, first)
            if failure:
                # The bracket found so far is kept: the result says where and why the search stopped.
                server_s = sum(r.duration_s for r in map(self.repeat_result, done))
                search.fail(failure, server_s)
                result = search.result()
                log.warning("search: %s", result.summary())
                return f"search step {step} at {load:g} {plan.unit}: {failure}", result
            probe = search.record(ProbeResult(load=load, repeats=tuple(map(self.repeat_result, done))))
            verdict = "measuring again" if search.extending else probe.verdict
            log.info("search step %d (%s) at %g %s: %s", step, probe.phase, load, plan.unit, verdict)
        result = search.result()
        log.info("search: %s", result.summary())
        return None, result

    def _levels(self) -> tuple[str | None, str | None]:
        """Every fixed level x repeat in order, then the first level once more (`_recheck`): (failure,
        drift)."""
        planned = levels(self.spec)
        for level in planned:
            if failure := self._level(level, first=self.spec.first_repeat)[1]:
                return failure, None
        return self._recheck(planned) if self.recheck else (None, None)

    def recheck_after(self, envelope: Envelope, others: str) -> Envelope:
        """A server's one drift check (issue 49): this workload's first level measured once more after the
        server's other workloads (`others`, for the log) and compared with its first repeat, as a run's own
        recheck is; the envelope rewritten with the recheck's record, and its failure or the drift found."""
        log.info("recheck of %s's first level after %s on the same server", self.spec.spec_id, others)
        owned = self.client is None
        failure: str | None = None
        drift: str | None = None
        try:
            if owned:
                self.client = BenchClient(self.vllm, self.client_cpus).start()
            failure, drift = self._recheck(levels(self.spec), alone=False)
        except (LevelFailed, BenchProcessError, OSError, subprocess.TimeoutExpired) as exc:
            failure = f"recheck: {type(exc).__name__}: {exc}"
        finally:
            if owned and self.client is not None:
                self.client.close()
                self.client = None
        checked = envelope.model_copy(
            update={
                "levels": list(self.records),
                "failure": envelope.failure or failure,
                "drift": envelope.drift or drift,
                "ended_at": datetime.now(UTC).isoformat(),
            }
        )
        self.write(checked)
        return checked

    def _recheck(self, planned: list[Level], alone: bool = True) -> tuple[str | None, str | None]:
        """With more than one level, the first one measured once more at the end (its repeats numbered
        on), and compared with its first repeat (`accelbench.search.statistics.repeats_drift` on every latency
        limit's metric): (failure, "the host drifted: ..." or None). The figures of a run whose host
        drifted are not the server's; the report shows them undecided. Not `alone` (other workloads ran on
        the server since): also a single level is measured again."""
        if len(planned) < 2 and alone:
            return None, None
        first = planned[0]
        at = self.spec.first_repeat
        done, failure = self._level(first, first=at + self.spec.load.repeats, count=1, recheck=True)
        if failure:
            return failure, None
        start = next(
            r
            for r in self.records
            if (r.level_kind, r.level_value, r.repeat) == (first.kind, first.value, at)
        )
        found = repeats_drift(
            TAIL_LIMITS, [self.repeat_result(start)], [self.repeat_result(done[0])], first.words
        )
        log.log(
            logging.WARNING if found else logging.INFO,
            "recheck of %s at the end: %s",
            first.words,
            found or "no drift beyond the intervals (2x apart) of its p50 and p99 latencies",
        )
        return None, found

    def repeat_result(self, rec: LevelRecord) -> RepeatResult:
        """A measured level as the search judges it: its counts, its p99s, whether the client kept up,
        how long the server was under its load and its completed requests' latencies (in ms, as the
        lake's `requests` rows compute them: `lake.ingest.request_table`)."""
        result = json.loads((self.spec_dir / rec.result_file).read_text()) if rec.result_file else {}
        samples: dict[str, tuple[float, ...]] = {}
        if all(key in result for key in ("ttfts", "latencies", "itls", "input_lens", "output_lens")):
            rows = request_table(result, rec.run_id, self.spec.campaign_id, self.spec.spec_id)
            ok = rows.filter(rows["success"])
            for metric in ("ttft", "tpot", "e2el"):
                seconds = ok[f"{metric}_s"].drop_null().to_numpy()
                samples[f"{metric}_ms"] = tuple((seconds * 1000.0).tolist())
        return RepeatResult(
            completed=rec.client_completed or 0,
            failed=rec.client_failed or 0,
            p99_ttft_ms=result.get("p99_ttft_ms"),
            p99_tpot_ms=result.get("p99_tpot_ms"),
            p99_e2el_ms=result.get("p99_e2el_ms"),
            client_limited=rec.client_limited,
            duration_s=float(result.get("duration") or 0.0),
            **samples,
        )

    def run(self) -> Envelope:
        """Every level x repeat in order (or the search's probes); stops at the first "failed" level.
        Returns the envelope (also written to the spec's folder)."""
        if self.spec_dir.exists():  # a retry: no evidence from an earlier attempt may be mixed in
            shutil.rmtree(self.spec_dir)
        self.spec_dir.mkdir(parents=True)
        started = datetime.now(UTC).isoformat()
        info = server_info(self.base_url)
        if origin := model_origin(self.spec.server.model):  # read here, beside the server's model folder
            info["model_origin"] = origin
        failure: str | None = None
        search: SearchResult | None = None
        drift: str | None = None
        owned = self.client is None
        try:
            if owned:  # inside the try: a client that cannot start is a warm-up failure in the envelope
                self.client = BenchClient(self.vllm, self.client_cpus).start()
            self.fetch_trace()
            self.warm_up()
            if self.spec.load.search is None:
                failure, drift = self._levels()
            else:
                failure, search = self._search(self.spec.load.search)
                drift = search.stopped_why if search is not None and search.outcome == "drifted" else None
        except (LevelFailed, BenchProcessError, OSError, subprocess.TimeoutExpired) as exc:
            failure = f"warm-up: {type(exc).__name__}: {exc}"
            if (exited := self._server_exited(wait_s=0.0)) is not None:
                failure += f"; the server exited with code {exited[0]}, its log ends:\n{exited[1]}"
        except Exception as exc:  # anything else: keep the levels measured so far, then say what broke
            failure = f"driver error: {type(exc).__name__}: {exc}"
            log.exception("driver error")
        finally:
            if owned and self.client is not None:
                self.client.close()
                self.client = None
        envelope = Envelope(
            spec=self.spec,
            spec_id=self.spec.spec_id,
            attempt=self.attempt,
            server=info,
            loadgen_version=__version__,
            started_at=started,
            ended_at=datetime.now(UTC).isoformat(),
            levels=self.records,
            failure=failure,
            search=search,
            drift=drift,
        )
        self.write(envelope)
        return envelope

    def write(self, envelope: Envelope) -> None:
        """The envelope into the spec's folder, whole or not at all."""
        tmp = self.spec_dir / (ENVELOPE + ".tmp")
        tmp.write_text(envelope.model_dump_json(indent=1))
        tmp.replace(self.spec_dir / ENVELOPE)


def summary(envelope: Envelope) -> RunSummary:
    """The compact result for stdout and /airflow/xcom/return.json."""
    return RunSummary.of(envelope)
