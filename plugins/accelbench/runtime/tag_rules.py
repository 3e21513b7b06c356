"""Which image tags are releases of a runtime, and which vLLM version each one names.

Pure rules over tag names (no HTTP): the registry protocols (`dockerhub.py`, `oci.py`) list tags, these
rules choose among them. Where several tags name one version (the Neuron DLC is rebuilt for each Neuron
SDK), the tag of the highest rank is the release.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from packaging.version import InvalidVersion, Version


class NotARelease(ValueError):
    """A tag that names no release; the message says why (the listing logs it)."""


@dataclass(frozen=True)
class ReleaseTag:
    tag: str
    version: str  # as the tag spells it, without a leading v: 0.19.1, 0.17.0dev0
    rank: tuple[Version, ...] = ()  # among the tags of one version, the highest is the release

    @property
    def semver(self) -> Version:
        return Version(self.version)


class TagRule(Protocol):
    @property
    def label(self) -> str:
        """How a release tag looks, e.g. `v<version>-arm64` (for the logs)."""
        ...

    def parse(self, tag: str) -> ReleaseTag:
        """The release a tag names; NotARelease if it names none."""
        ...


def _version(text: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        raise NotARelease("not a semantic version") from None


@dataclass(frozen=True)
class VersionTags:
    """`v<version><suffix>` tags, as the vLLM images on Docker Hub are tagged."""

    suffix: str
    architecture: str  # the image whose digest stands for a tag that carries none of its own

    @property
    def label(self) -> str:
        return f"v<version>{self.suffix}"

    def parse(self, tag: str) -> ReleaseTag:
        match = re.fullmatch(rf"v(?P<version>\d+\.\d+\.\d+[0-9A-Za-z.+-]*?){re.escape(self.suffix)}", tag)
        if not match:
            raise NotARelease(f"not a {self.label} tag")
        _version(match["version"])  # e.g. v0.18.0-cu130 (a CUDA variant) names no version
        return ReleaseTag(tag, match["version"])


# The Neuron vLLM DLC: <vLLM>[.<vllm-neuron plugin>]-neuronx-py<Python>-sdk<Neuron SDK>-<OS>, e.g.
# 0.16.0-neuronx-py312-sdk2.31.1-ubuntu24.04 and 0.21.0.1.0.0-neuronx-py313-sdk2.31.0-ubuntu24.04
# (vLLM 0.21.0, vllm-neuron 1.0.0: "supports vLLM version 0.21.0; vllm-neuron version is 1.0.0",
# https://awsdocs-neuron.readthedocs-hosted.com/en/v2.31.0/release-notes/components/index.html).
NEURON_DLC_TAG = re.compile(
    r"(?P<vllm>\d+\.\d+\.\d+)(?:\.(?P<plugin>\d+(?:\.\d+)*))?"
    r"-neuronx-py(?P<python>\d+)-sdk(?P<sdk>\d+(?:\.\d+)+)-(?P<os>[a-z]+\d+(?:\.\d+)*)"
)


@dataclass(frozen=True)
class NeuronDlcTags:
    """The Neuron vLLM DLC's tags: one release per vLLM version, the build for the newest Neuron SDK (then
    the newest plugin and Python). The recorded image keeps the whole tag, so the SDK stays with it."""

    label: str = "<vllm>[.<plugin>]-neuronx-py<python>-sdk<sdk>-<os>"

    def parse(self, tag: str) -> ReleaseTag:
        match = NEURON_DLC_TAG.fullmatch(tag)
        if not match:
            raise NotARelease(f"not a {self.label} tag")
        rank = (_version(match["sdk"]), _version(match["plugin"] or "0"), _version(match["python"]))
        return ReleaseTag(tag, match["vllm"], rank)


VLLM_CPU_TAGS = VersionTags(suffix="-arm64", architecture="arm64")  # never the multi-arch tag
VLLM_GPU_TAGS = VersionTags(suffix="", architecture="amd64")  # the default CUDA build, not -cu130 and such
NEURON_DLC_TAGS = NeuronDlcTags()


def select_releases(
    tags: Iterable[str], rule: TagRule, include_prereleases: bool = False
) -> tuple[list[ReleaseTag], dict[str, str]]:
    """The release of each version among `tags` (semantic order, oldest first), and every other tag with
    why it is not one."""
    best: dict[str, ReleaseTag] = {}
    ignored: dict[str, str] = {}
    for tag in tags:
        try:
            found = rule.parse(tag)
        except NotARelease as why:
            ignored[tag] = str(why)
            continue
        if found.semver.is_prerelease and not include_prereleases:
            ignored[tag] = "pre-release (not configured)"
            continue
        held = best.get(found.version)
        if held is not None and held.rank >= found.rank:
            ignored[tag] = f"an older build of {found.version} than {held.tag}"
            continue
        if held is not None:
            ignored[held.tag] = f"an older build of {found.version} than {tag}"
        best[found.version] = found
    return sorted(best.values(), key=lambda r: r.semver), ignored
