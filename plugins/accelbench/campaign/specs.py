"""Planning, stage 4: make the specs. One ServerSpec per sized instance type (its tier sets the dtype and
its own fields), and one BenchmarkSpec per workload on it."""

from __future__ import annotations

import re

from accelbench.campaign.check import Checked
from accelbench.campaign.load import for_workload
from accelbench.campaign.request import CampaignRequest
from accelbench.campaign.size import Sized
from accelbench.campaign.weights import stream_id, weights_prefix, weights_uri
from accelbench.core.spec import BenchmarkSpec, LoadPlan, ServerSpec
from accelbench.sizing.fit import GIB
from accelbench.sizing.model_config import ModelShape


def served_name(req: CampaignRequest) -> str:
    """Set once, used by the server (--served-model-name) and by the load generator."""
    if req.served_model_name:
        return req.served_model_name
    return re.sub(r"[^A-Za-z0-9._-]+", "-", req.model.rstrip("/").split("/")[-1]).strip("-") or "model"


def server_spec(
    req: CampaignRequest, shape: ModelShape, load: LoadPlan, sized: Sized, model_id: str | None = None
) -> ServerSpec:
    tier, spec = sized.placed.tier, sized.placed.spec
    return ServerSpec(
        runtime=tier.runtime,
        version=sized.build.version,
        image=sized.image,
        image_digest=sized.build.digest,
        model=req.model,
        model_id=model_id,
        weights_uri=weights_uri(stream_id(req.model), weights_prefix()),
        model_revision=req.model_revision,
        served_model_name=served_name(req),
        dtype=tier.dtype(req),
        quantization=shape.quantization.method if shape.quantization else None,
        kv_cache_dtype=req.kv_cache_dtype,
        tensor_parallel_size=sized.ranks,
        kv_cache_gib=sized.fit.kv_cache_gib,
        max_model_len=req.context_len,
        instance_type=sized.placed.name,
        accelerator_type=tier.name,
        accelerator_count=spec.accelerator_count,
        vcpu=spec.vcpu,
        server_cpu=sized.budget.server_cpu,
        server_memory_mib=sized.budget.server_memory_mib,
        model_weights_gib=round(shape.weight_bytes() / GIB, 3),
        extra_engine_args=tuple(req.extra_engine_args),
        tier_fields=tier.server_fields(req, load),
    )


def make_specs(
    req: CampaignRequest, checked: Checked, load: LoadPlan, sized: list[Sized], campaign_id: str
) -> list[BenchmarkSpec]:
    """A spec per sized type and workload, in the request's order of types, then of workloads."""
    assert checked.shape is not None  # a type is sized only with the model's shape
    specs = []
    for one in sized:
        server = server_spec(req, checked.shape, load, one, checked.model_id)
        for workload in checked.workloads:
            load_of = for_workload(req, load, workload)
            specs.append(BenchmarkSpec(server=server, load=load_of, campaign_id=campaign_id))
    return specs
