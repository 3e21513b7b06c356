"""Every `ACCELBENCH_*` environment variable, declared once: its type, default and meaning.

The library runs the same in a task, a pod or a shell: each call of `Settings.from_env()` reads the
environment afresh (nothing is cached at import, so tests may change it per test), and a bad value fails
with a ConfigError naming the variable. The configuration reference (docs/reference/configuration.md) is
rendered from these declarations by `reference_markdown()`, so the page cannot drift from the code.
"""

from __future__ import annotations

import types
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, Literal, Self, TypeVar, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    Field,
    JsonValue,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from accelbench.errors import ConfigError

ENV_PREFIX = "ACCELBENCH_"
S3_ENDPOINT_SETTINGS = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")  # an S3-compatible lake, first wins
DEFAULT_REGIONS = ("us-east-1",)
ExecutionMode = Literal["local", "kubernetes"]  # here, below core, so that Settings can check it

# The groups of the reference page, one per class of settings below, in order.
LIBRARY, CATALOG, LAKE, AWS, RELEASES, CPU_TIER, GPU_TIER, NEURON_TIER = (
    "Library: home, models, execution mode",
    "Catalog",
    "Lake and imports",
    "AWS: prices and instance data",
    "Releases, version campaigns and regressions",
    "CPU tier (vllm-cpu)",
    "GPU tier (vllm-gpu)",
    "Neuron tier (vllm-neuron)",
)
AIRFLOW, KUBERNETES, LOCAL, LOADGEN = (
    "Airflow",
    "Kubernetes mode",
    "Local server",
    "Load generator (`accelbench-loadgen`, the benchmark pod's main container)",
)
TITLES = (
    LIBRARY,
    CATALOG,
    LAKE,
    AWS,
    RELEASES,
    CPU_TIER,
    GPU_TIER,
    NEURON_TIER,
    AIRFLOW,
    KUBERNETES,
    LOCAL,
    LOADGEN,
)
# Set by the benchmark operator on the load-generator container; never set them yourself.
OPERATOR_SET = "set by the benchmark operator in the pod: "


def env_name(field: str) -> str:
    """The environment variable of a Settings field (home -> ACCELBENCH_HOME); a KeyError for a name that
    is not a field, so that a module constant cannot name an undeclared variable."""
    if field not in Settings.model_fields:
        raise KeyError(f"{field!r} is not a field of accelbench.config.Settings")
    return ENV_PREFIX + field.upper()


# A path from the environment, `~` expanded (pydantic makes the Path).
UserPath = Annotated[Path, AfterValidator(Path.expanduser)]
# What a pydantic error type says in a ConfigError (pydantic converts the text; these are its words here).
_WHY = {
    "bool_parsing": "expected one of 1/0, true/false, yes/no, on/off",
    "int_parsing": "not an integer",
    "int_from_float": "not an integer",
    "float_parsing": "not a number",
}


def _setting(
    default: Any = None,
    *,
    description: str,
    group: str,
    shown_default: str | None = None,
    shown_type: str | None = None,
    default_factory: Any = None,
    minimum: int | None = None,
) -> Any:
    """A Field with what the reference page shows: its group, and a default or type in words where the
    value alone would mislead (a default derived from ACCELBENCH_HOME, a string holding JSON)."""
    extra: dict[str, JsonValue] = {"group": group}
    if shown_default is not None:
        extra["shown_default"] = shown_default
    if shown_type is not None:
        extra["shown_type"] = shown_type
    if minimum is not None:
        extra["minimum"] = minimum
    if default_factory is not None:
        return Field(default_factory=default_factory, description=description, json_schema_extra=extra)
    return Field(default, description=description, json_schema_extra=extra, ge=minimum)


G = TypeVar("G", bound="_Group")
# The fields one from_env() call reads (None: all); a context variable, so that concurrent reads stay apart.
_ONLY: ContextVar[frozenset[str] | None] = ContextVar("accelbench_settings_only", default=None)


class _Environment(EnvSettingsSource):
    """The environment, or only the variables of the fields that one reader asked for."""

    def __call__(self) -> dict[str, Any]:
        values = super().__call__()
        only = _ONLY.get()
        return values if only is None else {k: v for k, v in values.items() if k in only}


def _default_home() -> Path:
    return Path.home() / ".accelbench"


