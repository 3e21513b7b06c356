"""`accelbench-loadgen`: the benchmark pod's main container (and a stand-alone driver).

Drives the server through every level of each workload's spec in turn (its prefix cache emptied between
them; after a spec's levels, for a spec with a quality plan, its quality against the same server:
accelbench.loadgen.quality_step), writes each one's raw evidence to --out, copies it to the lake's raw/ area
when a lake is configured (the pod's case), and prints a compact summary of every workload, also to
/airflow/xcom/return.json when that directory exists. The spec is a ServerGroup's JSON (the pod's) or one
BenchmarkSpec's.

Exit codes: 0 every level of every workload measured (status ok, or errors: some requests failed, the server
stayed up); 1 a level failed (the levels and workloads before it are kept); 2 bad usage;
3 the evidence could not be copied to the lake (the summary says why); 4 an unexpected error.
"""

from __future__ import annotations

import argparse
import json
import logging
import socket
import sys
from datetime import UTC, datetime
from pathlib import Path

from accelbench.config import LAKE_SETTING, Settings
from accelbench.core.evidence import Envelope, RunSummary
from accelbench.core.server_group import ServerGroup
from accelbench.core.spec import BenchmarkSpec
from accelbench.lake.store import Lake
from accelbench.loadgen.contract import LAKE_DATE_ENV, LOADGEN_SETTINGS, SPEC_ENV
from accelbench.loadgen.driver import Driver
from accelbench.loadgen.earlier import earlier_search_spreads
from accelbench.loadgen.finish import finish
from accelbench.loadgen.host import host_facts
from accelbench.loadgen.quality_step import LM_EVAL_PYTHON_ENV, measure_quality
from accelbench.loadgen.sampling import find_server_pid
from accelbench.loadgen.workload_group import run_workloads

XCOM_RETURN = Path("/airflow/xcom/return.json")
EXIT_OK, EXIT_LEVEL_FAILED, EXIT_LAKE, EXIT_ERROR = 0, 1, 3, 4
log = logging.getLogger("accelbench.loadgen")


def main(argv: list[str] | None = None) -> int:
    env = Settings.from_env(*LOADGEN_SETTINGS)
    parser = argparse.ArgumentParser(prog="accelbench-loadgen", description=__doc__)
    parser.add_argument(
        "--spec", type=Path, help=f"ServerGroup or BenchmarkSpec JSON file (default: ${SPEC_ENV})"
    )
    parser.add_argument("--server-url", default=env.loadgen.server_url)
    parser.add_argument("--out", type=Path, default=env.loadgen.raw_dir)
    parser.add_argument("--vllm", default=env.loadgen.vllm_bin)
    parser.add_argument("--server-pid", type=int, help="server process to sample (default: found by name)")
    parser.add_argument(
        "--lm-eval-python",
        type=Path,
        default=env.loadgen.lm_eval_python,
        help=f"the interpreter with lm-eval, for a spec with a quality plan (default: ${LM_EVAL_PYTHON_ENV})",
    )
    parser.add_argument("--lake", default=env.lake.lake_uri, help=f"lake URI (default: ${LAKE_SETTING})")
    parser.add_argument(
        "--date",
        default=env.loadgen.lake_date,
        help=f"raw partition date (default: ${LAKE_DATE_ENV}, today)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    raw = args.spec.read_text() if args.spec else env.loadgen.benchmark_spec
    if not raw:
        parser.error(f"no spec: pass --spec or set {SPEC_ENV}")
    try:
        return run(args, parse_group(raw))
    except Exception:  # a crash is not a failed level: say so with its own exit code
        log.exception("load generator error")
        return EXIT_ERROR


def parse_group(raw: str) -> ServerGroup:
    """The server's workloads (a ServerGroup, as the benchmark pod gets them), or one BenchmarkSpec (a
    stand-alone run of one workload): a group of one."""
    doc = json.loads(raw)
    if isinstance(doc, dict) and "specs" in doc:
        return ServerGroup.model_validate(doc)
    return ServerGroup(specs=(BenchmarkSpec.model_validate(doc),))


def run(args: argparse.Namespace, group: ServerGroup) -> int:
    """Each workload of the group in turn against the one server (accelbench.loadgen.workload_group), each
    one's evidence finished as it ends; the group's summary printed (and the pod's XCom)."""
    env = Settings.from_env(*LOADGEN_SETTINGS)
    lake = Lake(args.lake) if args.lake else None
    # Unset outside a pod: a stand-alone run says so rather than claim the default mode.
    mode = env.library.execution_mode if "execution_mode" in env.library.model_fields_set else "standalone"
    date = args.date or datetime.now(UTC).strftime("%Y-%m-%d")

    def driver_for(spec: BenchmarkSpec, recheck: bool) -> Driver:
        return Driver(
            spec,
            args.server_url,
            args.out,
            vllm=args.vllm,
            server_pid=args.server_pid or find_server_pid(),
            attempt=env.loadgen.attempt or None,
            earlier_spreads=earlier_search_spreads(lake, spec, mode),
            recheck=recheck,
        )

    def quality(spec: BenchmarkSpec, driver: Driver, envelope: Envelope) -> None:
        if spec.quality is None:
            return
        if envelope.failure is None:  # after the levels, against the same server
            measure_quality(spec, args.server_url, driver.spec_dir, args.lm_eval_python)
        else:
            log.warning("quality not measured: a level failed (%s)", envelope.failure)

    def land(spec: BenchmarkSpec, driver: Driver, envelope: Envelope, first: bool) -> RunSummary:
        return finish(
            envelope,
            driver.spec_dir,
            lake,
            date,
            execution_mode=mode,
            node=env.loadgen.node_name or socket.gethostname(),
            server_group=group.group_id,
            **host_facts(),  # in a pod, /proc and /sys are the node's: its CPU and EC2 instance type
        )

    result = run_workloads(group.specs, args.server_url, driver_for, land, quality)
    failed = any(r.failure for r in result.runs)
    code = EXIT_LAKE if result.lake_errors else EXIT_LEVEL_FAILED if failed else EXIT_OK
    text = result.model_dump_json()
    print(text)
    if XCOM_RETURN.parent.is_dir():
        XCOM_RETURN.write_text(text)
    return code


if __name__ == "__main__":
    sys.exit(main())
