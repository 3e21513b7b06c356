"""Memory-fit planning: parameter counts, KV bytes, the node budget and the fit, checked by hand."""

from __future__ import annotations

import math

import pytest
from accelbench.errors import ConfigError
from accelbench.sizing import fit
from accelbench.sizing.bandwidth import advisory
from accelbench.sizing.model_config import load_model_shape, parse_config

from tests.support.paths import REPO

STORE = str(REPO / "tests" / "data" / "model_configs")
GIB = 1024**3


def test_tiny_llama_shape_by_hand() -> None:
    shape = load_model_shape("local/tiny-llama", STORE)
    attention = 256 * 4 * 64 + 2 * 256 * 2 * 64 + 4 * 64 * 256
    mlp = 3 * 256 * 688
    assert shape.linear_params() == 4 * (attention + mlp)
    assert shape.total_params() == 4 * (attention + mlp) + 2 * 8192 * 256 + 4 * 2 * 256 + 256
    assert shape.kv_bytes_per_token() == 4 * 2 * 64 * 2 * 2  # layers x kv_heads x head_dim x K,V x bf16
    assert shape.weight_bytes() == shape.total_params() * 2


def test_model_lookup_errors_name_the_model(tmp_path) -> None:
    with pytest.raises(ConfigError) as err:
        load_model_shape("org/missing-model", STORE)
    assert "model='org/missing-model'" in str(err.value)
    with pytest.raises(ConfigError) as err:
        parse_config({"hidden_size": 8}, "org/broken")
    assert "org/broken/config.json" in str(err.value) and "num_attention_heads" in str(err.value)


def test_quantized_weights_shrink_only_the_linear_layers() -> None:
    base = {
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
    }
    w4a8 = base | {
        "quantization_config": {
            "quant_method": "compressed-tensors",
            "config_groups": {"group_0": {"weights": {"num_bits": 4}, "input_activations": {"num_bits": 8}}},
        }
    }
    dense, quant = parse_config(base, "a"), parse_config(w4a8, "b")
    assert quant.quantization is not None and quant.quantization.scheme == "W4A8"
    other = dense.total_params() - dense.linear_params()
    assert quant.weight_bytes() == dense.linear_params() // 2 + other * 2
    assert dense.total_params() == 8_030_261_248  # Llama-3.1-8B's published parameter count


def test_node_budget_by_hand() -> None:
    """r8g.xlarge: Karpenter's allocatable (29258Mi and 3920m in its published table) minus what else runs."""
    budget = fit.NodeBudget.for_instance(
        memory_gib=32, vcpu=4, architecture="arm64", max_pods=58, loadgen_mib=1152
    )
    capacity = (32768 - 64) - math.ceil((32768 - 64) * 0.075)  # Graviton CMA, then vmMemoryOverheadPercent
    allocatable = capacity - (255 + 11 * 58) - 100  # kube-reserved for 58 ENI-limited pods, eviction
    assert budget.node.memory_mib == allocatable == 29258
    assert budget.node.cpu_m == 4000 - (60 + 10 + 10) == 3920
    daemonsets = 0 + 0 + 0 + 40  # aws-node, kube-proxy, pod identity agent, ebs-csi-node
    assert budget.server_memory_mib == allocatable - daemonsets - 1152 - 32
    assert budget.server_cpu == 2  # 3 exclusive cores (one reserved) - 1 for the load generator


def test_x86_nodes_keep_the_cma_and_big_nodes_keep_whole_cores() -> None:
    gpu = fit.NodeBudget.for_instance(
        memory_gib=32, vcpu=4, architecture="x86_64", max_pods=58, loadgen_mib=1152
    )
    assert gpu.node.memory_mib == 32768 - math.ceil(32768 * 0.075) - (255 + 11 * 58) - 100
    big = fit.NodeBudget.for_instance(
        memory_gib=1536, vcpu=192, architecture="arm64", max_pods=737, loadgen_mib=1152
    )
    assert big.node.cpu_m == 192000 - (60 + 10 + 10 + int(188000 * 0.0025))
    assert big.server_cpu == 190