class _Group(BaseSettings):
    """What every group of settings shares: its variables are `ACCELBENCH_<FIELD>`, read afresh from the
    environment by each `from_env()` (keyword arguments first; no .env or secrets file), empty values count
    as unset, pydantic converts the text and a bad value fails with a ConfigError naming the variable.

    Fields whose value a domain parser checks (JSON, quantities, CPU lists, image references) stay strings,
    so that their error keeps the parser's detail.
    """

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, frozen=True, extra="ignore")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Keyword arguments, then the environment: no .env or secrets file, which a task would not expect."""
        return init_settings, _Environment(settings_cls)

    @field_validator("*", mode="before")
    @classmethod
    def _from_text(cls, value: Any, info: ValidationInfo) -> Any:
        """Empty environment text means the default (except for the regions, where it names no region); a
        comma-separated list becomes its items. Every other conversion is pydantic's (`from_env` names the
        variable in its errors)."""
        if not isinstance(value, str):
            return value
        name = str(info.field_name)
        field = cls.model_fields[name]
        raw = value.strip()
        if raw == "" and name != "regions":
            return field.get_default(call_default_factory=True)
        if _base_type(field.annotation) is tuple:
            items = tuple(p.strip() for p in raw.split(",") if p.strip())
            if not items and name == "regions":
                raise ConfigError(env_name(name), raw, "names no region")
            return items or field.get_default(call_default_factory=True)
        return raw

    @classmethod
    def from_env(cls, *only: str) -> Self:
        """This group's settings (or all of them, `Settings`) in the environment now. With field names, only
        those variables are read and checked (the others keep their defaults): a reader of one setting, e.g.
        while a DAG file is parsed, is not failed by a bad value of another."""
        try:
            if not only:
                return cls()
            unknown = sorted(set(only) - set(cls.model_fields))
            if unknown:
                raise KeyError(f"not a setting: {', '.join(unknown)}")
            token = _ONLY.set(frozenset(only))
            try:
                return cls()
            finally:
                _ONLY.reset(token)
        except ValidationError as exc:
            raise _named(exc) from None


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


class CpuTierSettings(_Group):
    """The CPU tier's image and local vLLM environment."""

    vllm_cpu_image_repository: str = _setting(
        "vllm/vllm-openai-cpu",
        group=CPU_TIER,
        description="repository of the vLLM CPU image (e.g. a mirror); the tag is always `v<version>-arm64`",
    )
    vllm_python: str = _setting(
        "",
        group=CPU_TIER,
        shown_type="path",
        shown_default="`.venv-vllm/bin/python`",
        description="interpreter of the vLLM CPU environment that local mode starts `vllm serve` with "
        "(Airflow and vLLM live in separate environments)",
    )


class GpuTierSettings(_Group):
    """The GPU tier's image and local CUDA vLLM environment."""

    vllm_gpu_image_repository: str = _setting(
        "vllm/vllm-openai",
        group=GPU_TIER,
        description="repository of the GPU tier's image (tag `v<version>`)",
    )
    vllm_gpu_python: str = _setting(
        "",
        group=GPU_TIER,
        shown_type="path",
        shown_default="`.venv-vllm-gpu/bin/python`",
        description="interpreter of the optional CUDA vLLM environment (`scripts/vllm-gpu-env.sh`) that "
        "local mode serves GPU instance types with, on a worker with an NVIDIA GPU",
    )


class NeuronTierSettings(_Group):
    """The Neuron tier's image and the registry its releases are listed from."""

    vllm_neuron_image_repository: str = _setting(
        "public.ecr.aws/neuron/pytorch-inference-vllm-neuronx",
        group=NEURON_TIER,
        description="repository of the Neuron tier's image",
    )
    neuron_registry_url: str = _setting(
        "",
        group=NEURON_TIER,
        shown_default="`https://` + the registry host of `ACCELBENCH_VLLM_NEURON_IMAGE_REPOSITORY`",
        description="the OCI distribution API (`/v2/<name>/tags/list`, anonymous bearer token) that release "
        "discovery lists the Neuron DLC's tags from, e.g. a mirror or a test server; the recorded image "
        "keeps the repository's name",
    )


class AirflowSettings(_Group):
    """The DAGs: the benchmark pool, the form's default model, the plan's estimates and the run's deadline."""

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
        description="read only by the Helm chart's migration job (`infra/helm/airflow-values.yaml`), which "
        "creates the pool with this many slots; the library ignores it",
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
        description=OPERATOR_SET + "the BenchmarkSpec the load generator drives (or `--spec FILE`)",
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
        "already imported, instead of importing it (~9 CPU-s); the test suite runs one for all its lanes",
    )


# Every group, in the reference page's order.
GROUPS: tuple[type[_Group], ...] = (
    LibrarySettings,
    CatalogSettings,
    LakeSettings,
    AwsSettings,
    ReleaseSettings,
    CpuTierSettings,
    GpuTierSettings,
    NeuronTierSettings,
    AirflowSettings,
    KubernetesSettings,
    LocalServerSettings,
    LoadgenSettings,
)


