"""Cache isolation between the workloads of one server (issue 49): the prefix cache emptied through the
server's own endpoint before each workload after the first, so no workload is measured on prefixes another
one left.

vLLM serves `POST /reset_prefix_cache` in its development API only, which the server starts with when
`VLLM_SERVER_DEV_MODE=1` is in its environment (`loadgen.contract.DEV_MODE_ENV`: the local server and the
benchmark pod's server container get it when they serve more than one workload). The endpoint answers
`{"success": false}` while blocks are still held (a request finishing): it is asked again a few times. A
server without the endpoint (404) or one that keeps refusing is reported, never silent: the caller logs it.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request

log = logging.getLogger(__name__)

RESET_PATH = "/reset_prefix_cache"
TRIES, PAUSE_S = 5, 0.5


def reset_prefix_cache(base_url: str, timeout: float = 10.0) -> str | None:
    """Empty the server's prefix cache; None when it did, else why not (in words, for the log). The standard
    library's HTTP client, as the driver's other calls to the server: the load generator image's
    environment has no other (`docker/loadgen`)."""
    for _ in range(TRIES):
        request = urllib.request.Request(base_url + RESET_PATH, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as resp:
                done = bool(json.loads(resp.read()).get("success"))
        except urllib.error.HTTPError as exc:
            hint = " (the server was not started in vLLM's development mode)" if exc.code == 404 else ""
            return f"{RESET_PATH} answered HTTP {exc.code}{hint}"
        except (OSError, ValueError) as exc:
            return f"{RESET_PATH} failed: {type(exc).__name__}: {exc}"
        if done:
            log.info("prefix cache emptied (%s)", RESET_PATH)
            return None
        time.sleep(PAUSE_S)  # blocks still held (a request finishing): asked again
    return f"{RESET_PATH} kept answering success=false (blocks still held) after {TRIES} tries"
