"""The vLLM server's Prometheus /metrics, reduced to the counters and gauges a run records."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

COUNTERS = {
    "prompt_tokens": "vllm:prompt_tokens_total",
    "generation_tokens": "vllm:generation_tokens_total",
    "preemptions": "vllm:num_preemptions_total",
    "request_success": "vllm:request_success_total",
    # Tokens looked up in the prefix cache, and found there: the raw evidence's per-level account of the
    # cache (a workload after another one on the same server starts with an emptied cache: issue 49).
    "prefix_cache_queries": "vllm:prefix_cache_queries_total",
    "prefix_cache_hits": "vllm:prefix_cache_hits_total",
}
GAUGES = {
    "requests_running": "vllm:num_requests_running",
    "requests_waiting": "vllm:num_requests_waiting",
    "kv_cache_usage": "vllm:kv_cache_usage_perc",
}


def parse(text: str) -> dict[str, float]:
    """Sum each metric over its labels (model name, finish reason, engine)."""
    wanted = {v: k for k, v in (COUNTERS | GAUGES).items()}
    out = dict.fromkeys(wanted.values(), 0.0)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = wanted.get(sample.name)
            if key is not None:
                out[key] += float(sample.value)
    return out


def scrape(base_url: str, timeout: float = 5.0) -> dict[str, float]:
    with urllib.request.urlopen(f"{base_url}/metrics", timeout=timeout) as resp:
        return parse(resp.read().decode())


def counter_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before[k] for k in COUNTERS}
