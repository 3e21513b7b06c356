"""A stand-in for the Kubernetes API server, on 127.0.0.1, for the benchmark pod's fault tests.

No cluster can run here (no kubelet, no container runtime), so this serves the part of the core/v1 API
that KubernetesPodOperator uses, over real HTTP and a real WebSocket (pod exec, v4.channel.k8s.io), with
documents shaped like the API server's: pods (create, get, list by label selector, patch, delete),
their log (followed), events, nodes. The provider's own client code runs unchanged against it.

A pod either never schedules (`mode="unschedulable"`: Pending, PodScheduled False with the scheduler's
message, a FailedScheduling event) or runs (`mode="run"`): scheduled and running at once, its main
container finishing when the test says so (`finish_on_follow`), then the XCom sidecar answers the
provider's exec with `on_finish(pod)` and stops, and the pod succeeds.

It refuses what a real API server refuses, so a malformed pod fails the test that sends it. Every pod it
is sent (a create, and the result of every patch) is validated strictly (unknown fields, wrong types,
missing required fields) with the schemas `kubernetes-validate` bundles for each of `K8S_VERSIONS`, plus
the API server's own checks that no schema carries (names, label syntax, quantities, enums, duplicate
names, mounts of undeclared volumes, probes on plain init containers, immutable fields on patch). A
refused object is answered as the API server answers: HTTP 422, a `Status` with reason `Invalid`, the
field paths and messages in `details.causes`. Every refusal is also kept in `FakeKubeAPI.rejections`.

Two documented differences from a real server: it answers schema failures (unknown fields, wrong types)
with 422 Invalid for every client, where a real server answers a type error with 400 BadRequest and drops
an unknown field with a warning unless the client asks for `fieldValidation=Strict`; and a pod must be
valid for *every* version in `K8S_VERSIONS` (the clusters this project supports), not only for one.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import random
import re
import threading
import traceback
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import referencing
from aiohttp import WSMsgType, web
from kubernetes_validate.utils import all_versions, major_minor, schema_contents

NODE = "ip-10-0-7-21.us-east-1.compute.internal"
SCHEDULER_SAID = (
    "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
    "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
)
# The Kubernetes versions every object must be valid for (the EKS versions this project supports).
K8S_VERSIONS: tuple[str, ...] = ("1.33", "1.34", "1.35", "1.36", "1.37")
POD_SCHEMA = "pod-v1.json"
EVENT_SCHEMA, NODE_SCHEMA = "event-v1.json", "node-v1.json"
# A pod's start-up as the API keeps it, in whole seconds after its creation (`FakeKubeAPI.timeline`):
# Karpenter launches a node for it, the scheduler binds it there, the kubelet pulls the server's image (for
# PULL_S by its own clock) and starts the server, and once the server's startup probe passes, the load
# generator. A pod with an init container that runs to completion before the server (the node's weight cache)
# runs it from weights_started to weights_finished. The pod's creation is back-dated by the whole timeline, so
# that no served time is in the future.
TIMELINE = {
    "node_created": 38,
    "scheduled": 71,
    "weights_started": 72,
    "weights_finished": 90,
    "pulled": 95,
    "server_started": 96,
    "loadgen_started": 151,
}
PULL_S = 22.6
NODECLAIM = "accelbench-cpu-x7k2p"
DELETE_OPTIONS_SCHEMA = "deleteoptions-meta-v1.json"


def _now() -> str:
    return _stamp(datetime.now(UTC))


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _selected(labels: dict[str, str], selector: str) -> bool:
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = term.split("=", 1)
            if labels.get(key) != value.lstrip("="):
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


# ---- strict schema validation (kubernetes-validate's schemas, compiled once per version) --------------


@dataclass(frozen=True)
class Cause:
    """One entry of a Status's `details.causes`: `field` is the API server's path (`spec.containers[0]`)."""

    reason: str
    message: str
    field: str

    def as_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.field}

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


@cache
def _validator(version: str, schema_file: str) -> jsonschema.protocols.Validator:
    """kubernetes-validate's strict schema for `schema_file` at exactly `version`, built the way its
    `validate(..., strict=True)` builds it, once. No silent fallback to an older bundled schema."""
    bundled = {major_minor(v): v for v in all_versions()}
    if version not in bundled:
        raise LookupError(
            f"kubernetes-validate bundles no schemas for Kubernetes {version}: {sorted(bundled)}"
        )
    folder = f"kubernetes-json-schema/v{bundled[version]}-local-strict"
    schema = schema_contents(f"{folder}/{schema_file}", version)
    definitions = schema_contents(f"{folder}/_definitions.json", version)
    registry = referencing.Registry().with_resources(
        [
            (schema["$id"], referencing.Resource.from_contents(schema)),
            (definitions["$id"], referencing.Resource.from_contents(definitions)),
        ]
    )
    return jsonschema.Draft202012Validator(schema, registry=registry)


def _path(parts: Iterable[Any]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<root>"


def _field(error: jsonschema.ValidationError) -> str:
    """The API server's name for where `error` is: `spec.containers[0].ports[0]`, a map's key in brackets
    (`spec.nodeSelector[karpenter.sh/nodepool]`), told apart from a field by the schema path walked."""
    data, schema = list(error.absolute_path), list(error.absolute_schema_path)
    out, d, i = "", 0, 0
    while d < len(data) and i < len(schema):
        token = schema[i]
        if token == "properties":
            out += f".{data[d]}" if out else str(data[d])
            d, i = d + 1, i + 2
        elif token in ("additionalProperties", "items", "patternProperties", "prefixItems"):
            out += f"[{data[d]}]"
            d, i = d + 1, i + (2 if token in ("patternProperties", "prefixItems") else 1)
        elif token in ("oneOf", "anyOf", "allOf"):
            i += 2
        else:
            i += 1
    if not out:
        return _path(data)
    rest = _path(data[d:]) if d < len(data) else ""
    return out + (rest if not rest or rest.startswith("[") else f".{rest}")


def _causes_of(error: jsonschema.ValidationError) -> list[tuple[str, str, str]]:
    """(field, reason, message) for one validator error, the field named down to the offending key."""
    where = _field(error)
    under = "" if where == "<root>" else f"{where}."
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = sorted(k for k in error.instance if k not in allowed)
        return [(f"{under}{k}", "FieldValueInvalid", f'unknown field "{k}": {error.message}') for k in extra]
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [k for k in error.validator_value if k not in error.instance]
        return [(f"{under}{k}", "FieldValueRequired", f"Required value: {error.message}") for k in missing]
    reason = {"type": "FieldValueTypeInvalid", "enum": "FieldValueNotSupported"}.get(
        str(error.validator), "FieldValueInvalid"
    )
    return [(where, reason, error.message)]


_VERDICTS: dict[tuple[str, str, str], tuple[tuple[str, str, str], ...]] = {}
SCHEMA_RUNS = [0]  # how many (manifest, version) validations really ran: the rest came from the cache


def schema_problems(
    manifest: dict[str, Any], schema_file: str = POD_SCHEMA, versions: Iterable[str] = K8S_VERSIONS
) -> list[Cause]:
    """What kubernetes-validate's strict schemas reject in `manifest`, for each version in `versions`: one
    cause per (field, message), naming the versions that reject it. Each distinct manifest is validated
    once per version (keyed by a digest of its canonical JSON), however often it is sent."""
    digest = hashlib.sha256(json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    found: dict[tuple[str, str, str], list[str]] = {}
    for version in versions:
        key = (schema_file, version, digest)
        if key not in _VERDICTS:
            SCHEMA_RUNS[0] += 1
            errors = _validator(version, schema_file).iter_errors(manifest)
            _VERDICTS[key] = tuple(c for e in errors for c in _causes_of(e))
        for cause in _VERDICTS[key]:
            found.setdefault(cause, []).append(version)
    return [
        Cause(reason, f"{message} (strict schema, Kubernetes {', '.join(vs)})", where)
        for (where, reason, message), vs in sorted(found.items())
    ]


# ---- what the API server checks beyond the schema (cheap ones) -----------------------------------------

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
QUANTITY = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")
_SUFFIX = {
    **{s: Decimal(1024) ** (i + 1) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
    **{"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1)},
    **{s: Decimal(1000) ** (i + 1) for i, s in enumerate(("k", "M", "G", "T", "P", "E"))},
}
ENUMS = {  # (where, field) -> the values the API server accepts
    ("spec", "restartPolicy"): {"Always", "OnFailure", "Never"},
    ("spec", "dnsPolicy"): {"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"},
    ("container", "imagePullPolicy"): {"Always", "IfNotPresent", "Never"},
    ("container", "restartPolicy"): {"Always", "OnFailure", "Never"},
    ("container", "terminationMessagePolicy"): {"File", "FallbackToLogsOnError"},
    ("port", "protocol"): {"TCP", "UDP", "SCTP"},
    ("toleration", "operator"): {"Exists", "Equal"},
    ("toleration", "effect"): {"NoSchedule", "PreferNoSchedule", "NoExecute"},
}


def parse_quantity(text: Any) -> Decimal | None:
    """A Kubernetes resource quantity (`190`, `1416Gi`, `500m`, `1e3`) as a number; None if malformed.
    A bare JSON number is a quantity too (the API server decodes `cpu: 2` as "2")."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        text = str(text)
    if not isinstance(text, str) or not QUANTITY.fullmatch(text):
        return None
    found = re.match(r"^([+-]?[\d.]+)(.*)$", text)
    assert found
    number, suffix = found.groups()
    try:
        if suffix[:1] in ("e", "E"):
            return Decimal(number + suffix)
        return Decimal(number) * _SUFFIX[suffix]
    except (InvalidOperation, KeyError):
        return None


