"""The load-generator driver: `vllm bench serve` for every level x repeat, with server-side evidence."""
