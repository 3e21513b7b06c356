"""`accelbench-loadgen`: the benchmark pod's main container (and local mode's driver process)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from accelbench.campaign.spec import BenchmarkSpec
from accelbench.k8s.pod import SPEC_ENV
from accelbench.loadgen.driver import Driver, summary
from accelbench.loadgen.sampling import find_server_pid

XCOM_RETURN = Path("/airflow/xcom/return.json")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="accelbench-loadgen", description=__doc__)
    parser.add_argument("--spec", type=Path, help=f"BenchmarkSpec JSON file (default: ${SPEC_ENV})")
    parser.add_argument(
        "--server-url", default=os.environ.get("ACCELBENCH_SERVER_URL", "http://127.0.0.1:8000")
    )
    parser.add_argument(
        "--out", type=Path, default=Path(os.environ.get("ACCELBENCH_RAW_DIR", "/tmp/accelbench-raw"))
    )
    parser.add_argument("--vllm", default=os.environ.get("ACCELBENCH_VLLM_BIN", "vllm"))
    parser.add_argument("--server-pid", type=int, help="server process to sample (default: found by name)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    raw = args.spec.read_text() if args.spec else os.environ.get(SPEC_ENV, "")
    if not raw:
        parser.error(f"no spec: pass --spec or set {SPEC_ENV}")
    spec = BenchmarkSpec.model_validate_json(raw)
    driver = Driver(
        spec, args.server_url, args.out, vllm=args.vllm, server_pid=args.server_pid or find_server_pid()
    )
    result = summary(driver.run())
    text = json.dumps(result)
    print(text)
    if XCOM_RETURN.parent.is_dir():
        XCOM_RETURN.write_text(text)
    return 1 if result["failure"] else 0


if __name__ == "__main__":
    sys.exit(main())