def _key_problems(key: str, where: str) -> list[Cause]:
    prefix, _, name = key.rpartition("/")
    out = []
    if prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.fullmatch(prefix)):
        out.append(
            Cause(
                "FieldValueInvalid",
                f'Invalid value: "{key}": prefix part must be a DNS-1123 subdomain',
                where,
            )
        )
    if not name or len(name) > 63 or not QUALIFIED_NAME.fullmatch(name):
        out.append(
            Cause(
                "FieldValueInvalid",
                f'Invalid value: "{key}": name part must consist of alphanumeric characters, "-", "_" '
                'or ".", start and end with an alphanumeric character, and be at most 63 characters',
                where,
            )
        )
    return out


def _labels_problems(labels: Any, where: str) -> list[Cause]:
    if not isinstance(labels, dict):
        return []  # the schema names it
    out = []
    for key, value in labels.items():
        out += _key_problems(key, where)
        if isinstance(value, str) and (len(value) > 63 or not LABEL_VALUE.fullmatch(value)):
            out.append(
                Cause(
                    "FieldValueInvalid",
                    f'Invalid value: "{value}": a valid label must be an empty string or consist of '
                    'alphanumeric characters, "-", "_" or ".", start and end with an alphanumeric character, '
                    "and be at most 63 characters",
                    where,
                )
            )
    return out


