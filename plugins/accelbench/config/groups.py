"""The groups of settings by concern, one class each (`accelbench.config.Settings` is all of them): each
declares its variables once, with type, default and meaning."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Self

from pydantic import (
    field_validator,
    model_validator,
)
from pydantic_settings import (
    NoDecode,
)

from accelbench.config.base import (
    AIRFLOW,
    AWS,
    CATALOG,
    DEFAULT_REGIONS,
    KUBERNETES,
    LAKE,
    LIBRARY,
    LOADGEN,
    LOCAL,
    OPERATOR_SET,
    RELEASES,
    ExecutionMode,
    UserPath,
    _default_home,
    _Group,
    _setting,
)


class HomeSettings(_Group):
    """The home that the embedded defaults (SQLite catalog, lake, imports) live under."""

    home: UserPath = _setting(
        default_factory=_default_home,
        group=LIBRARY,
        shown_default="`~/.accelbench`",
        description="home of the embedded default; the SQLite catalog is `$ACCELBENCH_HOME/catalog.db`",
    )


class LibrarySettings(HomeSettings):
    """Which models planning reads and where benchmarks run."""

    model_store: str = _setting(
        "",
        group=LIBRARY,
        shown_type="path",
        description="directory of model folders (`<org>--<name>/config.json` or `<org>/<name>/config.json`) "
        "that planning reads; in local mode a model may also be a local path, in kubernetes mode it must be "
        "a store entry named by its id (the pod loads it by that id)",
    )
    weights_uri: str = _setting(
        "",
        group=LIBRARY,
        description="`s3://bucket/prefix` holding each model's files as the Hub has them under "
        "`<prefix>/<model id>/` (config, tokenizer, `*.safetensors`): a vLLM server streams the weights "
        "from there with its Run:ai model streamer (`--load-format runai_streamer`) instead of downloading "
        "them from the Hugging Face Hub (the Neuron tier's DLC, which has no streamer, serves a copy its "
        "node keeps: each node downloads it once, in the pod's `weights` init container); planning refuses a "
        "model whose folder lacks them, naming this setting. On EKS the benchmark pods' role reads the lake "
        "bucket's `models/` prefix; an S3-compatible store's endpoint is `AWS_ENDPOINT_URL`. Unset: the Hub",
    )
    execution_mode: ExecutionMode = _setting(
        "local",
        group=LIBRARY,
        description="where benchmarks run: `kubernetes` (a benchmark pod per server, through the Airflow "
        "connection `kubernetes_default`) or `local` (a vLLM process on the worker); the default of the "
        "campaign form's `execution_mode`; in the benchmark pod the operator sets `kubernetes` (unset, the "
        "load generator records `standalone`)",
    )


class CatalogSettings(HomeSettings):
    """The catalog: its database (an Airflow connection or a URL, SQLite under the home by default) and the
    instance types it is seeded with."""

    catalog_url: str = _setting(
        "",
        group=CATALOG,
        shown_default="SQLite under the home",
        description="SQLAlchemy URL of the catalog; `postgresql://user:pw@host/db` uses psycopg 3",
    )
    catalog_conn_id: str = _setting(
        "",
        group=CATALOG,
        description="name of an Airflow connection (type `postgres` or `sqlite`) for the catalog; wins over "
        "the URL",
    )
    seed_file: UserPath | None = _setting(
        None,
        group=CATALOG,
        shown_default="the shipped `instance_types.csv`",
        description="a seed file of your own (same columns), e.g. to override a NUMA count",
    )

    @model_validator(mode="after")
    def _catalog_under_home(self) -> Self:
        """The default that lives under the home: resolved here so that every caller gets the same."""
        if not self.catalog_url:
            object.__setattr__(self, "catalog_url", f"sqlite:///{self.home / 'catalog.db'}")
        return self


class LakeSettings(HomeSettings):
    """The Parquet lake, and the local directories imports may read."""

    lake_uri: str = _setting(
        "",
        group=LAKE,
        shown_default="`$ACCELBENCH_HOME/lake`",
        description="the Parquet lake: a directory or `s3://bucket/prefix` (S3 endpoint from "
        "`AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL` when set); the load generator copies its evidence there "
        "only when it is set",
    )
    import_roots: Annotated[tuple[UserPath, ...], NoDecode] = _setting(
        (),
        group=LAKE,
        shown_default="`$ACCELBENCH_HOME/import`",
        description="local directories `accelbench_import_results` may read (comma-separated); `s3://` "
        "sources are always allowed",
    )

    @model_validator(mode="after")
    def _imports_under_home(self) -> Self:
        if not self.import_roots:
            object.__setattr__(self, "import_roots", (self.home / "import",))
        return self

    @property
    def lake_location(self) -> str:
        """ACCELBENCH_LAKE_URI, else the lake under the home."""
        return self.lake_uri or str(self.home / "lake")


class AwsSettings(_Group):
    """AWS: which regions are priced, how calls retry, whose credentials the DAGs use."""

    offline: bool = _setting(
        False, group=AWS, description="`true`: never call AWS (snapshot prices, no EC2 verification)"
    )
    regions: Annotated[tuple[str, ...], NoDecode] = _setting(
        DEFAULT_REGIONS, group=AWS, description="comma-separated regions to price; default of the DAG params"
    )
    pricing_endpoint_region: str = _setting(
        "us-east-1",
        group=AWS,
        description="Pricing API endpoint (`us-east-1`, `eu-central-1` or `ap-south-1`), independent of the "
        "regions priced",
    )
    aws_max_attempts: int = _setting(
        8,
        group=AWS,
        description="total attempts per AWS call (botocore adaptive retry mode: backoff and client-side rate "
        "limiting on throttling)",
    )
    aws_conn_id: str = _setting(
        "aws_default",
        group=AWS,
        description="Airflow AWS connection whose credentials the DAGs use; without credentials they work "
        "offline",
    )


class ReleaseSettings(_Group):
    """Release discovery, version campaigns and the regression gate."""

    registry_url: str = _setting(
        "https://hub.docker.com",
        group=RELEASES,
        description="the registry whose Docker Hub tag API release discovery lists "
        "(`/v2/namespaces/<ns>/repositories/<repo>/tags`)",
    )
    include_prereleases: bool = _setting(
        False, group=RELEASES, description="release discovery also keeps rc/dev tags (the form's default)"
    )
    version_matrix: str = _setting(
        "",
        group=RELEASES,
        shown_type="JSON object",
        shown_default="the weekly campaign's defaults",
        description="campaign params (no `version`) that each version campaign measures, e.g. "
        '`{"instance_types": ["m8g.xlarge", "c8g.2xlarge"], "concurrency": [1, 8]}`',
    )
    regression_notifier: str = _setting(
        "",
        group=RELEASES,
        shown_type="`module:Name`",
        description="an Airflow notifier class (e.g. "
        "`airflow.providers.slack.notifications.slack:SlackNotifier`) or a callable taking the task context; "
        "called when a version regresses",
    )
    regression_notifier_kwargs: str = _setting(
        "{}",
        group=RELEASES,
        shown_type="JSON object",
        description="keyword arguments for the notifier class; the context carries `accelbench_regressions` "
        '(text) and `accelbench_report` (HTML path), e.g. `{"slack_conn_id": "slack", "text": '
        '"{{ accelbench_regressions }}"}`',
    )
    fail_on_regression: bool = _setting(
        False,
        group=RELEASES,
        description="`true`: the regression gate fails the version campaign's run, without asking an owner",
    )
    approval_timeout_hours: float = _setting(
        72.0,
        group=RELEASES,
        description="how long the version campaign's approval step waits for an owner to accept regressions "
        "or reject the version; past it the step fails and the next campaign of the version asks again (the "
        "version campaigns run one at a time, so an unanswered question holds the next ones queued)",
    )

    @field_validator("registry_url")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        return value.rstrip("/")


class AirflowSettings(_Group):
    """The DAGs: the benchmark pool, the form's defaults, the plan's estimates, the run's deadline and the
    schedules."""

    benchmark_pool: str = _setting(
        "default_pool",
        group=AIRFLOW,
        description="Airflow pool of the benchmark tasks, one slot per benchmark server; on EKS a pool sized "
        "to the CPU NodePool (`terraform output benchmark_pool_slots`), so that no benchmark pod waits for "
        "capacity (see [guides/deploy-on-eks.md](../guides/deploy-on-eks.md))",
    )
    benchmark_pool_slots: int | None = _setting(
        None,
        group=AIRFLOW,
        description="the Helm chart's migration job (`infra/helm/airflow-values.yaml`) creates the pool with "
        "this many slots; the plan's cost estimate counts a node start for each of an instance type's first "
        "this many servers in kubernetes mode (pods that run at once need a node each; unset: 1)",
    )
    default_model: str = _setting(
        "Qwen/Qwen2.5-0.5B-Instruct", group=AIRFLOW, description="the campaign form's default model"
    )
    startup_allowance_s: float = _setting(
        600.0,
        group=AIRFLOW,
        description="a server's start-up (node launch, image pull, model load) where the lake measured none "
        "for its instance type: the plan's cost estimate, and the campaign run's deadline",
    )
    node_start_allowance_s: float = _setting(
        300.0,
        group=AIRFLOW,
        description="kubernetes mode: the part of `startup_allowance_s` that is the node's launch and the "
        "server image's pull, which a pod started on its type's node already up (the campaign starts each "
        "type's pods back to back) does not pay again: the plan's cost estimate, and the run's deadline",
    )
    stated_requests_per_s: float = _setting(
        1.0,
        group=AIRFLOW,
        description="a configuration's request rate where the lake measured none: the plan's cost estimate, "
        "and the campaign run's deadline",
    )
    deadline_factor: float = _setting(
        2.0,
        group=AIRFLOW,
        description="the campaign run's deadline (an Airflow deadline alert, flagged in the UI when missed) "
        "is this many times the run's estimated duration after it was queued; 0: no deadline",
    )
    notify_conn_id: str = _setting(
        "",
        group=AIRFLOW,
        description="an Airflow connection (type `smtp`, or `slackwebhook` with the Slack provider "
        "installed) through which a report that changes an answer card, and a regression the gate finds, "
        "are announced with Airflow's own notifier; empty: nothing is sent",
    )
    notify_to: str = _setting(
        "",
        group=AIRFLOW,
        shown_type="comma-separated addresses",
        description="who the `smtp` connection's message goes to (required with an `smtp` connection)",
    )
    campaign_defaults: str = _setting(
        "",
        group=AIRFLOW,
        shown_type="JSON object",
        shown_default="CampaignRequest's",
        description="campaign params over the campaign form's defaults (and so over the weekly campaign's "
        'matrix), e.g. `{"concurrency": [1, 2], "prompts_per_level": 10}`; `scripts/ui.sh` sets the demo\'s '
        "small local campaign",
    )
    schedules: bool = _setting(
        True,
        group=AIRFLOW,
        description="the DAGs' time schedules (the weekly campaign and catalog, the daily prices and release "
        "discovery); false: those DAGs run only when triggered, and the report still follows every campaign "
        "(an asset schedule); `scripts/ui.sh` sets false unless `--unpause`",
    )


class KubernetesSettings(_Group):
    """Kubernetes mode: the benchmark pod's load generator, secrets, scheduling and node budget."""

    loadgen_image: str = _setting(
        "",
        group=KUBERNETES,
        shown_default="unset: required in kubernetes mode",
        description="the pinned load-generator image built from `docker/loadgen` and pushed to your "
        "registry; it never follows the server version under test. Kubernetes-mode planning refuses a "
        "campaign while it is unset or not an image reference (a pod rendered outside a campaign falls back "
        "to `accelbench/loadgen:<suite version>`, the local build's tag)",
    )
    hf_token_secret: str = _setting(
        "accelbench-hf-token",
        group=KUBERNETES,
        description="Kubernetes Secret (key `token`) mounted into the server as a file (`HF_TOKEN_PATH`); "
        "the token is never an environment value",
    )
    # Karpenter launch + node ready, with margin.
    pod_schedule_timeout_s: int = _setting(
        600,
        group=KUBERNETES,
        minimum=1,
        description="how long a benchmark pod may wait for a node (Karpenter launch included) before its "
        "benchmark fails with what to check in the NodePool",
    )
    extra_daemonset_requests: str = _setting(
        "",
        group=KUBERNETES,
        shown_type="`cpu=<q>,memory=<q>`",
        description="summed requests of the node DaemonSets your cluster runs on the benchmark pools beyond "
        'the EKS add-ons ([`infra/README.md`](../../infra/README.md), "Node budget"), e.g. '
        "`cpu=200m,memory=256Mi`: the benchmark pods leave room for them",
    )


