"""The environment the benchmark pod's main container gets: the pod builder writes it, the driver reads it.

Kept apart from accelbench.k8s.pod so that the load-generator image needs no Kubernetes client.
"""

from __future__ import annotations

SPEC_ENV = "ACCELBENCH_BENCHMARK_SPEC"
SERVER_URL_ENV = "ACCELBENCH_SERVER_URL"
LAKE_DATE_ENV = "ACCELBENCH_LAKE_DATE"  # the date partition of the raw evidence (the run's date)
NODE_NAME_ENV = "ACCELBENCH_NODE_NAME"
ATTEMPT_ENV = "ACCELBENCH_ATTEMPT"  # the benchmark task's attempt id, set at run time, kept in the envelope
