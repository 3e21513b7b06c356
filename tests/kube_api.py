"""A stand-in for the Kubernetes API server, on 127.0.0.1, for the benchmark pod's fault tests.

No cluster can run here (no kubelet, no container runtime), so this serves the part of the core/v1 API
that KubernetesPodOperator uses, over real HTTP and a real WebSocket (pod exec, v4.channel.k8s.io), with
documents shaped like the API server's: pods (create, get, list by label selector, patch, delete),
their log (followed), events, nodes. The provider's own client code runs unchanged against it.

A pod either never schedules (`mode="unschedulable"`: Pending, PodScheduled False with the scheduler's
message, a FailedScheduling event) or runs (`mode="run"`): scheduled and running at once, its main
container finishing when the test says so (`finish_on_follow`), then the XCom sidecar answers the
provider's exec with `on_finish(pod)` and stops, and the pod succeeds.
"""

from __future__ import annotations

import asyncio
import json
import threading
import traceback
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiohttp import WSMsgType, web

NODE = "ip-10-0-7-21.us-east-1.compute.internal"
SCHEDULER_SAID = (
    "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
    "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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


class FakeKubeAPI:
    def __init__(self, mode: str = "run") -> None:
        self.mode = mode
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.state: dict[tuple[str, str], str] = {}
        self.calls: list[tuple[str, str]] = []
        self.follows = 0  # log follow requests seen: one per attempt that watches a running pod
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
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
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
        running = {"running": {"startedAt": _now()}}
        done = {
            "terminated": {"exitCode": 0, "reason": "Completed", "startedAt": _now(), "finishedAt": _now()}
        }
        base = done if state in ("finished", "succeeded") else running
        sidecar = done if state == "succeeded" else running

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
            "startTime": _now(),
            "qosClass": "Guaranteed",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": _now()},
                {"type": "Ready", "status": "True", "lastTransitionTime": _now()},
            ],
            "initContainerStatuses": [container("server", running)],
            "containerStatuses": [container("base", base), container("airflow-xcom-sidecar", sidecar)],
        }

    def _view(self, key: tuple[str, str]) -> dict[str, Any]:
        pod = json.loads(json.dumps(self.pods[key]))
        if self.state[key] != "unschedulable":
            pod["spec"]["nodeName"] = NODE
        pod["status"] = self._status(key)
        return pod

    @staticmethod
    def _not_found(name: str) -> web.Response:
        return web.json_response(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": f'pods "{name}" not found',
                "reason": "NotFound",
                "details": {"name": name, "kind": "pods"},
                "code": 404,
            },
            status=404,
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
        pod = await request.json()
        meta = pod.setdefault("metadata", {})
        meta |= {
            "namespace": ns,
            "uid": str(uuid.uuid4()),
            "resourceVersion": "1",
            "creationTimestamp": _now(),
        }
        key = (ns, meta["name"])
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
        patch = await request.json()
        labels = (patch.get("metadata") or {}).get("labels") or {}
        self.pods[key]["metadata"].setdefault("labels", {}).update(labels)
        return web.json_response(self._view(key))

    async def _delete_pod(self, request: web.Request) -> web.Response:
        key = self._record(request)
        if key not in self.pods:
            return self._not_found(key[1])
        view = self._view(key)
        del self.pods[key], self.state[key]
        return web.json_response(view)

    async def _log(self, request: web.Request) -> web.StreamResponse:
        key = self._record(request)
        if key not in self.pods:
            return self._not_found(key[1])
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f000Z")
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
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

    async def _events(self, request: web.Request) -> web.Response:
        ns, _ = self._record(request)
        items = [
            {
                "metadata": {
                    "name": f"{name}.fs",
                    "namespace": ns,
                    "uid": f"ev-{name}",
                    "resourceVersion": "2",
                },
                "involvedObject": {"kind": "Pod", "namespace": ns, "name": name, "fieldPath": ""},
                "reason": "FailedScheduling",
                "message": SCHEDULER_SAID,
                "type": "Warning",
                "count": 1,
                "firstTimestamp": _now(),
                "lastTimestamp": _now(),
            }
            for (pns, name), state in self.state.items()
            if pns == ns and state == "unschedulable"
        ]
        return web.json_response(
            {"kind": "EventList", "apiVersion": "v1", "metadata": {"resourceVersion": "2"}, "items": items}
        )

    async def _node(self, request: web.Request) -> web.Response:
        self.calls.append((request.method, request.path))
        name = request.match_info["name"]
        labels = {"topology.kubernetes.io/zone": "us-east-1b", "karpenter.sh/capacity-type": "on-demand"}
        return web.json_response(
            {"kind": "Node", "apiVersion": "v1", "metadata": {"name": name, "labels": labels}}
        )
