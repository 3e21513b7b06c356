"""What the lake already knows of this host before a search runs: its p99s' run-to-run spreads
(`accelbench.lake.spreads.search_spreads`), pooled into the spread that widens the search's intervals
(issue 48). A lake that cannot be read costs the search only that knowledge, never the campaign."""

from __future__ import annotations

import logging

from accelbench.core.changes import Spread
from accelbench.core.spec import BenchmarkSpec
from accelbench.lake.spreads import search_spreads
from accelbench.lake.store import Lake

log = logging.getLogger(__name__)


def earlier_search_spreads(
    lake: Lake | None, spec: BenchmarkSpec, execution_mode: str
) -> dict[str, list[Spread]]:
    """The earlier spreads of `spec`'s search (empty without a search, a lake, or runs measured twice), in
    the task's log either way."""
    if spec.load.search is None or lake is None:
        return {}
    try:
        found = search_spreads(lake, spec, execution_mode)
    except Exception as exc:
        log.warning("search: the lake's earlier runs could not be read (%s): the prior spread alone", exc)
        return {}
    if found:
        said = "; ".join(s.text() for spreads in found.values() for s in spreads)
        log.info("search: the host's run-to-run spread from the lake's earlier runs of this point: %s", said)
    else:
        log.info("search: no earlier runs of this point measured twice in the lake: the prior spread alone")
    return found
