"""Planning refuses bad campaigns before launch, listing every problem with its field and value."""

from __future__ import annotations

import json
import logging

import pytest
from accelbench.campaign.plan import parse_request, plan_campaign
from accelbench.campaign.request import CampaignRequest
from accelbench.core.problems import PlanningError
from accelbench.sizing.model_config import load_model_shape
from accelbench.tiers import load_seed

from tests.support.kube_api import FakeKubeAPI
from tests.support.paths import REPO
from tests.support.planning import CATALOG, STORE, plan, problems


def test_a_good_request_plans_one_spec_per_instance() -> None:
    result = plan(instance_types=["r8g.4xlarge", "c8g.48xlarge", "m7g.xlarge"], concurrency=[1, 8])
    servers = {s.server.instance_type: s.server for s in result.specs}
    assert servers["c8g.48xlarge"].tensor_parallel_size == 2
    assert servers["r8g.4xlarge"].tensor_parallel_size == 1
    assert all(s.dtype == "bfloat16" and s.kv_cache_gib >= 1 for s in servers.values())
    assert all(s.image == "vllm/vllm-openai-cpu:v0.19.1-arm64" for s in servers.values())
    assert len({s.spec_id for s in result.specs}) == 3
    again = plan(instance_types=["r8g.4xlarge", "c8g.48xlarge", "m7g.xlarge"], concurrency=[1, 8])
    assert [s.spec_id for s in again.specs] == [s.spec_id for s in result.specs]  # deterministic


def test_slos_become_goodput_limits() -> None:
    result = plan(instance_types=["r8g.4xlarge"], slos={"ttft_p99_ms": 800, "tpot_p99_ms": 60})
    assert result.specs[0].load.goodput_slos_ms == {"ttft": 800, "tpot": 60}


def test_every_problem_is_reported_at_once() -> None:
    found = problems(
        instance_types=["m6g.large", "r8g.colossal", "g6e.xlarge", "r8g.4xlarge"],
        runtime="vllm-cpu",
        kv_cache_dtype="fp8_e4m3",
        deployment_mode="disaggregated",
        tensor_parallel_size=2,
        extra_engine_args=["--gpu-memory-utilization=0.9", "--dtype=float16", "$(reboot)"],
    )
    assert "FEAT_BF16" in found["instance_types[0]"]
    assert "not in the instance catalog" in found["instance_types[1]"]
    assert "is a gpu instance; runtime vllm-cpu needs a cpu instance" in found["instance_types[2]"]
    assert "2: greater than the 1 NUMA node(s) of r8g.4xlarge" in found["tensor_parallel_size"]
    assert found["kv_cache_dtype"].startswith("'fp8_e4m3': FP8 KV cache is not supported on CPU")
    assert "'disaggregated'" in found["deployment_mode"]
    assert (
        "--gpu-memory-utilization is set by the planner from gpu_memory_utilization"
        in found["extra_engine_args[0]"]
    )
    assert "set by the planner" in found["extra_engine_args[1]"]
    assert "only letters, digits" in found["extra_engine_args[2]"]


def test_the_error_text_names_each_field() -> None:
    with pytest.raises(PlanningError) as err:
        plan(instance_types=["r8g.large"], kv_cache_dtype="fp8")
    text = str(err.value)
    assert text.startswith("campaign refused, 2 problem(s):")
    assert "- kv_cache_dtype='fp8': FP8 KV cache" in text
    assert "- instance_types[0]='r8g.large': too small for a benchmark pod" in text


def test_the_reverse_tier_mismatch_is_refused() -> None:
    found = problems(instance_types=["r8g.4xlarge", "inf2.xlarge"], runtime="vllm-gpu")
    assert "is a cpu instance; runtime vllm-gpu needs a gpu instance" in found["instance_types[0]"]
    assert "is a neuron instance" in found["instance_types[1]"]


def test_unknown_model_is_named() -> None:
    found = problems(instance_types=["r8g.4xlarge"], model="org/not-in-the-store")
    assert "'org/not-in-the-store': no config.json found" in found["model"]


