"""The evidence contract: what the load generator writes (the envelope and its level records) and what an
executor reports (the run summary), as pydantic models shared by every stage that reads or writes them.

The envelope is `envelope.json` in the lake's raw/ area (the driver writes it, ingest reads it); the run
summary is the load generator's stdout line and the benchmark pod's /airflow/xcom/return.json, and the
benchmark task's XCom value (serialised with `model_dump(mode="json")` at the Airflow boundary). The
contract is exact: a missing required key or an unknown one is a validation error that names it, never a
field silently dropped or read as null.

A document also reads as its JSON (`envelope["levels"][0]["status"]`, `summary["failure"]`): `doc[key]`
is `doc.model_dump(mode="json")[key]`, so code holding the file or the XCom value and code holding the
model read it alike.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic.dataclasses import dataclass

from accelbench.core.search_plan import Phase, SearchResult
from accelbench.core.spec import BenchmarkSpec

LevelStatus = Literal["running", "ok", "errors", "failed"]  # "running" only until the level's verdict
# scale: a timed trace replayed at this multiple of its recorded pace (1 = as recorded, 2 = twice as fast)
LevelKind = Literal["concurrency", "rate", "scale"]


class _Document(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    def __getitem__(self, key: str) -> Any:
        """The JSON document's value for `key` (a copy: change the model through its attributes)."""
        if key not in type(self).model_fields:
            raise KeyError(key)
        return self.model_dump(mode="json", include={key})[key]


# A dataclass (pydantic's: validated on construction and on assignment) because the driver fills a record
# in as the level runs, and positional construction and dataclasses.asdict stay available.
@dataclass(config=ConfigDict(extra="forbid", validate_assignment=True))
class LevelRecord:
    """One level x repeat as the driver measured it: the envelope's `levels` entries."""

    run_id: str
    level_kind: LevelKind
    level_value: float
    repeat: int
    seed: int
    status: LevelStatus
    result_file: str | None = None
    error: str | None = None
    started_at: str = ""
    wall_s: float = 0.0
    server_counters: dict[str, float] = field(default_factory=dict)
    server_gauge_peaks: dict[str, float] = field(default_factory=dict)
    memory_peaks: dict[str, float] = field(default_factory=dict)
    memory_samples: int = 0
    client_input_tokens: int | None = None
    client_output_tokens: int | None = None
    tokens_agree: bool | None = None
    requested_rate: float | None = None
    achieved_rate: float | None = None
    max_concurrent_requests: int | None = None  # vLLM's: requests active within a 1-second bucket
    peak_concurrency: int | None = None  # requests in flight at the same instant
    client_limited: bool | None = None
    client_completed: int | None = None  # the bench result's counts, also when the level failed
    client_failed: int | None = None
    server_exit_code: int | None = None  # set when the server died during the level
    server_log_tail: str | None = None
    # A load search's probe (LoadPlan.search): its step (0 first) and phase; None for a fixed level.
    search_step: int | None = None
    search_phase: Phase | None = None
    # A campaign of fixed levels measures its first level once more at the end (`Driver._recheck`) to see
    # whether the host drifted: not one of the point's repeats.
    recheck: bool = False


class Envelope(_Document):
    """`envelope.json`: the spec, who asked (attempt), what the server said it is, and every level."""

    spec: BenchmarkSpec
    spec_id: str  # as recorded: a spec of older evidence may have been migrated (see ServerSpec)
    attempt: str | None = None  # the benchmark task's try; ingest accepts only its own attempt's evidence
    server: dict[str, Any] = {}  # the server's /version and /v1/models answers, as it gave them
    loadgen_version: str
    started_at: str | None = None
    ended_at: str | None = None
    levels: list[LevelRecord] = []
    failure: str | None = None  # the level (or warm-up) that stopped the run, and why
    # A search's outcome (LoadPlan.search): its capacity, bracket and probes; None for fixed levels. A search
    # that a failed level cut short has the outcome "probe_failed" with the bracket found so far (its probes
    # are in `levels`, `failure` says why).
    search: SearchResult | None = None
    # What the recheck found (`accelbench.core.drift`): "the host drifted: ..." with both figures, from the
    # fixed levels' recheck or the search's; None when they agreed or there was none.
    drift: str | None = None


class LevelSummary(_Document):
    """The part of a level record the run summary carries."""

    run_id: str
    status: LevelStatus
    client_completed: int | None = None
    client_failed: int | None = None
    client_output_tokens: int | None = None
    tokens_agree: bool | None = None
    achieved_rate: float | None = None
    client_limited: bool | None = None
    server_exit_code: int | None = None


class RunSummary(_Document):
    """What an executor reports of one spec: the benchmark task's result, whatever the execution mode."""

    spec_id: str
    attempt: str | None = None
    failure: str | None = None  # set when a level failed: the levels before it are kept
    levels: list[LevelSummary] = []
    raw: str | None = None  # the raw evidence's lake URI, once copied there
    lake_error: str | None = None  # why the copy to the lake failed (the evidence stays where it was)
    server_startup_s: float | None = None  # local mode: how long the server took to become healthy
    drift: str | None = None  # the host drifted under the run (Envelope.drift): its figures are undecided

    @classmethod
    def of(cls, envelope: Envelope) -> RunSummary:
        levels = [
            LevelSummary(**{k: getattr(r, k) for k in LevelSummary.model_fields}) for r in envelope.levels
        ]
        return cls(
            spec_id=envelope.spec_id,
            attempt=envelope.attempt,
            failure=envelope.failure,
            levels=levels,
            drift=envelope.drift,
        )


class GroupSummary(_Document):
    """What an executor reports of one server's workloads (`core.server_group.ServerGroup`): each spec's run
    summary, in the group's order; a spec the server never reached has none (a server that died before it)."""

    runs: list[RunSummary] = []
    # Why the group stopped before its last spec (the server died, or a level failed before it), if it did.
    stopped: str | None = None

    def of(self, spec_id: str) -> RunSummary | None:
        return next((r for r in self.runs if r.spec_id == spec_id), None)

    @property
    def failures(self) -> list[str]:
        """Each failed spec's failure, and why the group stopped, as the task log says them."""
        said = [f"{r.spec_id}: {r.failure}" for r in self.runs if r.failure]
        return [*said, self.stopped] if self.stopped else said

    @property
    def lake_errors(self) -> list[str]:
        return [f"{r.spec_id}: {r.lake_error}" for r in self.runs if r.lake_error]
