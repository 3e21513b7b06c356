"""The end of every executor's run of a spec, shared: execution.json beside the envelope, the raw evidence
copied to the lake's raw/ area, the run summary.

The benchmark pod's load generator (loadgen.cli) and the local executor (local.executor) both end here,
so a lake that cannot take the evidence is handled one way: nothing is lost (the evidence stays in the
folder the driver wrote, the summary keeps every level), the summary's `lake_error` says why, and the
caller fails on it without retry (a retry would measure again and replace the evidence kept).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from accelbench.core.evidence import Envelope, RunSummary
from accelbench.lake.raw import RawLocation, upload_raw, write_execution
from accelbench.lake.store import Lake
from accelbench.loadgen.driver import summary

log = logging.getLogger(__name__)


def finish(envelope: Envelope, spec_dir: Path, lake: Lake | None, date: str, **execution: Any) -> RunSummary:
    """Record how and where the spec ran (`execution`), copy the evidence to `lake` (None: keep it where
    it is), and return the run summary: `raw` where the evidence went, or `lake_error` why it did not."""
    result = summary(envelope)
    write_execution(spec_dir, **execution)
    if lake is None:
        return result
    spec = envelope.spec
    where = RawLocation(spec.server.accelerator_type, date, spec.campaign_id, envelope.spec_id)
    try:
        paths = upload_raw(lake, spec_dir, where)
    except Exception as exc:  # s3fs and botocore raise more than OSError (e.g. NoCredentialsError)
        result.lake_error = (
            f"could not copy the raw evidence to {lake.uri}: {type(exc).__name__}: {exc} "
            f"(it is kept in {spec_dir})"
        )
        log.error("%s", result.lake_error)
        return result
    result.raw = lake.uri_of(lake.path(*where.parts))
    log.info("raw evidence: %d files in %s", len(paths), result.raw)
    return result