def test_dtype_is_forced_to_bfloat16_with_a_warning(caplog) -> None:
    with caplog.at_level(logging.WARNING):
        result = plan(instance_types=["r8g.4xlarge"], dtype="float16")
    assert result.specs[0].server.dtype == "bfloat16"
    assert "forced to bfloat16" in caplog.text


def test_int_quantization_needs_a_compressed_tensors_checkpoint() -> None:
    found = problems(instance_types=["r8g.4xlarge"], quantization="int8")
    assert (
        "int8 on CPU means a compressed-tensors W8A8 checkpoint; local/tiny-llama is unquantized"
        in (found["quantization"])
    )


def test_plan_task_fails_with_every_problem_in_its_text(engine, monkeypatch, tmp_path) -> None:
    from accelbench.airflow.tasks.campaign import plan_benchmarks
    from accelbench.catalog.seed import upsert_instance_types
    from airflow.sdk.exceptions import AirflowFailException

    upsert_instance_types(engine, load_seed())
    monkeypatch.setenv("ACCELBENCH_CATALOG_URL", engine.url.render_as_string(hide_password=False))
    monkeypatch.setenv("ACCELBENCH_MODEL_STORE", STORE)
    with pytest.raises(AirflowFailException) as err:
        plan_benchmarks(
            {
                "instance_types": ["r8g.4xlarge"],
                "model": "local/tiny-llama",
                "concurrency": [1, "many"],
                "kv_cache_dtype": "fp8",
            },
            "c-1",
        )
    assert "PlanningError" in str(err.value) and "concurrency[1]='many'" in str(err.value)
    with pytest.raises(AirflowFailException) as err:
        plan_benchmarks(
            {
                "instance_types": ["r8g.4xlarge", "m6g.large"],
                "model": "local/tiny-llama",
                "kv_cache_dtype": "fp8",
            },
            "c-1",
        )
    assert "kv_cache_dtype='fp8'" in str(err.value) and "instance_types[1]='m6g.large'" in str(err.value)
    request = {"instance_types": ["r8g.4xlarge"], "model": "local/tiny-llama", "execution_mode": "kubernetes"}
    monkeypatch.setenv("ACCELBENCH_LAKE_URI", "s3://lake/accelbench")
    monkeypatch.setenv("ACCELBENCH_LOADGEN_IMAGE", "registry.example.org/accelbench-loadgen:0.1.0")
    with FakeKubeAPI() as fake:
        config = {"kube_config_path": str(fake.kubeconfig(tmp_path / "kubeconfig"))}
        monkeypatch.setenv(
            "AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps({"conn_type": "kubernetes", "extra": config})
        )
        (group,) = plan_benchmarks(request, "c-1")  # one server: its workloads' specs
    assert group["specs"][0]["server"]["version"] == "0.18.0"  # the recipe default: no vllm-cpu row


def test_a_scheduled_campaign_on_a_fresh_install_skips_saying_what_to_configure(engine, monkeypatch) -> None:
    """No model store yet: the weekly run skips (a green run) and says what to set; a user's run fails."""
    from accelbench.airflow.dag_defaults import campaign_defaults
    from accelbench.airflow.tasks.campaign import plan_benchmarks
    from accelbench.catalog.seed import upsert_instance_types
    from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

    upsert_instance_types(engine, load_seed())
    monkeypatch.setenv("ACCELBENCH_CATALOG_URL", engine.url.render_as_string(hide_password=False))
    monkeypatch.setenv("ACCELBENCH_EXECUTION_MODE", "kubernetes")
    with pytest.raises(AirflowSkipException) as err:
        plan_benchmarks(campaign_defaults(), "c-1", scheduled=True)
    said = str(err.value)
    assert "model='Qwen/Qwen2.5-0.5B-Instruct'" in said and "ACCELBENCH_MODEL_STORE" in said
    assert "ACCELBENCH_DEFAULT_MODEL" in said
    with pytest.raises(AirflowFailException):  # asked for by a user: a failure with every problem
        plan_benchmarks(campaign_defaults(), "c-1")
    monkeypatch.setenv("ACCELBENCH_MODEL_STORE", STORE)  # configured: the scheduled run plans (and fails
    with pytest.raises(AirflowFailException) as err:  # here only on kubernetes mode's own needs)
        plan_benchmarks(campaign_defaults(), "c-1", scheduled=True)
    assert (
        "ACCELBENCH_LOADGEN_IMAGE" in str(err.value) and "Qwen" not in str(err.value).split("problem(s)")[1]
    )