def _enum(kind: str, obj: dict[str, Any], name: str, where: str) -> list[Cause]:
    value = obj.get(name)
    allowed = ENUMS[(kind, name)]
    if value is None or not isinstance(value, str) or value in allowed:
        return []
    supported = ", ".join(f'"{v}"' for v in sorted(allowed))
    return [
        Cause("FieldValueNotSupported", f'Unsupported value: "{value}": supported values: {supported}', where)
    ]


def _container_problems(c: dict[str, Any], where: str, volumes: set[str], init: bool) -> list[Cause]:
    out: list[Cause] = []
    name = c.get("name")
    if isinstance(name, str) and (len(name) > 63 or not DNS1123_LABEL.fullmatch(name)):
        out.append(
            Cause(
                "FieldValueInvalid",
                f'Invalid value: "{name}": must be a lowercase RFC 1123 label',
                f"{where}.name",
            )
        )
    if not c.get("image"):
        out.append(Cause("FieldValueRequired", "Required value", f"{where}.image"))
    for f in ("imagePullPolicy", "restartPolicy", "terminationMessagePolicy"):
        out += _enum("container", c, f, f"{where}.{f}")
    if init and c.get("restartPolicy") != "Always":
        for probe in ("livenessProbe", "readinessProbe", "startupProbe", "lifecycle"):
            if c.get(probe) is not None:
                out.append(
                    Cause(
                        "FieldValueForbidden",
                        "Forbidden: may not be set for init containers without restartPolicy=Always",
                        f"{where}.{probe}",
                    )
                )
    for i, port in enumerate(c.get("ports") or []):
        if not isinstance(port, dict):
            continue
        number = port.get("containerPort")
        if isinstance(number, int) and not 1 <= number <= 65535:
            out.append(
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {number}: must be between 1 and 65535, inclusive",
                    f"{where}.ports[{i}].containerPort",
                )
            )
        out += _enum("port", port, "protocol", f"{where}.ports[{i}].protocol")
    for i, env in enumerate(c.get("env") or []):
        if not isinstance(env, dict):
            continue
        if not env.get("name"):
            out.append(Cause("FieldValueRequired", "Required value", f"{where}.env[{i}].name"))
        if env.get("value") and env.get("valueFrom") is not None:
            out.append(
                Cause(
                    "FieldValueInvalid",
                    "Invalid value: may not be specified when `value` is not empty",
                    f"{where}.env[{i}].valueFrom",
                )
            )
    for i, mount in enumerate(c.get("volumeMounts") or []):
        if isinstance(mount, dict) and isinstance(mount.get("name"), str) and mount["name"] not in volumes:
            out.append(
                Cause(
                    "FieldValueNotFound", f'Not found: "{mount["name"]}"', f"{where}.volumeMounts[{i}].name"
                )
            )
    resources = c.get("resources") if isinstance(c.get("resources"), dict) else {}
    parsed: dict[str, dict[str, Decimal]] = {}
    for part in ("requests", "limits"):
        for res, qty in (resources.get(part) or {}).items() if isinstance(resources.get(part), dict) else ():
            value = parse_quantity(qty)
            here = f"{where}.resources.{part}.{res}"
            if value is None:
                out.append(
                    Cause(
                        "FieldValueInvalid",
                        f'Invalid value: "{qty}": must match the regular expression of a quantity',
                        here,
                    )
                )
            elif value < 0:
                out.append(
                    Cause(
                        "FieldValueInvalid",
                        f'Invalid value: "{qty}": must be greater than or equal to 0',
                        here,
                    )
                )
            else:
                parsed.setdefault(part, {})[res] = value
    for res, request in parsed.get("requests", {}).items():
        limit = parsed.get("limits", {}).get(res)
        if limit is not None and request > limit:
            out.append(
                Cause(
                    "FieldValueInvalid",
                    f'Invalid value: "{resources["requests"][res]}": must be less than or equal to '
                    f"{res} limit of {resources['limits'][res]}",
                    f"{where}.resources.requests",
                )
            )
    return out


def semantic_problems(pod: dict[str, Any]) -> list[Cause]:
    """The API server's own validation of a pod that the JSON schemas cannot express."""
    out: list[Cause] = []
    meta = pod.get("metadata") if isinstance(pod.get("metadata"), dict) else {}
    name = meta.get("name")
    if not name and not meta.get("generateName"):
        out.append(
            Cause("FieldValueRequired", "Required value: name or generateName is required", "metadata.name")
        )
    elif isinstance(name, str) and name and (len(name) > 253 or not DNS1123_SUBDOMAIN.fullmatch(name)):
        out.append(
            Cause(
                "FieldValueInvalid",
                f'Invalid value: "{name}": must be a lowercase RFC 1123 subdomain',
                "metadata.name",
            )
        )
    out += _labels_problems(meta.get("labels"), "metadata.labels")
    for key in meta.get("annotations") or {} if isinstance(meta.get("annotations"), dict) else ():
        out += _key_problems(key, "metadata.annotations")
    spec = pod.get("spec")
    if spec is None:
        return [*out, Cause("FieldValueRequired", "Required value", "spec.containers")]
    if not isinstance(spec, dict):
        return out  # the schema names it
    volumes: set[str] = set()
    for i, volume in enumerate(spec.get("volumes") or []):
        vname = volume.get("name") if isinstance(volume, dict) else None
        if not isinstance(vname, str):
            continue
        if vname in volumes:
            out.append(Cause("FieldValueDuplicate", f'Duplicate value: "{vname}"', f"spec.volumes[{i}].name"))
        elif len(vname) > 63 or not DNS1123_LABEL.fullmatch(vname):
            out.append(
                Cause(
                    "FieldValueInvalid",
                    f'Invalid value: "{vname}": must be a lowercase RFC 1123 label',
                    f"spec.volumes[{i}].name",
                )
            )
        volumes.add(vname)
    if not spec.get("containers"):
        out.append(Cause("FieldValueRequired", "Required value", "spec.containers"))
    names: set[str] = set()
    for group in ("initContainers", "containers", "ephemeralContainers"):
        for i, c in enumerate(spec.get(group) or []):
            if not isinstance(c, dict):
                continue
            where = f"spec.{group}[{i}]"
            if isinstance(c.get("name"), str):
                if c["name"] in names:
                    out.append(
                        Cause("FieldValueDuplicate", f'Duplicate value: "{c["name"]}"', f"{where}.name")
                    )
                names.add(c["name"])
            if group != "ephemeralContainers":
                out += _container_problems(c, where, volumes, init=group == "initContainers")
    for f in ("restartPolicy", "dnsPolicy"):
        out += _enum("spec", spec, f, f"spec.{f}")
    out += _labels_problems(spec.get("nodeSelector"), "spec.nodeSelector")
    for i, tol in enumerate(spec.get("tolerations") or []):
        if not isinstance(tol, dict):
            continue
        for f in ("operator", "effect"):
            out += _enum("toleration", tol, f, f"spec.tolerations[{i}].{f}")
        if tol.get("operator") == "Exists" and tol.get("value"):
            out.append(
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: \"{tol['value']}\": value must be empty when `operator` is 'Exists'",
                    f"spec.tolerations[{i}].operator",
                )
            )
    return out


