"""`accelbench-loadgen`: the benchmark pod's main container (and a stand-alone driver).

Drives the server through every level of the spec, writes the raw evidence to --out, copies it to
the lake's raw/ area when a lake is configured (the pod's case), and prints a compact summary, also
to /airflow/xcom/return.json when that directory exists.

Exit codes: 0 every level measured (status ok, or errors: some requests failed, the server stayed up);
1 a level failed (the levels before it are kept); 2 bad usage;
3 the evidence could not be copied to the lake (the summary says why); 4 an unexpected error.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import sys
from datetime import UTC, datetime
from pathlib import Path

from accelbench.config import LAKE_SETTING
from accelbench.core.modes import MODE_SETTING
from accelbench.core.spec import BenchmarkSpec
from accelbench.lake.raw import RawLocation, upload_raw, write_execution
from accelbench.lake.store import Lake
from accelbench.loadgen.contract import ATTEMPT_ENV, LAKE_DATE_ENV, NODE_NAME_ENV, SERVER_URL_ENV, SPEC_ENV
from accelbench.loadgen.driver import Driver, summary
from accelbench.loadgen.host import host_facts
from accelbench.loadgen.sampling import find_server_pid

XCOM_RETURN = Path("/airflow/xcom/return.json")
EXIT_OK, EXIT_LEVEL_FAILED, EXIT_LAKE, EXIT_ERROR = 0, 1, 3, 4
log = logging.getLogger("accelbench.loadgen")


def main(argv: list[str] | None = None) -> int:
    env = os.environ
    parser = argparse.ArgumentParser(prog="accelbench-loadgen", description=__doc__)
    parser.add_argument("--spec", type=Path, help=f"BenchmarkSpec JSON file (default: ${SPEC_ENV})")
    parser.add_argument("--server-url", default=env.get(SERVER_URL_ENV, "http://127.0.0.1:8000"))
    parser.add_argument(
        "--out", type=Path, default=Path(env.get("ACCELBENCH_RAW_DIR", "/tmp/accelbench-raw"))
    )
    parser.add_argument("--vllm", default=env.get("ACCELBENCH_VLLM_BIN", "vllm"))
    parser.add_argument("--server-pid", type=int, help="server process to sample (default: found by name)")
    parser.add_argument(
        "--lake", default=env.get(LAKE_SETTING, ""), help=f"lake URI (default: ${LAKE_SETTING})"
    )
    parser.add_argument(
        "--date",
        default=env.get(LAKE_DATE_ENV, ""),
        help=f"raw partition date (default: ${LAKE_DATE_ENV}, today)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    raw = args.spec.read_text() if args.spec else env.get(SPEC_ENV, "")
    if not raw:
        parser.error(f"no spec: pass --spec or set {SPEC_ENV}")
    try:
        return run(args, BenchmarkSpec.model_validate_json(raw))
    except Exception:  # a crash is not a failed level: say so with its own exit code
        log.exception("load generator error")
        return EXIT_ERROR


def run(args: argparse.Namespace, spec: BenchmarkSpec) -> int:
    env = os.environ
    driver = Driver(
        spec,
        args.server_url,
        args.out,
        vllm=args.vllm,
        server_pid=args.server_pid or find_server_pid(),
        attempt=env.get(ATTEMPT_ENV) or None,
    )
    result = summary(driver.run())
    write_execution(
        driver.spec_dir,
        execution_mode=env.get(MODE_SETTING) or "standalone",
        node=env.get(NODE_NAME_ENV) or socket.gethostname(),
        **host_facts(),  # in a pod, /proc and /sys are the node's: its CPU and EC2 instance type
    )
    code = EXIT_LEVEL_FAILED if result["failure"] else EXIT_OK
    if args.lake:
        date = args.date or datetime.now(UTC).strftime("%Y-%m-%d")
        lake = Lake(args.lake)
        where = RawLocation(spec.server.accelerator_type, date, spec.campaign_id, spec.spec_id)
        try:
            upload_raw(lake, driver.spec_dir, where)
            result["raw"] = lake.uri_of(lake.path(*where.parts))
            log.info("raw evidence in %s", result["raw"])
        except Exception as exc:  # s3fs and botocore raise more than OSError (e.g. NoCredentialsError)
            result["lake_error"] = (
                f"could not copy the raw evidence to {lake.uri}: {type(exc).__name__}: {exc}"
            )
            log.error("%s", result["lake_error"])
            code = EXIT_LAKE
    text = json.dumps(result)
    print(text)
    if XCOM_RETURN.parent.is_dir():
        XCOM_RETURN.write_text(text)
    return code


if __name__ == "__main__":
    sys.exit(main())