def test_the_form_refuses_graviton2_with_the_reason(airflow_db) -> None:
    from airflow.dag_processing.dagbag import DagBag
    from airflow.sdk.definitions.param import ParamValidationError

    dag = DagBag(dag_folder=str(REPO / "dags" / "accelbench_campaign.py")).get_dag("accelbench_campaign")
    param = dag.params.get_param("instance_types")
    for graviton2 in ("m6g.xlarge", "c6gn.16xlarge", "r6gd.large"):
        with pytest.raises(ParamValidationError) as err:
            param.resolve([graviton2])
        assert graviton2 in str(err.value) and "lacks FEAT_BF16" in str(err.value)
    with pytest.raises(ParamValidationError) as err:
        param.resolve(["m8g.huge"])
    assert "is not one of" in str(err.value)
    assert param.resolve(["m8g.xlarge", "r8g.16xlarge"]) == ["m8g.xlarge", "r8g.16xlarge"]


def test_dense_models_above_13b_are_refused_with_the_quantized_alternative() -> None:
    found = problems(instance_types=["r8g.48xlarge"], model="meta-llama/Llama-3.1-70B-Instruct")
    assert "~70.6B parameters is refused on CPU" in found["model"]
    assert "compressed-tensors W4A8 (quantization=int4)" in found["model"]


def test_8b_to_13b_dense_warns_and_plans(caplog) -> None:
    with caplog.at_level(logging.WARNING):
        result = plan(instance_types=["r8g.xlarge"], model="meta-llama/Llama-3.1-8B", concurrency=[1, 4])
    assert "dense unquantized ~8.0B parameters is slow on CPU" in caplog.text
    server = result.specs[0].server
    assert server.model_weights_gib == pytest.approx(8_030_261_248 * 2 / 1024**3, abs=1e-3)
    assert server.kv_cache_gib >= 1 and server.served_model_name == "Llama-3.1-8B"
    assert "memory-bandwidth bound" in str(result.fits["r8g.xlarge"].advisory)


def test_a_model_that_does_not_fit_names_the_instance_and_the_numbers() -> None:
    found = problems(instance_types=["m8g.xlarge", "r8g.xlarge"], model="meta-llama/Llama-3.1-8B")
    assert set(found) == {"instance_types[0]"}
    assert (
        "'m8g.xlarge': meta-llama/Llama-3.1-8B does not fit: weights 14.96 GiB" in found["instance_types[0]"]
    )


def test_moe_counts_every_expert_for_memory_but_is_not_refused_as_dense() -> None:
    result = plan(instance_types=["r8g.4xlarge"], model="mistralai/Mixtral-8x7B-v0.1")
    assert result.fits["r8g.4xlarge"].weights_gib == pytest.approx(46_702_792_704 * 2 / 1024**3)
    found = problems(instance_types=["m8g.4xlarge"], model="mistralai/Mixtral-8x7B-v0.1")
    assert "does not fit" in found["instance_types[0]"]
    assert plan(instance_types=["m8g.8xlarge"], model="Qwen/Qwen3-30B-A3B").specs


@pytest.mark.parametrize(
    "arg",
    [
        "--tensor_parallel_size=4",
        "-tp=4",
        "--tensor-parallel=4",
        "--config=/etc/x.yaml",
        "--trust-remote-code",
        "--trust-remote",
        "--trust_remote_code=true",
        "--hf-token=hf_abcdefghijklmnop",
        "--allowed-local-media-path=/",
        "--config=x.yaml",
        "--gpu_memory_utilization=0.5",
        "--hos=0.0.0.0",
        "-q=awq",
        "--kv-cache-dtype=fp8",
    ],
)
def test_engine_arg_spellings_cannot_slip_past_the_guards(arg: str) -> None:
    found = problems(instance_types=["r8g.4xlarge"], extra_engine_args=[arg])
    assert "extra_engine_args[0]" in found, found