# Pod updates may change only these parts of `spec` (the API server's rule, simplified: images, the
# active deadline, and tolerations that only add to the existing ones).
_MUTABLE_SPEC = (
    "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
    "`spec.tolerations` (only additions to existing tolerations)"
)


def _spec_without_mutables(spec: dict[str, Any]) -> dict[str, Any]:
    spec = copy.deepcopy(spec)
    spec.pop("activeDeadlineSeconds", None)
    spec.pop("tolerations", None)
    for group in ("containers", "initContainers"):
        for c in spec.get(group) or []:
            if isinstance(c, dict):
                c.pop("image", None)
    return spec


def update_problems(old: dict[str, Any], new: dict[str, Any]) -> list[Cause]:
    """What the API server refuses in an update of pod `old` to `new`: immutable metadata, most of `spec`."""
    out = []
    new_meta = new.get("metadata") if isinstance(new.get("metadata"), dict) else {}
    for f in ("name", "namespace", "uid", "creationTimestamp"):
        if old["metadata"].get(f) != new_meta.get(f):
            out.append(
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {json.dumps(new_meta.get(f))}: field is immutable",
                    f"metadata.{f}",
                )
            )
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") if isinstance(new.get("spec"), dict) else {}
    kept = [t for t in old_spec.get("tolerations") or [] if t not in (new_spec.get("tolerations") or [])]
    if _spec_without_mutables(old_spec) != _spec_without_mutables(new_spec) or kept:
        out.append(
            Cause(
                "FieldValueForbidden",
                f"Forbidden: pod updates may not change fields other than {_MUTABLE_SPEC}",
                "spec",
            )
        )
    return out


# ---- patches ----------------------------------------------------------------------------------------

_MERGE_KEYS = {  # strategic merge: lists merged by these keys (the core/v1 pod's patchMergeKey tags)
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "imagePullSecrets": "name",
    "resourceClaims": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "conditions": "type",
}


class PatchError(ValueError):
    """The patch itself cannot be applied: answered 422 (json-patch test failures) or 400."""


def merge_patch(target: Any, patch: Any, strategic: bool = False, name: str = "") -> Any:
    """RFC 7386 JSON merge patch; with `strategic`, lists with a merge key merge element by element (the
    API server's strategic merge patch for the fields in `_MERGE_KEYS`; no `$patch` directives)."""
    if strategic and isinstance(patch, list) and name in _MERGE_KEYS and isinstance(target, list):
        key = _MERGE_KEYS[name]
        merged = [copy.deepcopy(x) for x in target]
        for item in patch:
            if not isinstance(item, dict) or key not in item:
                raise PatchError(f"map: {item} does not contain declared merge key: {key}")
            at = next(
                (i for i, x in enumerate(merged) if isinstance(x, dict) and x.get(key) == item[key]), None
            )
            if at is None:
                merged.append(merge_patch({}, item, strategic))
            else:
                merged[at] = merge_patch(merged[at], item, strategic)
        return merged
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if strategic and any(isinstance(k, str) and k.startswith("$") for k in patch):
        raise PatchError("the stand-in does not implement strategic merge patch directives ($patch, ...)")
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value, strategic, key)
    return out


