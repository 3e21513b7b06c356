"""A node's copy of a model's weights, for a runtime that cannot stream them (issue 49, point 2: the Neuron
tier's DLC has no Run:ai streamer). A benchmark pod's `weights` init container runs this before its server
starts: the first pod on a node downloads the folder from object storage, the next ones on that node find it
there (a hostPath folder, `runtime.recipes.cached_weights`) and download nothing.

The copy is whole or absent: the files land in a `.partial` folder beside it, which is renamed into place
once every file is there, with a manifest of what was copied (each object's size and ETag). A copy is reused
only while the bucket still holds exactly what its manifest lists, so replaced weights are fetched again.
Two pods on one node wait for each other on a lock file instead of downloading twice.

Run: python -m accelbench.loadgen.weights_cache s3://bucket/models/<model id> <folder>
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import posixpath
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
MANIFEST = ".accelbench-weights.json"  # inside a whole copy: what it holds, and from where


@dataclass(frozen=True)
class Fetched:
    uri: str
    folder: Path
    files: int
    bytes: int
    seconds: float
    cached: bool  # found whole on the node: nothing downloaded

    def describe(self) -> str:
        how = "in the node's cache" if self.cached else f"downloaded in {self.seconds:.1f} s"
        return f"{self.uri}: {self.files} files, {self.bytes / 2**30:.2f} GiB, {how} ({self.folder})"


def _objects(fs: Any, root: str) -> dict[str, dict[str, Any]]:
    """Every object under `root`, by its path relative to it: size and ETag (what a copy is checked by)."""
    found = fs.find(root, detail=True, withdirs=False)
    objects = {}
    for path, info in found.items():
        relative = posixpath.relpath(path, root)
        if relative.startswith("..") or relative == ".":
            continue
        objects[relative] = {"size": int(info.get("size") or 0), "etag": str(info.get("ETag") or "")}
    return objects


def _manifest(folder: Path) -> dict[str, Any] | None:
    try:
        loaded = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) else None


def fetch(uri: str, folder: Path) -> Fetched:
    """`uri`'s objects as files under `folder`, unless a whole copy of the same objects is already there."""
    from fsspec.core import url_to_fs

    from accelbench.lake.store import storage_options

    started = time.monotonic()
    fs, root = url_to_fs(uri, **storage_options(uri))
    root = root.rstrip("/")
    objects = _objects(fs, root)
    if not objects:
        raise FileNotFoundError(f"{uri} holds no files: upload the model's folder there")
    size = sum(o["size"] for o in objects.values())
    folder.parent.mkdir(parents=True, exist_ok=True)
    with (folder.parent / f".{folder.name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another pod on this node fetching it: wait, then use its copy
        held = _manifest(folder)
        if held is not None and held.get("uri") == uri and held.get("objects") == objects:
            return Fetched(uri, folder, len(objects), size, time.monotonic() - started, cached=True)
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        for relative in sorted(objects):
            target = partial / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            fs.get_file(f"{root}/{relative}", str(target))
            log.info("weights: %s (%d bytes)", relative, objects[relative]["size"])
        manifest = {"uri": uri, "objects": objects, "fetched_at": time.time()}
        (partial / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
        shutil.rmtree(folder, ignore_errors=True)  # a stale or broken copy
        os.replace(partial, folder)
    return Fetched(uri, folder, len(objects), size, time.monotonic() - started, cached=False)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or not args[0].startswith("s3://"):
        print("usage: python -m accelbench.loadgen.weights_cache s3://bucket/key FOLDER", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    try:
        fetched = fetch(args[0], Path(args[1]))
    except Exception as exc:  # the init container's log says why; the pod fails before its server starts
        log.error("weights: could not copy %s to %s: %s: %s", args[0], args[1], type(exc).__name__, exc)
        return 1
    log.info("weights: %s", fetched.describe())
    return 0


if __name__ == "__main__":
    sys.exit(main())
