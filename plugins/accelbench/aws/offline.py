"""The dated on-demand price snapshot shipped in the package, for runs with no AWS access."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources

SNAPSHOT_FILE = "prices-us-east-1-2026-07-20.json"
SNAPSHOT_DATE = datetime(2026, 7, 20, tzinfo=UTC)


@dataclass(frozen=True)
class Snapshot:
    region: str
    effective_at: datetime
    source: str
    prices: dict[str, float]

    @property
    def label(self) -> str:
        return f"offline snapshot {SNAPSHOT_FILE} dated {self.effective_at:%Y-%m-%d}: {self.source}"


def load_snapshot() -> Snapshot:
    raw = json.loads((resources.files("accelbench.aws") / "data" / SNAPSHOT_FILE).read_text())
    if raw.get("currency") != "USD" or raw.get("unit") != "Hrs":
        raise ValueError(
            f"{SNAPSHOT_FILE}: expected USD per Hrs, got {raw.get('currency')}/{raw.get('unit')}"
        )
    return Snapshot(
        raw["region"], SNAPSHOT_DATE, raw["source"], {k: float(v) for k, v in raw["prices"].items()}
    )
