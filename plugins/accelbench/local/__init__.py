"""Local mode: its executor (a vLLM child process per spec, the same evidence as a pod), the server process,
and the models it serves without a hub (the tiny test model, the real model converted from PyPI). The
kubernetes executor is an Airflow operator (accelbench.airflow.benchmark_pod), so it lives there."""