def test_load_generator_memory_follows_the_load_plan() -> None:
    """Measured base at 1024 in flight plus the per-request timings it keeps (benchmarks/pod_reserves.py)."""
    assert fit.loadgen_memory_mib(200, 512, 128) == 1344  # 1,280 MiB + 3.9 MiB, rounded up to 64 MiB
    big = 10_000 * (8 * 4096 + 128 * 512) / 2**20 + 1280
    assert fit.loadgen_memory_mib(10_000, 4096, 512) == math.ceil(big / 64) * 64
    assert fit.loadgen_memory_mib(10_000, 4096, 512, range_ratio=0.5) > fit.loadgen_memory_mib(
        10_000, 4096, 512
    )


def test_each_tensor_parallel_rank_adds_a_worker_process() -> None:
    assert fit.process_overhead_gib(1) == fit.PROCESS_OVERHEAD_GIB
    assert fit.process_overhead_gib(2) == fit.PROCESS_OVERHEAD_GIB + fit.PROCESS_OVERHEAD_PER_EXTRA_RANK_GIB


def _budget(memory_gib: float, vcpu: int) -> fit.NodeBudget:
    return fit.NodeBudget.for_instance(
        memory_gib=memory_gib, vcpu=vcpu, architecture="arm64", max_pods=58, loadgen_mib=1152
    )


def test_kv_cache_is_clamped_to_what_fits_and_says_so() -> None:
    shape = load_model_shape("local/tiny-llama", STORE)
    plan = fit.plan_fit(
        shape,
        budget=_budget(16, 4),
        vcpu=4,
        tensor_parallel_size=1,
        numa_nodes=1,
        generation="graviton4",
        context_len=2048,
        concurrency=100_000,
    )
    requested = shape.kv_bytes_per_token() * 2048 * 100_000 / GIB
    room = plan.usable_gib - plan.weights_gib - plan.overhead_gib - plan.activation_gib
    assert plan.fits
    assert plan.kv_requested_gib == pytest.approx(requested)
    assert plan.kv_cache_gib == math.floor(room) < requested
    assert plan.max_full_context_sequences == plan.kv_cache_gib * GIB // (shape.kv_bytes_per_token() * 2048)
    assert any("KV cache clamped" in w for w in plan.warnings)


def test_kv_cache_is_what_was_asked_when_it_fits() -> None:
    shape = load_model_shape("local/tiny-llama", STORE)
    plan = fit.plan_fit(
        shape,
        budget=_budget(64, 8),
        vcpu=8,
        tensor_parallel_size=1,
        numa_nodes=1,
        generation="graviton4",
        context_len=2048,
        concurrency=1024,
    )
    assert plan.kv_cache_gib == math.ceil(shape.kv_bytes_per_token() * 2048 * 1024 / GIB) == 4
    assert plan.warnings == []


def test_bandwidth_advisory_scales_with_the_share_of_a_socket() -> None:
    full = advisory("graviton4", vcpu=192, numa_nodes=2, weights_bytes=16 * 10**9)
    quarter = advisory("graviton4", vcpu=24, numa_nodes=1, weights_bytes=16 * 10**9)
    assert full.gbps == pytest.approx(2 * 538)
    assert quarter.gbps == pytest.approx(538 / 4)
    assert quarter.single_stream_tokens_per_s == pytest.approx(538 / 4 / 16)
    assert "memory-bandwidth bound" in str(quarter)
    unknown = advisory("graviton5", vcpu=64, numa_nodes=2, weights_bytes=10**9)
    assert unknown.gbps is None and "no published bandwidth figure" in str(unknown)


