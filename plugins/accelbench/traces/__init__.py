"""Timed traces, the `trace` workload's traffic: the format vLLM's client replays with its checks and
identity (`timed_trace`), and traces made from usage logs, the lake's requests or a generated day
(`builders`)."""
