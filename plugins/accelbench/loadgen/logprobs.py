"""The next-token distributions a running server gives for a prompt set: vLLM's `prompt_logprobs` on
/v1/completions (the top k of each prompt position, k at most the server's `--max-logprobs`, 20 by
default). What `accelbench.quality.fidelity` compares between a configuration and its reference.

The prompts go in batches of BATCH, in the set's order, so every configuration sees the same batches. A
batch's make-up moves vLLM CPU's numbers a little (measured on the real model: the same 24 prompts in reverse
order, 0.0001 nats of top-20 KL; one at a time against batched, 0.0009), which is the floor a configuration's
divergence is read against; one request per prompt took 30x as long."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

from accelbench.errors import AccelbenchError

TOP_K = 20  # vLLM's default --max-logprobs: the most a server gives without an engine flag
REQUEST_TIMEOUT_S = 600.0
BATCH = 64  # prompts per request
# A loopback server is never reached through a proxy (HTTP_PROXY without NO_PROXY would send it there).
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class LogprobsError(AccelbenchError):
    """The server refused or could not answer a prompt's logprobs; the message names the server."""


def _top_k(position: dict[str, Any] | None, k: int) -> dict[str, float]:
    """One position's top k, token id -> logprob. vLLM adds the prompt's own token at its rank, which may be
    past k: left out unless it is among the top k."""
    if not position:
        return {}
    return {token: float(v["logprob"]) for token, v in position.items() if int(v["rank"]) <= k}


def prompt_logprobs(
    base_url: str, model: str, prompts: Sequence[str], top_k: int = TOP_K
) -> list[list[dict[str, float]]]:
    """Per prompt, per position after the first, the top `top_k` next-token logprobs (token ids as keys)."""
    found: list[list[dict[str, float]]] = []
    for start in range(0, len(prompts), BATCH):
        batch = list(prompts[start : start + BATCH])
        body = {"model": model, "prompt": batch, "max_tokens": 1, "temperature": 0, "prompt_logprobs": top_k}
        request = urllib.request.Request(
            f"{base_url}/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        where = f"{base_url}: prompts {start}-{start + len(batch) - 1}"
        try:
            with _DIRECT.open(request, timeout=REQUEST_TIMEOUT_S) as resp:
                answer = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")[:500]
            raise LogprobsError(f"{where}: HTTP {exc.code}: {detail}") from None
        except (OSError, ValueError) as exc:
            raise LogprobsError(f"{where}: {type(exc).__name__}: {exc}") from None
        choices = sorted(answer.get("choices") or [], key=lambda c: int(c["index"]))
        if len(choices) != len(batch) or any(c.get("prompt_logprobs") is None for c in choices):
            raise LogprobsError(
                f"{where}: not one answer with prompt_logprobs per prompt (not a vLLM server?)"
            )
        found += [
            [_top_k(p, top_k) for p in c["prompt_logprobs"][1:]] for c in choices
        ]  # the first: no context
    return found
