"""What the Neuron vLLM DLC needs from its server command, per vLLM line, and which instance families can
run which line. The DLC has had three lines, each started differently:

- vLLM < 0.10 (DLC 0.7.2, 0.9.1): AWS's vLLM V0 fork on NxD Inference. Started with `--device neuron` and
  `VLLM_NEURON_FRAMEWORK=neuronx-distributed-inference` (NxD Inference vLLM user guide, V0/legacy:
  https://awsdocs-neuron.readthedocs-hosted.com/en/latest/libraries/nxd-inference/developer_guides/vllm-user-guide.html;
  DLC quickstart for the 0.9.1 image, SDK 2.25:
  https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.1/containers/get-started/quickstart-configure-deploy-dlc.html).
  vLLM deprecated `--device` (vllm-project/vllm#18399) and removed it in 0.10.0 (vllm-project/vllm#21349): a
  later server refuses the argument.
- 0.10 <= vLLM < 0.21 (DLC 0.11.0, 0.13.0, 0.16.0): vLLM V1 with the vllm-neuron plugin on NxD Inference.
  Its platform asserts that a block size is given when prefix caching is on (vLLM V1's default) and
  otherwise sets the block size to max_model_len (contiguous KV cache), so the server is started with
  `--no-enable-prefix-caching`, as every NxD Inference example does (vLLM user guide for NxD Inference:
  https://awsdocs-neuron.readthedocs-hosted.com/en/latest/libraries/nxd-inference/developer_guides/vllm-user-guide-v1.html;
  vllm-project/vllm-neuron vllm_neuron/platform.py `check_and_update_config`).
- vLLM >= 0.21 (DLC 0.21.0.1.0.0 and later, vllm-neuron 1.x on TorchNeuron, Neuron SDK 2.31+): Trn2 and
  Trn3 only. Its worker maps EFA interfaces at start and fails on a host (or pod) without EFA unless
  `NEURON_SKIP_EFA_AFFINITY=1` (DLC quickstart, SDK 2.32:
  https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/deploy/environments/quickstart-deploy-dlc.html).

In every line `--max-num-seqs` is the batch the model is compiled for (NxD Inference sets
`batch_size = max_num_seqs`) and `--tensor-parallel-size` counts NeuronCores (`tp_degree`), which the
planner sets. Not set on purpose: `NEURON_RT_VISIBLE_CORES` (the device plugin gives the container whole
devices, `aws.amazon.com/neuron`), and `NEURON_COMPILED_ARTIFACTS` (a pod compiles afresh into the model's
directory; a path kept between pods would load artifacts compiled for another configuration without
recompiling, as the NxD Inference guide warns).
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

DEVICE_ARG_REMOVED = Version("0.10.0")  # vllm-project/vllm#21349
NATIVE_PLUGIN = Version("0.21.0")  # vllm-neuron 1.0.0 (Neuron SDK 2.31), Trn2/Trn3 only

# Inferentia2 and Trainium1 have NeuronCore-v2. From vLLM 0.21 the DLC targets Trn2 and Trn3 only; the newest
# line for NeuronCore-v2 is the 0.16 DLC: "This tutorial is compatible with Trn2 and Trn3 instances only. If
# you are using Trn1 instances, use the legacy vLLM 0.16 DLC instead."
# https://awsdocs-neuron.readthedocs-hosted.com/en/v2.31.1/deploy/environments/quickstart-deploy-dlc.html
# (the SDK 2.32 page: Trn2 and Trn3 only, "requires the vLLM 0.21+ DLC", same path under /en/v2.32.0/;
# NxD Inference on Inf2/Trn1 stays at Neuron SDK 2.31, maintenance mode only:
# https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/announcements/neuron2.x/announce-eos-nxdi-nxd-core-inference.html)
NEURON_CORE_V2_FAMILIES = frozenset({"inf2", "trn1", "trn1n"})
NEURON_CORE_V2_LAST_LINE = "0.16"
# vLLM on Neuron needs NeuronCore-v2 or later ("Accelerator: NeuronCore_v2 (in trn1/inf2 instances)",
# https://docs.vllm.ai/en/v0.6.4/getting_started/neuron-installation.html); Inferentia1 has NeuronCore-v1.
NO_VLLM_FAMILIES = frozenset({"inf1"})


def _semver(version: str) -> Version:
    return Version(version.removeprefix("v"))


def neuron_support_problem(instance_family: str, version: str) -> str | None:
    """Why an instance family cannot run the Neuron vLLM DLC of a vLLM version; None if nothing known
    stands in the way (a family not named here, e.g. trn2, is not refused)."""
    family = instance_family.lower()
    if family in NO_VLLM_FAMILIES:
        return f"{family} (Inferentia1, NeuronCore-v1) cannot run vLLM: the Neuron DLC needs NeuronCore-v2+"
    try:
        semver = _semver(version)
    except InvalidVersion:
        return f"{version!r} is not a vLLM version"
    if family in NEURON_CORE_V2_FAMILIES and semver >= NATIVE_PLUGIN:
        return (
            f"{family} (NeuronCore-v2) cannot run the vLLM {version} Neuron DLC: from vLLM {NATIVE_PLUGIN} "
            f"the DLC targets Trn2 and Trn3 only; the newest line for Inf2 and Trn1 is the vLLM "
            f"{NEURON_CORE_V2_LAST_LINE} DLC"
        )
    return None


def neuron_args(version: str) -> list[str]:
    """The `vllm serve` arguments the Neuron DLC of `version` needs beyond the common ones and the compiled
    batch (`--max-num-seqs`, the Neuron tier's server field)."""
    semver = _semver(version)
    if semver < DEVICE_ARG_REMOVED:
        return ["--device", "neuron"]
    if semver < NATIVE_PLUGIN:
        return ["--no-enable-prefix-caching"]
    return []


def neuron_env(version: str) -> dict[str, str]:
    """The environment the Neuron DLC of `version` needs."""
    semver = _semver(version)
    if semver < DEVICE_ARG_REMOVED:
        return {"VLLM_NEURON_FRAMEWORK": "neuronx-distributed-inference"}
    if semver >= NATIVE_PLUGIN:
        return {"NEURON_SKIP_EFA_AFFINITY": "1"}  # a benchmark pod gets no EFA device
    return {}
