"""The load levels a spec asks for: what the load generator drives and what the lake checks as measured."""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.core.evidence import LevelKind
from accelbench.core.spec import BenchmarkSpec


@dataclass(frozen=True)
class Level:
    """One load level: a concurrency cap, or an arrival rate (requests per second)."""

    kind: LevelKind
    value: float

    @property
    def key(self) -> str:
        number = f"{self.value:g}".replace(".", "p")
        return f"c{number}" if self.kind == "concurrency" else f"r{number}"

    @property
    def words(self) -> str:
        """ "4 concurrent", "2.5 req/s": the level as the logs and the drift text say it."""
        return f"{self.value:g} concurrent" if self.kind == "concurrency" else f"{self.value:g} req/s"


def levels(spec: BenchmarkSpec) -> list[Level]:
    return [Level("concurrency", c) for c in spec.load.concurrency] + [
        Level("rate", r) for r in spec.load.request_rates
    ]