@pytest.mark.parametrize(
    ("model", "published", "rel"),
    [
        # Published parameter counts; the Qwen models' q/k/v biases and Qwen3's q/k norms are not counted.
        ("meta-llama/Llama-3.1-8B", 8_030_261_248, 0),
        ("meta-llama/Llama-3.1-8B-Instruct", 8_030_261_248, 0),
        ("meta-llama/Llama-3.1-70B-Instruct", 70_553_706_496, 0),
        ("mistralai/Mixtral-8x7B-v0.1", 46_702_792_704, 0),
        ("Qwen/Qwen3-30B-A3B", 30_532_122_624, 1e-6),
        ("Qwen/Qwen2.5-0.5B-Instruct", 494_032_768, 1e-4),
        ("Qwen/Qwen2.5-7B-Instruct", 7_615_616_512, 1e-4),
    ],
)
def test_parameter_counts_of_real_configs(model: str, published: int, rel: float) -> None:
    assert load_model_shape(model, STORE).total_params() == pytest.approx(published, rel=rel, abs=0)


def test_real_config_kv_and_moe_facts() -> None:
    llama = load_model_shape("meta-llama/Llama-3.1-8B", STORE)
    assert llama.kv_bytes_per_token() == 32 * 8 * 128 * 2 * 2 == 131072
    qwen3 = load_model_shape("Qwen/Qwen3-30B-A3B", STORE)
    assert qwen3.is_moe and qwen3.num_experts == 128 and qwen3.head_dim == 128
    assert qwen3.active_params() == pytest.approx(3.3e9, rel=0.03)  # "A3B": ~3.3B active
    assert qwen3.kv_bytes_per_token() == 48 * 4 * 128 * 2 * 2
    mixtral = load_model_shape("mistralai/Mixtral-8x7B-v0.1", STORE)
    assert mixtral.active_params() == pytest.approx(12.9e9, rel=0.01)  # top-2 of 8 experts
    assert mixtral.weight_bytes() == mixtral.total_params() * 2  # memory counts every expert


def test_deepseek_style_moe_counts_shared_experts_and_leading_dense_layers() -> None:
    cfg = {
        "architectures": ["DeepseekV2ForCausalLM"],
        "hidden_size": 4,
        "num_hidden_layers": 3,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "intermediate_size": 32,
        "moe_intermediate_size": 8,
        "n_routed_experts": 4,
        "num_experts_per_tok": 2,
        "n_shared_experts": 2,
        "first_k_dense_replace": 1,
        "vocab_size": 10,
        "tie_word_embeddings": False,
    }
    shape = parse_config(cfg, "deepseek-toy")
    attention = 4 * 4 + 2 * 4 * 4 + 4 * 4  # q, k+v, o with head_dim 2 x 2 heads
    dense_mlp = 3 * 4 * 32
    shared = 3 * 4 * (2 * 8)  # two shared experts of the routed width
    moe_all = 4 * 3 * 4 * 8 + shared + 4 * 4  # four routed experts, the shared ones, the router
    moe_active = 2 * 3 * 4 * 8 + shared + 4 * 4
    assert shape.linear_params() == 3 * attention + dense_mlp + 2 * moe_all
    assert shape.linear_params(active=True) == 3 * attention + dense_mlp + 2 * moe_active


def test_a_checkpoint_is_planned_at_the_bits_its_format_stores() -> None:
    """The real checkpoints' configs (llmcompressor wrote them here: tests/data/model_configs/local--*).
    Compressed-tensors' "int-quantized" keeps a 4-bit weight in a byte, "pack-quantized" packs it. On disk
    (benchmarks/RESULTS.md): W8A8 156 MiB, W4A8 159 MiB, W4A16 108 MiB."""
    shapes = {s: load_model_shape(f"local/smollm2-135m{s}", STORE) for s in ("", "-w8a8", "-w4a8", "-w4a16")}
    bf16 = shapes[""]
    other = bf16.total_params() - bf16.linear_params()
    assert shapes["-w4a8"].quantization is not None and shapes["-w4a8"].quantization.scheme == "W4A8"
    one_byte = bf16.linear_params() + other * 2
    assert shapes["-w4a8"].weight_bytes() == shapes["-w8a8"].weight_bytes() == one_byte
    assert shapes["-w4a16"].weight_bytes() == bf16.linear_params() // 2 + other * 2
