"""Workloads: what the requests of a benchmark look like, as named profiles that map to `vllm bench serve`
dataset options. A workload is a dimension of the campaign matrix: one spec (one server) per instance type
and workload, and a report point never pools two workloads.

Profiles (`PROFILES`), chosen from what the peers offer (vLLM's `random` with length ranges and
`prefix_repetition`, GuideLLM's and inference-perf's chat, shared-prefix and decode-heavy shapes):

- `fixed`: `random` prompts of exactly the request's input/output lengths on /v1/completions (the
  campaign's default, as before workloads existed; its specs keep their ids);
- `chat`: short conversational turns, input 256 +/- 50%, output 128 +/- 50%, on /v1/chat/completions
  with the model's chat template;
- `summarise`: long input, short output: 1,024 +/- 25% in, 128 out;
- `shared-prefix`: long-context retrieval over a few shared documents: `prefix_repetition`, a 1,024-token
  prefix shared by 4 groups of prompts, 64 own tokens, 64 out (what prefix caching speeds up); its
  request counts come in whole groups (`Workload.request_multiple`, which planning holds them to);
- `decode-heavy`: 64 in, 512 out;
- `custom`: the user's own prompts, a JSONL file of {"prompt": ...} lines (`custom_prompts`), with the
  request's output length;
- `trace`: the user's own traffic, a timed trace (`accelbench.traces`) replayed with its arrival times,
  lengths and shared prefixes (vLLM's `timed_trace` dataset); its levels are time-scales of the trace, and
  its identity (`TraceIdentity`, read when the campaign is planned) goes with every spec and run row.

Lengths are tokens of the model's tokenizer. `random` and `prefix_repetition` prompts are random
tokens: they measure the shapes, not a real conversation's content.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

WorkloadName = Literal["fixed", "chat", "summarise", "shared-prefix", "decode-heavy", "custom", "trace"]
Dataset = Literal["random", "prefix_repetition", "custom", "timed_trace"]
Endpoint = Literal["completions", "chat"]
DEFAULT_WORKLOAD: WorkloadName = "fixed"
ENDPOINTS = {"completions": ("openai", "/v1/completions"), "chat": ("openai-chat", "/v1/chat/completions")}
TRACE_FILE = "trace.jsonl"  # where the load generator puts a trace workload's file, beside its results
TRACE_CHUNK = 16  # tokens per hash id (`accelbench.traces.timed_trace.CHUNK`, vLLM's default)


class TraceIdentity(BaseModel):
    """What a timed trace is (`accelbench.traces.timed_trace.identity`): the lake records it on every run row,
    and a report never pools two traces. `name`: its file's stem; `uri`: where the campaign read it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    uri: str
    sha256: str
    requests: int = Field(ge=1)
    duration_s: float = Field(ge=0)
    mean_rate: float = Field(ge=0)  # arrivals per second at 1x: (requests - 1) / duration
    input_p50: float
    input_p90: float
    input_p99: float
    output_p50: float
    output_p90: float
    output_p99: float
    max_input: int = Field(ge=1)
    max_output: int = Field(ge=1)

    def words(self) -> str:
        return trace_words(self.name, self.sha256, self.requests, self.duration_s, self.mean_rate)


def trace_words(name: str, sha256: str, requests: int, duration_s: float, mean_rate: float) -> str:
    """ "generated-day (sha256 1a2b3c4d5e6f): 31 requests over 27 s, 1.1 req/s at 1x": a trace as the logs
    and the report name it."""
    figures = f"{requests} requests over {duration_s:.0f} s, {mean_rate:.3g} req/s at 1x"
    return f"{name} (sha256 {sha256[:12]}): {figures}"


