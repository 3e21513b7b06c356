# Airflow image with accelbench-campaigns installed (DAGs baked in; the package from pyproject).
# Build from the repository root: docker build -f docker/airflow.Dockerfile -t accelbench-airflow .
FROM apache/airflow:3.3.2-python3.11

COPY --chown=airflow:0 pyproject.toml constraints.txt README.md /opt/accelbench/
COPY --chown=airflow:0 plugins /opt/accelbench/plugins
RUN pip install --no-cache-dir -c /opt/accelbench/constraints.txt /opt/accelbench
COPY --chown=airflow:0 dags /opt/airflow/dags
