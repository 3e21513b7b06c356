# Airflow image with accelbench-campaigns installed (DAGs baked in; the package from pyproject).
# Build from the repository root: docker build -f docker/airflow.Dockerfile -t accelbench-airflow .
FROM apache/airflow:3.3.2-python3.11
# Kubernetes ignores Docker HEALTHCHECK; the Helm chart gives each Airflow component its own probes.
#checkov:skip=CKV_DOCKER_2:Kubernetes ignores HEALTHCHECK; the Airflow Helm chart defines a probe per component (scheduler, api-server, triggerer)
# The base image's unprivileged user (uid 50000), stated so that nothing below runs as root.
USER airflow

COPY --chown=airflow:0 pyproject.toml constraints.txt README.md /opt/accelbench/
COPY --chown=airflow:0 plugins /opt/accelbench/plugins
RUN pip install --no-cache-dir -c /opt/accelbench/constraints.txt /opt/accelbench
COPY --chown=airflow:0 dags /opt/airflow/dags