def _pointer(doc: Any, pointer: str) -> tuple[Any, str | int]:
    if not pointer.startswith("/"):
        raise PatchError(f"invalid JSON pointer {pointer!r}")
    *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in pointer[1:].split("/")]
    for part in parents:
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc, (last if isinstance(doc, dict) else (len(doc) if last == "-" else int(last)))


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902 JSON patch (add, remove, replace, move, copy, test)."""
    if not isinstance(ops, list):
        raise PatchError("a JSON patch must be a list of operations")
    doc = copy.deepcopy(doc)
    for op in ops:
        try:
            kind, path = op["op"], op["path"]
            if kind in ("move", "copy"):
                parent, at = _pointer(doc, op["from"])
                value = copy.deepcopy(parent[at])
                if kind == "move":
                    del parent[at]
                kind, op = "add", {"value": value}
            parent, at = _pointer(doc, path)
            if kind == "add" and isinstance(parent, list):
                parent.insert(at, op["value"])
            elif kind == "add":
                parent[at] = op["value"]
            elif kind == "remove":
                del parent[at]
            elif kind == "replace":
                if at not in (range(len(parent)) if isinstance(parent, list) else parent):
                    raise KeyError(at)  # replacing needs an existing value
                parent[at] = op["value"]
            elif kind == "test":
                if parent[at] != op["value"]:
                    raise PatchError(f"testing value {path} failed")
            else:
                raise PatchError(f"Unexpected kind: {kind}")
        except (KeyError, IndexError, ValueError, TypeError) as e:
            if isinstance(e, PatchError):
                raise
            raise PatchError(
                f"the server rejected our request due to an error in our request: {op}: {e!r}"
            ) from e
    return doc


PATCH_TYPES = {
    "application/merge-patch+json": lambda doc, patch: merge_patch(doc, patch),
    "application/strategic-merge-patch+json": lambda doc, patch: merge_patch(doc, patch, strategic=True),
    "application/json-patch+json": json_patch,
}


# ---- the server ----------------------------------------------------------------------------------------


@dataclass
class Rejection:
    """A request the stand-in refused, as the API server would have: what was sent and what it answered."""

    method: str
    path: str
    code: int
    reason: str
    message: str
    causes: list[Cause] = field(default_factory=list)
    body: Any = field(default=None, repr=False)  # what was sent (left out of the repr: a whole pod)

    @property
    def fields(self) -> list[str]:
        return [c.field for c in self.causes]


def status(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details is not None:
        doc["details"] = details
    return doc


class FakeKubeAPI:
    def __init__(self, mode: str = "run", versions: Iterable[str] = K8S_VERSIONS) -> None:
        self.mode = mode
        self.versions = tuple(versions)
        for version in self.versions:  # fail here, not in a handler, if a version's schemas are missing
            _validator(version, POD_SCHEMA)
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.created: dict[tuple[str, str], datetime] = {}
        self.timeline = dict(TIMELINE)
        self.state: dict[tuple[str, str], str] = {}
        self.calls: list[tuple[str, str]] = []
        self.rejections: list[Rejection] = []  # every request answered 4xx other than 404
        self.follows = 0  # log follow requests seen: one per attempt that watches a running pod
        # container name -> its log (e.g. a real vLLM server's), served with limitBytes honoured; a container
        # not listed logs the load generator's line
        self.container_logs: dict[str, str] = {}
        self.finish_on_follow: int | None = None  # the main container finishes at this follow request
        self.on_finish: Callable[[dict[str, Any]], dict[str, Any]] = lambda pod: {}
        self.xcom: dict[tuple[str, str], str] = {}
        self.errors: list[str] = []  # what on_finish raised
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self.port = 0

    # ---- lifecycle --------------------------------------------------------------------------

    def __enter__(self) -> FakeKubeAPI:
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        assert self._started.wait(10), "the fake API server did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.shutdown(), self._loop).result(10)
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        ns = "/api/v1/namespaces/{ns}"
        app.router.add_get(ns + "/pods", self._list_pods)
        app.router.add_post(ns + "/pods", self._create_pod)
        app.router.add_get(ns + "/pods/{name}", self._get_pod)
        app.router.add_patch(ns + "/pods/{name}", self._patch_pod)
        app.router.add_delete(ns + "/pods/{name}", self._delete_pod)
        app.router.add_get(ns + "/pods/{name}/log", self._log)
        app.router.add_get(ns + "/pods/{name}/exec", self._exec)
        app.router.add_post(ns + "/pods/{name}/exec", self._exec)
        app.router.add_get(ns + "/events", self._events)
        app.router.add_get("/api/v1/nodes/{name}", self._node)
        runner = self._runner = web.AppRunner(app, shutdown_timeout=1, access_log=None)
        self._loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # started: has a server
        self._started.set()
        self._loop.run_forever()

    def kubeconfig(self, path: Path) -> Path:
        path.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
            f"clusters: [{{name: fake, cluster: {{server: 'http://127.0.0.1:{self.port}'}}}}]\n"
            "users: [{name: fake, user: {token: not-a-secret}}]\n"
            "contexts: [{name: fake, context: {cluster: fake, user: fake}}]\n"
        )
        return path

    def count(self, method: str, suffix: str = "/pods") -> int:
        return sum(1 for m, p in self.calls if m == method and p.endswith(suffix))

    # ---- documents --------------------------------------------------------------------------

    def _status(self, key: tuple[str, str]) -> dict[str, Any]:
        state = self.state[key]
        if state == "unschedulable":
            return {
                "phase": "Pending",
                "qosClass": "Guaranteed",
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": SCHEDULER_SAID,
                        "lastTransitionTime": _now(),
                    }
                ],
            }
        at = self._at(key)

        def running(started: str) -> dict[str, Any]:
            return {"running": {"startedAt": at(started)}}

        def done(started: str) -> dict[str, Any]:
            ended = {"exitCode": 0, "reason": "Completed", "startedAt": at(started), "finishedAt": _now()}
            return {"terminated": ended}

        copied = {
            "terminated": {
                "exitCode": 0,
                "reason": "Completed",
                "startedAt": at("weights_started"),
                "finishedAt": at("weights_finished"),
            }
        }
        finished = state in ("finished", "succeeded")
        base = done("loadgen_started") if finished else running("loadgen_started")
        sidecar = done("loadgen_started") if state == "succeeded" else running("loadgen_started")

        def container(name: str, st: dict[str, Any]) -> dict[str, Any]:
            return {
                "name": name,
                "state": st,
                "ready": "running" in st,
                "restartCount": 0,
                "image": "x",
                "imageID": "x",
            }

        return {
            "phase": "Succeeded" if state == "succeeded" else "Running",
            "hostIP": "10.0.7.21",
            "podIP": "10.0.7.99",
            "startTime": at("scheduled"),
            "qosClass": "Guaranteed",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": at("scheduled")},
                {"type": "Ready", "status": "True", "lastTransitionTime": at("loadgen_started")},
            ],
            "initContainerStatuses": [
                *(
                    container(c["name"], copied)  # ran to completion before the server (e.g. `weights`)
                    for c in self.pods[key]["spec"].get("initContainers", [])
                    if c["name"] != "server" and c.get("restartPolicy") != "Always"
                ),
                container("server", running("server_started")),
            ],
            "containerStatuses": [container("base", base), container("airflow-xcom-sidecar", sidecar)],
        }

    def _at(self, key: tuple[str, str]) -> Callable[[str], str]:
        """The API's time of a moment of the pod's start-up (TIMELINE)."""
        created = self.created[key]
        return lambda moment: _stamp(created + timedelta(seconds=self.timeline[moment]))

    def _view(self, key: tuple[str, str]) -> dict[str, Any]:
        pod = json.loads(json.dumps(self.pods[key]))
        if self.state[key] != "unschedulable":
            pod["spec"]["nodeName"] = NODE
        pod["status"] = self._status(key)
        return pod

    @staticmethod
    def _not_found(name: str) -> web.Response:
        return web.json_response(
            status(404, "NotFound", f'pods "{name}" not found', {"name": name, "kind": "pods"}), status=404
        )

    def _refuse(
        self,
        request: web.Request,
        code: int,
        reason: str,
        message: str,
        body: Any = None,
        details: dict[str, Any] | None = None,
        causes: list[Cause] | None = None,
    ) -> web.Response:
        """Answer like the API server (a `Status`), and keep the refusal for the test to assert on."""
        causes = causes or []
        if causes:
            details = (details or {}) | {"causes": [c.as_dict() for c in causes]}
        self.rejections.append(Rejection(request.method, request.path, code, reason, message, causes, body))
        return web.json_response(status(code, reason, message, details), status=code)

    def _invalid(self, request: web.Request, name: str, causes: list[Cause], body: Any) -> web.Response:
        """422 Invalid, worded as the API server words it: `Pod "x" is invalid: field: message`."""
        listed = str(causes[0]) if len(causes) == 1 else "[" + ", ".join(map(str, causes)) + "]"
        return self._refuse(
            request,
            422,
            "Invalid",
            f'Pod "{name}" is invalid: {listed}',
            body,
            {"name": name, "group": "", "kind": "Pod"},
            causes,
        )

    def problems(self, pod: dict[str, Any]) -> list[Cause]:
        """Everything a real API server would refuse in `pod`, for every version in `self.versions`."""
        return schema_problems(pod, POD_SCHEMA, self.versions) + semantic_problems(pod)

    async def _body(self, request: web.Request) -> tuple[Any, web.Response | None]:
        raw = await request.read()
        if not raw:
            return None, None
        try:
            return json.loads(raw), None
        except ValueError as e:
            return None, self._refuse(
                request, 400, "BadRequest", f"the body of the request could not be decoded: {e}", raw
            )

    # ---- handlers ---------------------------------------------------------------------------

    def _record(self, request: web.Request) -> tuple[str, str]:
        self.calls.append((request.method, request.path))
        return request.match_info["ns"], request.match_info.get("name", "")

    async def _list_pods(self, request: web.Request) -> web.Response:
        ns, _ = self._record(request)
        selector = request.query.get("labelSelector", "")
        items = [
            self._view(key)
            for key, pod in self.pods.items()
            if key[0] == ns and _selected(pod["metadata"].get("labels") or {}, selector)
        ]
        return web.json_response(
            {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}
        )

    async def _create_pod(self, request: web.Request) -> web.Response:
        ns, _ = self._record(request)
        sent, refused = await self._body(request)
        if refused:
            return refused
        if not isinstance(sent, dict):
            return self._refuse(
                request, 400, "BadRequest", "the body of a pod create must be a JSON object", sent
            )
        pod = copy.deepcopy(sent)
        # As the API server does: the kind and version come from the URL when the body leaves them out.
        pod.setdefault("apiVersion", "v1")
        pod.setdefault("kind", "Pod")
        if (pod["apiVersion"], pod["kind"]) != ("v1", "Pod"):
            return self._refuse(
                request,
                400,
                "BadRequest",
                "the object provided is unrecognized (must be of type Pod): "
                f"{pod['kind']} in {pod['apiVersion']}",
                sent,
            )
        meta = pod.get("metadata")
        if meta is None:
            meta = pod["metadata"] = {}
        if isinstance(meta, dict) and meta.get("namespace") not in (None, "", ns):
            return self._refuse(
                request,
                400,
                "BadRequest",
                "the namespace of the provided object does not match the namespace sent on the request",
                sent,
            )
        if isinstance(meta, dict):
            meta["namespace"] = ns
        causes = self.problems(pod)
        if causes:
            name = (meta.get("name") or meta.get("generateName") or "") if isinstance(meta, dict) else ""
            return self._invalid(request, name, causes, sent)
        if not meta.get("name"):
            meta["name"] = meta["generateName"] + "".join(random.choices("bcdfghjklmnpqrstvwxz2456789", k=5))
        key = (ns, meta["name"])
        if key in self.pods:
            return self._refuse(
                request,
                409,
                "AlreadyExists",
                f'pods "{meta["name"]}" already exists',
                sent,
                {"name": meta["name"], "kind": "pods"},
            )
        created = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=max(self.timeline.values()))
        self.created[key] = created
        meta |= {"uid": str(uuid.uuid4()), "resourceVersion": "1", "creationTimestamp": _stamp(created)}
        pod.pop("status", None)  # the API server ignores a status sent on create
        self.pods[key] = pod
        self.state[key] = "unschedulable" if self.mode == "unschedulable" else "running"
        return web.json_response(self._view(key), status=201)

    async def _get_pod(self, request: web.Request) -> web.Response:
        key = self._record(request)
        if key not in self.pods:
            return self._not_found(key[1])
        return web.json_response(self._view(key))

    async def _patch_pod(self, request: web.Request) -> web.Response:
        key = self._record(request)
        if key not in self.pods:
            return self._not_found(key[1])
        patch, refused = await self._body(request)
        if refused:
            return refused
        kind = request.content_type
        if kind not in PATCH_TYPES:
            return self._refuse(
                request,
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format ({kind}) - accepted media types include: "
                + ", ".join(PATCH_TYPES),
                patch,
            )
        old = self.pods[key]
        try:
            new = PATCH_TYPES[kind](old, patch)
        except PatchError as e:
            return self._refuse(
                request, 422 if "testing value" in str(e) else 400, "BadRequest", str(e), patch
            )
        if not isinstance(new, dict):
            return self._refuse(request, 400, "BadRequest", "the patched object is not a JSON object", patch)
        new.pop("status", None)  # status is not changed through the pod itself
        sent_version = (
            (patch.get("metadata") or {}).get("resourceVersion") if isinstance(patch, dict) else None
        )
        if sent_version and sent_version != old["metadata"]["resourceVersion"]:
            return self._refuse(
                request,
                409,
                "Conflict",
                f'Operation cannot be fulfilled on pods "{key[1]}": the object has been modified; '
                "please apply your changes to the latest version and try again",
                patch,
                {"name": key[1], "kind": "pods"},
            )
        if isinstance(new.get("metadata"), dict):
            new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        causes = update_problems(old, new) + self.problems(new)
        if causes:
            return self._invalid(request, key[1], causes, patch)
        new["metadata"]["resourceVersion"] = str(int(old["metadata"]["resourceVersion"]) + 1)
        self.pods[key] = new
        return web.json_response(self._view(key))

    async def _delete_pod(self, request: web.Request) -> web.Response:
        key = self._record(request)
        options, refused = await self._body(request)
        if refused:
            return refused
        if options is not None:  # a DeleteOptions, decoded (and checked) before the pod is looked up
            if not isinstance(options, dict):
                return self._refuse(
                    request, 400, "BadRequest", "DeleteOptions must be a JSON object", options
                )
            filled = {"apiVersion": "v1", "kind": "DeleteOptions"} | options
            causes = schema_problems(filled, DELETE_OPTIONS_SCHEMA, self.versions)
            if causes:
                return self._refuse(
                    request, 400, "BadRequest", "; ".join(map(str, causes)), options, causes=causes
                )
        grace = request.query.get("gracePeriodSeconds")
        if grace is not None and not re.fullmatch(r"-?\d+", grace):
            return self._refuse(
                request, 400, "BadRequest", f'gracePeriodSeconds: invalid value "{grace}"', options
            )
        if key not in self.pods:
            return self._not_found(key[1])
        uid = ((options or {}).get("preconditions") or {}).get("uid")
        if uid and uid != self.pods[key]["metadata"]["uid"]:
            return self._refuse(
                request,
                409,
                "Conflict",
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
                f"{self.pods[key]['metadata']['uid']}",
                options,
            )
        view = self._view(key)
        del self.pods[key], self.state[key]
        return web.json_response(view)

    def _container_refused(self, request: web.Request, key: tuple[str, str]) -> web.Response | None:
        """The log and exec subresources need a container of the pod (named, unless there is only one)."""
        spec = self.pods[key]["spec"]
        main = [c["name"] for c in spec.get("containers") or []]
        init = [c["name"] for c in spec.get("initContainers") or []]
        wanted = request.query.get("container")
        if wanted is None and len(main) == 1:
            return None
        if wanted is None:
            return self._refuse(
                request,
                400,
                "BadRequest",
                f"a container name must be specified for pod {key[1]}, choose one of: [{' '.join(main)}] "
                f"or one of the init containers: [{' '.join(init)}]",
            )
        if wanted not in main + init:
            return self._refuse(
                request, 400, "BadRequest", f"container {wanted} is not valid for pod {key[1]}"
            )
        return None

    async def _log(self, request: web.Request) -> web.StreamResponse:
        key = self._record(request)
        if key not in self.pods:
            return self._not_found(key[1])
        if refused := self._container_refused(request, key):
            return refused
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f000Z")
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        if (logged := self.container_logs.get(request.query.get("container", ""))) is not None:
            limit = request.query.get("limitBytes")
            data = logged.encode()
            await response.write(data[: int(limit)] if limit else data)
            await response.write_eof()
            return response
        await response.write(f"{stamp} accelbench-loadgen: driving the levels\n".encode())
        if request.query.get("follow", "").lower() == "true" and self.state.get(key) == "running":
            self.follows += 1
            if self.finish_on_follow is not None and self.follows >= self.finish_on_follow:
                self.finish_on_follow = None
                try:  # the container's work, in a thread: the API keeps answering meanwhile
                    result = await asyncio.to_thread(self.on_finish, self.pods[key])
                    self.xcom[key] = json.dumps(result)
                except Exception:
                    self.errors.append(traceback.format_exc())
                self.state[key] = "finished"
            while self.state.get(key) == "running":  # the stream stays open while the container runs
                await asyncio.sleep(0.2)
            await response.write(f"{stamp} accelbench-loadgen: done\n".encode())
        await response.write_eof()
        return response

    async def _exec(self, request: web.Request) -> web.StreamResponse:
        key = self._record(request)
        if key not in self.pods:
            return self._not_found(key[1])
        if refused := self._container_refused(request, key):
            return refused
        ws = web.WebSocketResponse(protocols=("v4.channel.k8s.io",))
        await ws.prepare(request)
        command = " ".join(request.query.getall("command", []))
        if "return.json" in command:  # the provider reads the XCom file
            await ws.send_bytes(b"\x01" + self.xcom.get(key, "__airflow_xcom_result_empty__").encode())
        else:  # the provider stops the sidecar through stdin: then the pod has succeeded
            async for msg in ws:
                if msg.type in (WSMsgType.BINARY, WSMsgType.TEXT):
                    if key in self.state:
                        self.state[key] = "succeeded"
                    break
        await ws.send_bytes(b"\x03" + json.dumps({"metadata": {}, "status": "Success"}).encode())
        await ws.close()
        return ws

    def _event(self, key: tuple[str, str], n: int, reason: str, message: str, **how: Any) -> dict[str, Any]:
        """A core/v1 Event about the pod as the kubelet or scheduler writes it (`how`: when, container)."""
        ns, name = key
        when = self._at(key)(how["moment"]) if "moment" in how else _now()
        involved = {"kind": "Pod", "namespace": ns, "name": name, "apiVersion": "v1"}
        if "container" in how:
            involved["fieldPath"] = how["container"]
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{name}.{n:x}",
                "namespace": ns,
                "uid": f"ev-{name}-{n}",
                "resourceVersion": "2",
            },
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "type": how.get("type", "Normal"),
            "source": {"component": how.get("component", "kubelet")}
            | ({"host": NODE} if "component" not in how else {}),
            "count": 1,
            "firstTimestamp": when,
            "lastTimestamp": when,
        }

    def _pod_events(self, key: tuple[str, str]) -> list[dict[str, Any]]:
        if self.state[key] == "unschedulable":
            return [
                self._event(
                    key, 1, "FailedScheduling", SCHEDULER_SAID, type="Warning", component="default-scheduler"
                )
            ]
        image = next(c["image"] for c in self.pods[key]["spec"]["initContainers"] if c["name"] == "server")
        server = "spec.initContainers{server}"
        return [
            self._event(
                key,
                1,
                "Scheduled",
                f"Successfully assigned {key[0]}/{key[1]} to {NODE}",
                moment="scheduled",
                component="default-scheduler",
            ),
            self._event(key, 2, "Pulling", f'Pulling image "{image}"', moment="scheduled", container=server),
            self._event(
                key,
                3,
                "Pulled",
                f'Successfully pulled image "{image}" in {PULL_S}s ({PULL_S}s including waiting). '
                "Image size: 1843200412 bytes.",
                moment="pulled",
                container=server,
            ),
            self._event(
                key, 4, "Created", "Created container: server", moment="server_started", container=server
            ),
            self._event(
                key, 5, "Started", "Started container server", moment="server_started", container=server
            ),
            self._event(
                key,
                6,
                "Started",
                "Started container base",
                moment="loadgen_started",
                container="spec.containers{base}",
            ),
        ]

    def _served(self, doc: dict[str, Any], schema_file: str) -> dict[str, Any]:
        """`doc` as served, after the strict schemas' check (a shape Kubernetes would not write: an error)."""
        for cause in schema_problems(doc, schema_file):
            self.errors.append(f"served {doc.get('kind')} {doc['metadata'].get('name')}: {cause}")
        return doc

    async def _events(self, request: web.Request) -> web.Response:
        ns, _ = self._record(request)
        wanted = dict(
            part.split("=", 1) for part in request.query.get("fieldSelector", "").split(",") if "=" in part
        ).get("involvedObject.name")
        items = [
            self._served(event, EVENT_SCHEMA)
            for key in self.state
            if key[0] == ns and wanted in (None, key[1])
            for event in self._pod_events(key)
        ]
        return web.json_response(
            {"kind": "EventList", "apiVersion": "v1", "metadata": {"resourceVersion": "2"}, "items": items}
        )

    async def _node(self, request: web.Request) -> web.Response:
        """The node every pod runs on, launched by Karpenter for the newest pod (TIMELINE's node_created)."""
        self.calls.append((request.method, request.path))
        name = request.match_info["name"]
        labels = {
            "topology.kubernetes.io/zone": "us-east-1b",
            "karpenter.sh/capacity-type": "on-demand",
            "karpenter.sh/nodepool": "accelbench-cpu",
        }
        meta: dict[str, Any] = {"name": name, "labels": labels}
        if self.created:
            newest = max(self.created, key=lambda k: self.created[k])
            meta["creationTimestamp"] = self._at(newest)("node_created")
        meta["ownerReferences"] = [
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodeClaim",
                "name": NODECLAIM,
                "uid": "6f1c2d3e-0000-4000-8000-000000000001",
                "blockOwnerDeletion": True,
            }
        ]
        return web.json_response(
            self._served({"kind": "Node", "apiVersion": "v1", "metadata": meta}, NODE_SCHEMA)
        )
