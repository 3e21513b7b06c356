"""The environment the benchmark pod's main container gets: the pod builder writes it, the driver reads it.

Kept apart from accelbench.k8s.pod so that the load-generator image needs no Kubernetes client. The
variables are declared (type, default, meaning) in accelbench.config.Settings; these are their names.
"""

from __future__ import annotations

from accelbench.config import env_name

SPEC_ENV = env_name("benchmark_spec")
SERVER_URL_ENV = env_name("server_url")
LAKE_DATE_ENV = env_name("lake_date")  # the date partition of the raw evidence (the run's date)
NODE_NAME_ENV = env_name("node_name")
ATTEMPT_ENV = env_name("attempt")  # the benchmark task's attempt id, set at run time, kept in the envelope
# The server's environment when it serves several workloads: vLLM's development API, whose
# `POST /reset_prefix_cache` empties its prefix cache between them (accelbench.loadgen.prefix_cache).
DEV_MODE_ENV = {"VLLM_SERVER_DEV_MODE": "1"}

# What accelbench-loadgen reads (and checks): only these, so that a bad library setting in the shell of a
# stand-alone run cannot stop it.
LOADGEN_SETTINGS = (
    "benchmark_spec",
    "server_url",
    "lake_date",
    "node_name",
    "attempt",
    "raw_dir",
    "vllm_bin",
    "lm_eval_python",
    "lake_uri",
    "execution_mode",
)
