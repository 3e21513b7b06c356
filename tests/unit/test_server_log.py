"""What a vLLM 0.32 server's log says it served (accelbench.core.server_log), on lines these servers printed
here: the W8A8, W4A8 and W4A16 checkpoints of the real model, and the bf16 one."""

from __future__ import annotations

from accelbench.core.server_log import UNQUANTIZED, reported_quantization

ENGINE = (
    "(EngineCore pid=15090) INFO 12-03 18:12:14 [core.py:133] Initializing a V1 LLM engine (v0.32.0) "
    "with config: model='/tmp/w8a8', speculative_config=None, tokenizer='/tmp/w8a8', "
    "dtype=torch.bfloat16, max_seq_len=1024, quantization={}, quantization_config=None, "
    "enforce_eager=True, kv_cache_dtype=auto, device_config=cpu\n"
)
W8A8 = (
    "(EngineCore pid=15090) INFO 12-03 18:12:14 [__init__.py:846] Selected CPUInt8ScaledMMLinearKernel for "
    "CompressedTensorsW8A8Int8\n"
)
W4A16 = (
    "(EngineCore pid=15434) INFO 12-03 18:13:36 [__init__.py:923] Using CPUWNA16LinearKernel for "
    "mixed-precision linear\n"
    "(EngineCore pid=15434) INFO 12-03 18:13:36 [compressed_tensors_wNa16.py:138] Using "
    "CPUWNA16LinearKernel for CompressedTensorsWNA16\n"
)
NUMA = (
    "[W1203 14:50:17.477096747 utils.cpp:68] Warning: NUMA binding: Using MEMBIND policy for memory "
    "allocation on the NUMA nodes (0). Memory allocations will be strictly bound to these NUMA nodes. "
    "(function init)\n"
)


def test_the_scheme_and_its_kernel_are_read_from_the_log() -> None:
    log = ENGINE.format("compressed-tensors") + NUMA + W8A8 + W8A8  # logged again: said once
    assert reported_quantization(log) == "CompressedTensorsW8A8Int8 (CPUInt8ScaledMMLinearKernel)"
    # "for mixed-precision linear" is not a scheme: only the line naming one counts.
    assert reported_quantization(ENGINE.format("compressed-tensors") + W4A16) == (
        "CompressedTensorsWNA16 (CPUWNA16LinearKernel)"
    )


def test_an_unquantized_server_says_none_and_a_log_that_says_nothing_is_unknown() -> None:
    assert reported_quantization(ENGINE.format("None") + NUMA) == UNQUANTIZED
    assert reported_quantization(ENGINE.format("fp8")) == "fp8"  # a method with no scheme line
    assert reported_quantization(NUMA) is None
    assert reported_quantization("") is None
