"""The XCom keys the benchmark task writes and the ingest task reads, in a module of their own so that the
operator, its pod and the campaign graph share them without importing one another."""

from __future__ import annotations

# What only the orchestrator sees, as ingest hints: the node the benchmark ran on (node, zone, capacity
# type) and, in kubernetes mode, how the server container died (exit code, log tail), if it did.
NODE_XCOM = "node"
RESULT_XCOM = "return_value"  # Airflow's key of a task's return value; pushed by hand on failure
