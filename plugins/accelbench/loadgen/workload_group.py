"""A server's workloads run in turn (issue 49): what the local executor and the benchmark pod's load
generator both do once their server is up, so that the two modes run a group one way.

Each workload gets its own driver (its warm-up, levels, repeats or search) and its evidence is landed as it
ends, so a server that dies later keeps what it finished. Before each workload after the first the server's
prefix cache is emptied (`loadgen.prefix_cache`). A server of several workloads is checked for drift once:
its first fixed-level workload's first level measured again after the others, against its first repeat
(`Driver.recheck_after`); a drift found there is every workload's (the host drifted under the server's run),
and their envelopes say so. A server alone with one workload rechecks as a run always did (two levels or
more).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from accelbench.core.evidence import Envelope, GroupSummary, RunSummary
from accelbench.core.spec import BenchmarkSpec
from accelbench.loadgen.driver import Driver
from accelbench.loadgen.prefix_cache import reset_prefix_cache

log = logging.getLogger(__name__)

# (spec, whether it rechecks itself) -> its driver
DriverFor = Callable[[BenchmarkSpec, bool], Driver]
# (spec, its driver, its envelope, whether it is the server's first workload) -> the landed summary
Land = Callable[[BenchmarkSpec, Driver, Envelope, bool], RunSummary]


def run_workloads(
    specs: Sequence[BenchmarkSpec],
    url: str,
    driver_for: DriverFor,
    land: Land,
    after_levels: Callable[[BenchmarkSpec, Driver, Envelope], None] | None = None,
    server_exit: Callable[[], tuple[int, str] | None] | None = None,
) -> GroupSummary:
    """Each of `specs` in turn against the server at `url` (see the module's docstring): `after_levels`
    (the quality step) after a workload's levels, `land` its evidence; `server_exit` says whether the
    server has died (local mode), so the workloads it cannot serve are not started."""
    alone = len(specs) == 1
    done: list[tuple[BenchmarkSpec, Driver, Envelope]] = []
    runs: dict[str, RunSummary] = {}
    stopped: str | None = None
    for i, spec in enumerate(specs):
        if i > 0 and server_exit is not None and (exited := server_exit()) is not None:
            stopped = (
                f"the server exited with code {exited[0]} before {spec.spec_id} ({spec.load.runs.name}) "
                "and the workloads after it"
            )
            log.error("%s", stopped)
            break
        if i > 0 and (why := reset_prefix_cache(url)) is not None:
            log.warning("%s: the prefix cache was not emptied before it: %s", spec.spec_id, why)
        log.info(
            "workload %d of %d on this server: %s (%s)", i + 1, len(specs), spec.load.runs.name, spec.spec_id
        )
        driver = driver_for(spec, alone)
        envelope = driver.run()
        if after_levels is not None:
            after_levels(spec, driver, envelope)
        runs[spec.spec_id] = land(spec, driver, envelope, i == 0)
        done.append((spec, driver, envelope))
    if not alone and stopped is None:
        _recheck_once(done, runs, land, server_exit)
    return GroupSummary(runs=[runs[s.spec_id] for s in specs if s.spec_id in runs], stopped=stopped)


def _recheck_once(
    done: list[tuple[BenchmarkSpec, Driver, Envelope]],
    runs: dict[str, RunSummary],
    land: Land,
    server_exit: Callable[[], tuple[int, str] | None] | None,
) -> None:
    """The server's drift check, after its last workload (see the module's docstring)."""
    fixed = [(i, one) for i, one in enumerate(done) if one[0].load.search is None and one[2].failure is None]
    if not fixed or (server_exit is not None and server_exit() is not None):
        return
    i, (spec, driver, envelope) = fixed[0]
    others = ", ".join(s.load.runs.name for s, _, _ in done if s.spec_id != spec.spec_id)
    checked = driver.recheck_after(envelope, others)
    runs[spec.spec_id] = land(spec, driver, checked, i == 0)
    if checked.drift is None:
        return
    for j, (other, other_driver, other_envelope) in enumerate(done):
        if other.spec_id != spec.spec_id and other_envelope.drift is None:
            drifted = other_envelope.model_copy(update={"drift": checked.drift})
            other_driver.write(drifted)
            runs[other.spec_id] = land(other, other_driver, drifted, j == 0)
