"""The load levels a spec asks for: what the load generator drives and what the lake checks as measured."""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.core.evidence import LevelKind
from accelbench.core.spec import BenchmarkSpec


@dataclass(frozen=True)
class Level:
    """One load level: a concurrency cap, an arrival rate (requests per second), or a timed trace's time-scale
    (its arrivals at `value` times their recorded pace)."""

    kind: LevelKind
    value: float

    @property
    def key(self) -> str:
        number = f"{self.value:g}".replace(".", "p")
        return {"concurrency": "c", "rate": "r", "scale": "x"}[self.kind] + number

    @property
    def words(self) -> str:
        """ "4 concurrent", "2.5 req/s", "2x the trace": the level as the logs and the drift text say it."""
        if self.kind == "scale":
            return f"{self.value:g}x the trace"
        return f"{self.value:g} concurrent" if self.kind == "concurrency" else f"{self.value:g} req/s"


def levels(spec: BenchmarkSpec) -> list[Level]:
    load = spec.load
    return [
        *(Level("concurrency", c) for c in load.concurrency),
        *(Level("rate", r) for r in load.request_rates),
        *(Level("scale", s) for s in load.time_scales),
    ]