def test_harmless_engine_args_pass() -> None:
    result = plan(
        instance_types=["r8g.4xlarge"], extra_engine_args=["--enable-prefix-caching", "--enforce-eager"]
    )
    assert result.specs[0].server.extra_engine_args == ("--enable-prefix-caching", "--enforce-eager")


def test_fp8_and_w4a16_checkpoints_are_not_int_cpu_schemes() -> None:
    from accelbench.sizing.model_config import parse_config

    base = load_model_shape("local/tiny-llama", STORE)
    raw = {
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 256,
        "intermediate_size": 688,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 8192,
    }

    def with_quant(weights: dict, acts: dict | None) -> object:
        group = {"weights": weights} | ({"input_activations": acts} if acts else {})
        return parse_config(
            raw
            | {
                "quantization_config": {
                    "quant_method": "compressed-tensors",
                    "config_groups": {"group_0": group},
                }
            },
            "q",
        )

    fp8 = with_quant({"num_bits": 8, "type": "float"}, {"num_bits": 8, "type": "float"})
    w4a16 = with_quant({"num_bits": 4, "type": "int"}, None)
    req = dict(model="local/tiny-llama", instance_types=["r8g.4xlarge"])
    with pytest.raises(PlanningError) as err:
        plan_campaign(
            CampaignRequest(**req, quantization="int8"), CATALOG, "0.19.1", "c", load_shape=lambda m: fp8
        )
    assert "FP8A8 checkpoints do not run on Arm CPU" in str(err.value)
    with pytest.raises(PlanningError) as err:
        plan_campaign(
            CampaignRequest(**req, quantization="int4"), CATALOG, "0.19.1", "c", load_shape=lambda m: w4a16
        )
    assert "compressed-tensors W4A8 checkpoint; local/tiny-llama is compressed-tensors W4A16" in str(
        err.value
    )
    assert base.quantization is None


def test_context_longer_than_the_model_is_refused_in_planning() -> None:
    found = problems(instance_types=["r8g.4xlarge"], input_len=4000, output_len=128)
    assert "exceeds local/tiny-llama's context of 2048" in found["input_len"]


def test_duplicate_levels_or_types_are_refused() -> None:
    from accelbench.campaign.plan import parse_request

    with pytest.raises(PlanningError) as err:
        parse_request({"model": "m", "instance_types": ["r8g.4xlarge", "r8g.4xlarge"], "concurrency": [4, 4]})
    found = {p.field: p.message for p in err.value.problems}
    assert "more than once" in found["instance_types"] and "more than once" in found["concurrency"]
    with pytest.raises(PlanningError) as err:
        parse_request({"model": "m", "instance_types": ["r8g.4xlarge"], "concurrency": [4, 0]})
    assert "greater than or equal to 1" in {p.field: p.message for p in err.value.problems}["concurrency[1]"]


