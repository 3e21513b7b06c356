"""Where a BenchmarkSpec runs: kubernetes (a pod) or local (a child process); same inputs, same outputs."""
