"""Import results measured elsewhere: a directory or s3:// prefix of `vllm bench serve --save-result`
JSON files (with `--save-detailed`, the per-request rows too) into the lake's `runs`/`requests`
tables, so GPU and Neuron baselines from other systems appear in cross-tier reports.

The files do not say what they ran on: give the tier, the instance type (it must be in the catalog)
and the model. Each file is copied to `imports/accelerator_type=<tier>/date=<day>/` first; its rows
say `execution_mode=imported` and point at that copy in `source_uri`. Importing a file again
replaces its rows. A file that is not a bench result is named in the log; `import_results` still
succeeds with the others (and schedules a report), then `check_refused` fails the run.
"""

from __future__ import annotations

from accelbench.airflow.assets import LAKE_ASSET
from accelbench.airflow.dag_defaults import INSTANCE_TYPE_PATTERN, MODEL_PATTERN, VERSION_PATTERN, dag_kwargs
from airflow.sdk import Param, dag, get_current_context, task


@dag(
    dag_id="accelbench_import_results",
    schedule=None,
    doc_md=__doc__,
    params={
        "source": Param(
            "",
            type="string",
            minLength=1,
            maxLength=1024,
            pattern=r"^(s3://[a-z0-9][a-z0-9.-]*[a-z0-9](/.*)?|/.*)$",
            description="s3://bucket/prefix, or a directory or file under ACCELBENCH_IMPORT_ROOTS",
        ),
        "accelerator_type": Param("gpu", type="string", enum=["gpu", "neuron", "cpu"], description="Tier"),
        "instance_type": Param(
            "g6e.xlarge", type="string", pattern=INSTANCE_TYPE_PATTERN, description="As in the catalog"
        ),
        "model": Param(
            "", type="string", minLength=1, maxLength=200, pattern=MODEL_PATTERN, description="Model id"
        ),
        "vllm_version": Param(None, type=["null", "string"], pattern=VERSION_PATTERN),
        "quantization": Param(None, type=["null", "string"], maxLength=40, pattern=r"^[A-Za-z0-9_.-]+$"),
        "date": Param(
            None,
            type=["null", "string"],
            format="date",
            description="Measurement date; default: the file's own 'date' (its client's clock, read as UTC)",
        ),
    },
    **dag_kwargs("import"),
)
def accelbench_import_results() -> None:
    @task(outlets=[LAKE_ASSET])
    def import_results(params: dict | None = None) -> dict:
        assert params is not None  # Airflow passes the run's params
        from accelbench.airflow.tasks.imports import import_bench_results

        return import_bench_results(dict(params), get_current_context()["run_id"])

    @task
    def check_refused(result: dict) -> None:
        from accelbench.airflow.tasks.imports import fail_on_refused

        fail_on_refused(result)

    check_refused(import_results())  # type: ignore[arg-type]  # the XComArg is the dict at run time


accelbench_import_results()
