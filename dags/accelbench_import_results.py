"""Import results measured elsewhere: a directory or s3:// prefix of `vllm bench serve --save-result`
JSON files (with `--save-detailed`, the per-request rows too) into the lake's `runs`/`requests`
tables, so GPU and Neuron baselines from other systems appear in cross-tier reports.

The files do not say what they ran on: give the tier, the instance type (it must be in the catalog),
the model and the vLLM version (required), and the image and tensor parallelism when known. Say the
workload too: a profile (`fixed` with input_len/output_len and range_ratio, or a named one such as
`chat`), or `custom` with the dataset's name. The report compares a point only with points of the same
model and workload. What a file records (its backend's endpoint, its mean request lengths, a model-store
model_id, `--metadata` keys named like these params) must agree, or the file is refused and named.
Each file is copied to `imports/accelerator_type=<tier>/date=<day>/` first; its rows say
`execution_mode=imported` and point at that copy in `source_uri`. Importing a file again replaces its
rows. A refused file is named in the log; `import_results` still succeeds with the others (and
schedules a report), then `check_refused` fails the run.
"""

from __future__ import annotations

from typing import get_args

from accelbench.airflow.assets import LAKE_ASSET
from accelbench.airflow.dag_defaults import INSTANCE_TYPE_PATTERN, MODEL_PATTERN, VERSION_PATTERN, dag_kwargs
from accelbench.core.workloads import DEFAULT_WORKLOAD, ENDPOINTS, WorkloadName
from accelbench.tiers import GPU
from accelbench.tiers import names as tier_names
from airflow.sdk import Param, dag, get_current_context, task

NAME_PATTERN = r"^[A-Za-z0-9_.-]+$"  # a quantization's or a dataset's name


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
        "accelerator_type": Param(
            GPU.name, type="string", enum=list(tier_names()), description="Tier (accelbench.tiers)"
        ),
        "instance_type": Param(
            "g6e.xlarge", type="string", pattern=INSTANCE_TYPE_PATTERN, description="As in the catalog"
        ),
        "model": Param(
            "", type="string", minLength=1, maxLength=200, pattern=MODEL_PATTERN, description="Model id"
        ),
        "vllm_version": Param(
            "",
            type="string",
            minLength=1,
            pattern=VERSION_PATTERN,
            description="Required: the vLLM version of the server that was measured",
        ),
        "image": Param(
            None,
            type=["null", "string"],
            maxLength=300,
            pattern=r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$",
            description="The server's image (repository:tag or @digest), when known",
        ),
        "tensor_parallel_size": Param(1, type="integer", minimum=1, maximum=64),
        "quantization": Param(None, type=["null", "string"], maxLength=40, pattern=NAME_PATTERN),
        "workload": Param(
            DEFAULT_WORKLOAD,
            type="string",
            enum=list(get_args(WorkloadName)),
            description="The workload profile the requests followed (custom: a named dataset)",
        ),
        "endpoint": Param(
            None,
            type=["null", "string"],
            enum=[None, *ENDPOINTS],
            description="Default: the profile's, else what the file's backend called",
        ),
        "dataset": Param(
            None,
            type=["null", "string"],
            maxLength=100,
            pattern=NAME_PATTERN,
            description="Default: the profile's; required for workload=custom (sharegpt, sonnet, ...)",
        ),
        "input_len": Param(None, type=["null", "integer"], minimum=1, description="Required for fixed"),
        "output_len": Param(None, type=["null", "integer"], minimum=1, description="Required for fixed"),
        "range_ratio": Param(
            None, type=["null", "number"], minimum=0, maximum=1, description="fixed: default 0"
        ),
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