class Settings(
    LibrarySettings,
    CatalogSettings,
    LakeSettings,
    AwsSettings,
    ReleaseSettings,
    CpuTierSettings,
    GpuTierSettings,
    NeuronTierSettings,
    AirflowSettings,
    KubernetesSettings,
    LocalServerSettings,
    LoadgenSettings,
):
    """Every knob of the suite: the groups above together, with the embedded defaults (no AWS, SQLite and the
    lake under the home). A reader of one concern may take its group alone (`CatalogSettings.from_env()`);
    every variable keeps its name whichever class reads it."""

    def group(self, kind: type[G]) -> G:
        """This group's settings as `kind` holds them (e.g. `settings.group(KubernetesSettings)`)."""
        return kind.model_construct(**{name: getattr(self, name) for name in kind.model_fields})


# Names callers put in messages; each derives from its field, so a renamed field cannot leave a stale one.
LAKE_SETTING = env_name("lake_uri")  # a directory or s3://bucket/prefix; default: $ACCELBENCH_HOME/lake
MODE_SETTING = env_name("execution_mode")


def read_variable(variable: str) -> Any:
    """The value of one variable named in full (e.g. a form field's `default_env`), read and checked alone."""
    field = variable.removeprefix(ENV_PREFIX).lower()
    if not variable.startswith(ENV_PREFIX) or field not in Settings.model_fields:
        raise KeyError(f"{variable} is not an accelbench setting (accelbench.config.Settings)")
    return getattr(Settings.from_env(field), field)


def _named(exc: ValidationError) -> ConfigError:
    """pydantic's first error as a ConfigError naming the variable, in the words of the reference page."""
    error = exc.errors()[0]
    name = str(error["loc"][0]) if error["loc"] else "?"
    field = Settings.model_fields.get(name)
    ctx = error.get("ctx") or {}
    why = _WHY.get(error["type"], error["msg"])
    if error["type"] == "greater_than_equal":
        why = f"must be at least {ctx['ge']}"
    elif error["type"] == "literal_error" and field is not None:
        why = f"one of {', '.join(str(v) for v in get_args(field.annotation))}"
    return ConfigError(env_name(name) if field else name, error.get("input"), why)


def _extra(field: FieldInfo) -> dict[str, Any]:
    """What _setting() stored for the reference page (group, shown default and type, minimum)."""
    extra = field.json_schema_extra
    return dict(extra) if isinstance(extra, dict) else {}


def _base_type(annotation: Any) -> Any:
    """int for `int | None`, tuple for `tuple[str, ...]`: what the text must become."""
    if get_origin(annotation) in (Union, types.UnionType):
        annotation = next(a for a in get_args(annotation) if a is not type(None))
    if get_origin(annotation) is Annotated:  # UserPath: a Path with its validator
        annotation = get_args(annotation)[0]
    return get_origin(annotation) or annotation


# ---- the reference page -----------------------------------------------------------------------------


def _type_text(field: FieldInfo) -> str:
    kind = _base_type(field.annotation)
    if get_origin(field.annotation) is Literal:
        return " \\| ".join(f"`{v}`" for v in get_args(field.annotation))
    if kind is tuple:
        paths = _base_type(get_args(field.annotation)[0]) is Path
        return "comma-separated paths" if paths else "comma-separated list"
    return {bool: "boolean", int: "integer", Path: "path", str: "string"}.get(kind, str(kind))


def _default_text(field: FieldInfo) -> str:
    default = field.get_default(call_default_factory=False)
    if default is None or default == "" or default == ():
        return "unset"
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    if isinstance(default, tuple):
        return f"`{','.join(map(str, default))}`"
    return f"`{default}`"


def reference_markdown() -> str:
    """The configuration reference: one table (variable, type, default, description) per group."""
    groups: dict[str, list[str]] = {}
    for name, field in Settings.model_fields.items():
        extra = _extra(field)
        shown_type = str(extra.get("shown_type") or _type_text(field))
        shown_default = str(extra.get("shown_default") or _default_text(field))
        row = f"| `{env_name(name)}` | {shown_type} | {shown_default} | {field.description} |"
        groups.setdefault(str(extra["group"]), []).append(row)
    parts = []
    for group, rows in sorted(groups.items(), key=lambda item: TITLES.index(item[0])):
        parts += [
            f"## {group}",
            "",
            "| variable | type | default | description |",
            "|---|---|---|---|",
            *rows,
            "",
        ]
    return "\n".join(parts).rstrip("\n") + "\n"