class Workload(BaseModel):
    """One workload as the load generator runs it: the dataset, its lengths and the endpoint."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: WorkloadName
    dataset: Dataset = "random"
    endpoint: Endpoint = "completions"
    input_len: int = Field(ge=1)  # the prompt's tokens in all (prefix + own tokens for prefix_repetition)
    output_len: int = Field(ge=1)
    range_ratio: float = Field(default=0.0, ge=0.0, le=1.0)  # random: lengths in [1 - r, 1 + r] x the length
    prefix_len: int = Field(default=0, ge=0)  # prefix_repetition: the shared prefix's tokens
    num_prefixes: int = Field(default=1, ge=1)  # prefix_repetition: groups of prompts sharing one prefix
    path: str | None = None  # custom: the JSONL file of prompts; trace: where the trace was read (its URI)
    trace: TraceIdentity | None = None  # trace: what was read there (None: the request before planning)

    @property
    def max_input_len(self) -> int:
        """The longest prompt it sends (what the context must hold)."""
        return int(self.input_len * (1 + self.range_ratio)) + 1

    @property
    def max_output_len(self) -> int:
        return int(self.output_len * (1 + self.range_ratio)) + 1

    @property
    def request_multiple(self) -> int:
        """The count a level's requests must be a multiple of: vLLM 0.32's `prefix_repetition` makes
        num_requests // num_prefixes prompts per prefix, so (n // num_prefixes) x num_prefixes in all, and
        refuses fewer than num_prefixes; the other datasets make exactly n."""
        return self.num_prefixes if self.dataset == "prefix_repetition" else 1

    def sends(self, requests: int) -> int:
        """The requests `vllm bench serve --num-prompts requests` sends of this workload (0: it fails)."""
        return requests // self.request_multiple * self.request_multiple

    def label(self) -> str:
        """ "chat: random 256→128 ±50% (chat)", what a report says the requests looked like."""
        shape = f"{self.dataset} {self.input_len}→{self.output_len}"
        if self.range_ratio:
            shape += f" ±{self.range_ratio:.0%}"
        if self.dataset == "prefix_repetition":
            shape += f", {self.prefix_len}-token prefix x {self.num_prefixes}"
        if self.dataset == "timed_trace":
            return f"{self.name}: " + (self.trace.words() if self.trace else str(self.path))
        return f"{self.name}: {shape}" + (" (chat)" if self.endpoint == "chat" else "")

    def bench_args(self, trace_file: str | None = None) -> list[str]:
        """The `vllm bench serve` options of the dataset and endpoint (FACTS.md section 4). `trace_file`: the
        trace workload's local copy, which the load generator fetched from `path` (a level adds its
        time-scale: `accelbench.loadgen.bench_command`)."""
        backend, endpoint = ENDPOINTS[self.endpoint]
        args = ["--backend", backend, "--endpoint", endpoint, "--dataset-name", self.dataset]
        if self.dataset == "random":
            args += ["--random-input-len", str(self.input_len), "--random-output-len", str(self.output_len)]
            args += ["--random-range-ratio", str(self.range_ratio)]
        elif self.dataset == "prefix_repetition":
            args += ["--prefix-repetition-prefix-len", str(self.prefix_len)]
            args += ["--prefix-repetition-suffix-len", str(self.input_len - self.prefix_len)]
            args += ["--prefix-repetition-num-prefixes", str(self.num_prefixes)]
            args += ["--prefix-repetition-output-len", str(self.output_len)]
        elif self.dataset == "timed_trace":
            # vLLM's timed_trace sends token ids on /v1/completions, to the output lengths (ignore_eos), each
            # request at its own time (self-timed); the labels are vLLM's defaults, the trace's fields.
            args += ["--dataset-path", trace_file or str(self.path)]
            args += ["--timed-trace-chunk-hash-size", str(TRACE_CHUNK)]
        else:
            args += ["--dataset-path", str(self.path), "--custom-output-len", str(self.output_len)]
            args += ["--disable-shuffle"]  # the user's prompts in the user's order
        if self.endpoint == "completions" and self.dataset == "custom":
            args += ["--skip-chat-template"]  # raw prompts on /v1/completions
        return args


def profile(
    name: WorkloadName, input_len: int, output_len: int, path: str | None = None, trace: str | None = None
) -> Workload:
    """The named profile; `fixed` and `custom` take the request's lengths (`custom` its file); `trace` its
    location, with the request's lengths until planning reads the trace (`traced`)."""
    if name == "fixed":
        return Workload(name=name, input_len=input_len, output_len=output_len)
    if name == "custom":
        return Workload(name=name, dataset="custom", input_len=input_len, output_len=output_len, path=path)
    if name == "trace":
        return Workload(
            name=name, dataset="timed_trace", input_len=input_len, output_len=output_len, path=trace
        )
    return PROFILES[name]


def traced(identity: TraceIdentity) -> Workload:
    """The trace workload of a trace read at planning: its longest prompt and output (what the context must
    hold), its identity and where it was read."""
    return Workload(
        name="trace",
        dataset="timed_trace",
        input_len=identity.max_input,
        output_len=identity.max_output,
        path=identity.uri,
        trace=identity,
    )


PROFILES: dict[str, Workload] = {
    "chat": Workload(name="chat", endpoint="chat", input_len=256, output_len=128, range_ratio=0.5),
    "summarise": Workload(name="summarise", input_len=1024, output_len=128, range_ratio=0.25),
    "shared-prefix": Workload(
        name="shared-prefix",
        dataset="prefix_repetition",
        input_len=1024 + 64,
        output_len=64,
        prefix_len=1024,
        num_prefixes=4,
    ),
    "decode-heavy": Workload(name="decode-heavy", input_len=64, output_len=512),
}
