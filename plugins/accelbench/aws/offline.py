"""The dated on-demand price snapshots shipped in the package, for runs with no AWS access.

Each snapshot is one file `prices-<region>[-<label>]-<YYYY-MM-DD>.json` under `data/`: its name
carries the date (the one place it is written) and the region (which its body must repeat), its
body the currency, the unit, the source and the prices. Every price is labelled with its own
file's source and date.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from importlib.resources.abc import Traversable

SNAPSHOT_FILE = "prices-us-east-1-2026-07-20.json"  # the Graviton snapshot (r/m/c 7g/8g/9g)
_NAME = re.compile(
    r"^prices-(?P<region>[a-z]{2}(?:-[a-z]+)+-\d+)(?:-(?P<label>[a-z]+))?-(?P<date>\d{4}-\d{2}-\d{2})\.json$"
)


@dataclass(frozen=True)
class Snapshot:
    file: str
    region: str
    effective_at: datetime
    source: str
    prices: dict[str, float]

    @property
    def label(self) -> str:
        return f"offline snapshot {self.file} dated {self.effective_at:%Y-%m-%d}: {self.source}"


def _data_dir() -> Traversable:
    return resources.files("accelbench.aws") / "data"


def snapshot_files() -> list[str]:
    """The shipped snapshot file names, sorted; a stray JSON file with another name is not one."""
    return sorted(p.name for p in _data_dir().iterdir() if _NAME.match(p.name))


def load_snapshot(file: str = SNAPSHOT_FILE) -> Snapshot:
    """One snapshot, checked: USD per Hrs, the region its name says, only positive prices."""
    m = _NAME.match(file)
    if not m:
        raise ValueError(f"{file}: not a snapshot name (prices-<region>[-<label>]-<YYYY-MM-DD>.json)")
    raw = json.loads((_data_dir() / file).read_text())
    if raw.get("currency") != "USD" or raw.get("unit") != "Hrs":
        raise ValueError(f"{file}: expected USD per Hrs, got {raw.get('currency')}/{raw.get('unit')}")
    if raw.get("region") != m["region"]:
        raise ValueError(f"{file}: holds prices for {raw.get('region')!r}, its name says {m['region']!r}")
    if not str(raw.get("source") or "").strip():
        raise ValueError(f"{file}: no source; an unlabelled price cannot be trusted")
    prices = {k: float(v) for k, v in raw["prices"].items()}
    bad = sorted(k for k, v in prices.items() if not v > 0)
    if bad:
        raise ValueError(f"{file}: non-positive prices for {', '.join(bad)}")
    effective = datetime.strptime(m["date"], "%Y-%m-%d").replace(tzinfo=UTC)
    return Snapshot(file, m["region"], effective, raw["source"], prices)


def load_snapshots() -> tuple[Snapshot, ...]:
    """Every shipped snapshot; a type priced by two snapshots of one region is refused, not guessed."""
    snaps = tuple(load_snapshot(f) for f in snapshot_files())
    index_snapshots(snaps)
    return snaps


def index_snapshots(snaps: tuple[Snapshot, ...]) -> dict[tuple[str, str], Snapshot]:
    """(region, instance type) -> the one snapshot that prices it."""
    index: dict[tuple[str, str], Snapshot] = {}
    for snap in snaps:
        for name in snap.prices:
            other = index.setdefault((snap.region, name), snap)
            if other is not snap:
                raise ValueError(f"{name} in {snap.region} is priced by both {other.file} and {snap.file}")
    return index
