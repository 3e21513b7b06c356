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

import logging

import httpx
from tenacity import RetryError, retry, retry_if_result, stop_after_attempt, wait_fixed

log = logging.getLogger(__name__)

RESET_PATH = "/reset_prefix_cache"


@retry(retry=retry_if_result(lambda done: done is False), stop=stop_after_attempt(5), wait=wait_fixed(0.5))
def _reset(base_url: str, timeout: float) -> bool:
    resp = httpx.post(base_url + RESET_PATH, timeout=timeout)
    resp.raise_for_status()
    return bool(resp.json().get("success"))


def reset_prefix_cache(base_url: str, timeout: float = 10.0) -> str | None:
    """Empty the server's prefix cache; None when it did, else why not (in words, for the log)."""
    try:
        _reset(base_url, timeout)
    except RetryError:
        return f"{RESET_PATH} kept answering success=false (blocks still held) after 5 tries"
    except httpx.HTTPStatusError as exc:
        code = exc.response.status_code
        hint = " (the server was not started in vLLM's development mode)" if code == 404 else ""
        return f"{RESET_PATH} answered HTTP {code}{hint}"
    except (httpx.HTTPError, ValueError) as exc:
        return f"{RESET_PATH} failed: {type(exc).__name__}: {exc}"
    log.info("prefix cache emptied (%s)", RESET_PATH)
    return None