def test_search_mode_plans_a_load_search_from_the_form_s_fields() -> None:
    result = plan(
        instance_types=["r8g.4xlarge"],
        load_mode="search",
        search_variable="request_rate",
        search_lower=0.5,
        search_upper=32,
        search_precision=0.2,
        prompts_per_level=1000,
        repeats=3,
        slos={"ttft_p99_ms": 800},
    )
    (spec,) = result.specs
    search = spec.load.search
    assert search is not None
    assert (search.variable, search.lower, search.upper, search.relative, search.step) == (
        "request_rate",
        0.5,
        32,
        0.2,
        None,
    )
    assert (search.repeats, search.min_requests, spec.load.repeats) == (3, 1000, 3)
    assert (search.slos.ttft_p99_ms, search.slos.tpot_p99_ms, search.slos.max_error_rate) == (800, None, 0.01)
    # The form's concurrency levels are not measured beside a search (a search chooses its own loads).
    assert spec.load.concurrency == () and spec.load.request_rates == ()
    # The default precision: one step for a concurrency; the fit is sized for the search's upper bound.
    (spec,) = plan(instance_types=["r8g.4xlarge"], load_mode="search", prompts_per_level=1000).specs
    assert spec.load.search is not None and spec.load.search.step == 1 and spec.load.max_concurrency == 64
    # A fixed-level request keeps its spec_id: the search fields change nothing while load_mode is levels.
    fixed = plan(instance_types=["r8g.4xlarge"], search_upper=8, search_variable="request_rate")
    assert fixed.specs[0].spec_id == plan(instance_types=["r8g.4xlarge"]).specs[0].spec_id


@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ({"search_upper": 2048}, "search_upper", "2048.0: above the load generator's cap of 1,024"),
        ({"search_lower": 8, "search_upper": 4}, "search_upper", "4.0: below search_lower=8"),
        ({"search_lower": 1.5}, "search_lower", "1.5: a concurrency is a whole number"),
        ({"search_step": 2.5}, "search_step", "2.5: a concurrency is a whole number"),
        (
            {"search_precision": 0.1, "search_step": 2},
            "search_step",
            "2.0: give a relative precision or a step",
        ),
        ({"prompts_per_level": 200}, "prompts_per_level", "200: a search probe needs at least search_min"),
    ],
)
def test_a_bad_search_is_refused_in_planning_naming_the_field(fields, field, says) -> None:
    found = problems(
        instance_types=["r8g.4xlarge", "m6g.large"],
        load_mode="search",
        **({"prompts_per_level": 1000} | fields),
    )
    assert found[field].startswith(says), found
    assert "FEAT_BF16" in found["instance_types[1]"]  # reported with every other problem


def test_the_form_refuses_a_search_precision_outside_0_to_1() -> None:
    for bad in (0, 1, 1.5):
        with pytest.raises(ValueError, match="search_precision"):
            CampaignRequest(instance_types=["r8g.4xlarge"], model="m", search_precision=bad)


def test_each_workload_is_a_spec_on_one_server_configuration_sized_for_the_longest(tmp_path) -> None:
    result = plan(instance_types=["r8g.4xlarge"], workloads=["fixed", "chat", "shared-prefix"], input_len=128)
    assert [s.load.runs.name for s in result.specs] == ["fixed", "chat", "shared-prefix"]
    assert len({s.server for s in result.specs}) == 1  # one configuration, measured per workload
    (server,) = {s.server for s in result.specs}
    # The context holds the longest prompt + output of any: the shared prefix's 1,088 + 64 tokens (+1 each
    # for the length range's rounding), and 10% of the prompt as headroom.
    assert server.max_model_len == 1089 + 65 + 108
    fixed, chat, shared = (s.load for s in result.specs)
    assert (fixed.input_len, fixed.workload, chat.input_len, chat.range_ratio) == (128, None, 256, 0.5)
    assert shared.workload is not None and shared.workload.prefix_len == 1024
    assert fixed.level_warmups == 4 == shared.level_warmups  # the form's default, per level
    assert len({s.spec_id for s in result.specs}) == 3
    # The custom workload needs its file; the form's profile list refuses what it does not know.
    assert problems(instance_types=["r8g.4xlarge"], workloads=["custom"])["custom_prompts"].startswith(
        "None: the custom workload needs a JSONL file"
    )
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"prompt": "hello"}\n')
    (custom,) = plan(instance_types=["r8g.4xlarge"], workloads=["custom"], custom_prompts=str(prompts)).specs
    assert custom.load.workload is not None and custom.load.workload.path == str(prompts)
    with pytest.raises(PlanningError) as refused:
        parse_request({"instance_types": ["r8g.4xlarge"], "model": "m", "workloads": ["sharegpt"]})
    assert [p.field for p in refused.value.problems] == ["workloads[0]"]