class LocalServerSettings(_Group):
    """Local mode's server: the CPUs of its processes."""

    local_server_cpus: str = _setting(
        "",
        group=LOCAL,
        shown_type="comma-separated CPU numbers",
        shown_default="half on 2-4 core machines",
        description="CPUs for the engine and worker processes (e.g. `1`); set both or neither of the two; "
        "unset on larger machines = no pinning",
    )
    local_client_cpus: str = _setting(
        "",
        group=LOCAL,
        shown_type="comma-separated CPU numbers",
        shown_default="half on 2-4 core machines",
        description="CPUs for the API server and the load generator (e.g. `0`)",
    )


class LoadgenSettings(_Group):
    """The load generator (the benchmark pod's main container, or a local run's)."""

    benchmark_spec: str = _setting(
        "",
        group=LOADGEN,
        shown_type="JSON object",
        description=OPERATOR_SET
        + "the ServerGroup (a server's workloads, run in turn) or one BenchmarkSpec the load generator "
        "drives (or `--spec FILE`)",
    )
    server_url: str = _setting(
        "http://127.0.0.1:8000",
        group=LOADGEN,
        description=OPERATOR_SET + "the vLLM server sidecar's URL (`--server-url`)",
    )
    lake_date: str = _setting(
        "",
        group=LOADGEN,
        shown_type="`YYYY-MM-DD`",
        shown_default="today (UTC)",
        description=OPERATOR_SET + "the date partition of the raw evidence: the run's date (`--date`)",
    )
    node_name: str = _setting(
        "",
        group=LOADGEN,
        shown_default="the host name",
        description=OPERATOR_SET + "the node the pod runs on (from `spec.nodeName`), kept in the evidence",
    )
    attempt: str = _setting(
        "",
        group=LOADGEN,
        description=OPERATOR_SET + "the benchmark task's attempt id, set at run time, kept in the envelope",
    )
    raw_dir: UserPath = _setting(
        Path("/tmp/accelbench-raw"),
        group=LOADGEN,
        description="where the load generator writes the raw evidence before the copy to the lake (`--out`)",
    )
    vllm_bin: str = _setting(
        "vllm",
        group=LOADGEN,
        description="the `vllm` executable whose `vllm bench serve` drives the load (`--vllm`); the "
        "load-generator image sets it to its own fixed vLLM",
    )
    lm_eval_python: UserPath | None = _setting(
        None,
        group=LOADGEN,
        shown_default="the quantization environment .venv-quant in local mode",
        description="the Python interpreter with lm-eval that measures a quantization matrix's accuracy "
        "against the server after its levels (`--lm-eval-python`); the load-generator image sets its own",
    )
    bench_fork_server: UserPath | None = _setting(
        None,
        group=LOADGEN,
        shown_default="none: each bench runner imports vLLM itself",
        description="a Unix socket where a fork server of bench runners listens (`bench_runner.py "
        "--fork-server PATH`, in the same vLLM environment): a runner borrows a child forked there, vLLM "
        "already imported, instead of importing it (~9 CPU-s), and so does a local `vllm serve` (its API "
        "server's import, ~6 CPU-s) whose environment differs from the fork server's only in what vLLM reads "
        "when it runs; the test suite runs one for all its lanes",
    )
