"""Pod memory reserves: the load generator's peak memory, and vLLM CPU's process overhead for a small model.

Run: .venv/bin/python benchmarks/pod_reserves.py [--runs 1] [--quick] [--concurrency 1,256,1024]
         [--parts loadgen,levels,tokenizer,server,server-vocab,quality] [--levels 4] [--max-point-s 240]
         [--questions 200]

Memory, not time: the figures are what the two containers of a benchmark pod need as memory requests
(= limits), `LOADGEN_MEMORY_GIB` and `PROCESS_OVERHEAD_GIB` in accelbench/sizing/fit.py. Every process
tree is sampled every 50 ms (benchmarks/tree_memory.py): the sums over its processes of RSS, of PSS
(smaps_rollup) and of RssAnon (/proc/<pid>/status), and `charge`, an estimate of what a container holding
just that tree is charged: its RssAnon plus the resident pages of each mapped file or shared-memory path
counted once (smaps, read every second). RSS counts a library mapped by three processes three times; PSS
divides it among every process of the host that maps it, so on a shared host it also depends on what else
runs. A peak is the largest sum at one instant. Page cache of files written (the result JSON) is not in
any of them: a cgroup is charged for it too, but can reclaim it.

1. Load generator (part `loadgen`). `accelbench-loadgen`, the pod's main container (cli -> Driver -> the
   warm bench runner, `vllm bench serve` as a child under the vLLM interpreter), pinned to CPU 0, runs one
   spec (4 warm-up requests + one concurrency level) against the zero-work server (benchmarks/zero_server.py,
   pinned to CPU 1) and copies its raw evidence to a local lake, as the pod does to S3. The driver (the cli
   process) and the runner (its descendants) are reported apart. Grid: concurrency {1, 256, 1024} x prompts
   {1024, 10000} x (input, output) {(512, 128), (4096, 512)}, smallest work first; a point predicted (from
   the points run before it) to take more than --max-point-s is dropped and named, except the largest point
   (highest concurrency, most prompts, longest lengths: the one the question is about). The peaks at the
   highest concurrency are fit to peak = base + prompts x (a x input_len + b x output_len): a and b are
   the bytes per prompt token and per output token of one request. Tokenizer: the tiny model's (its
   tokenizer learned 386 tokens from a 23-word corpus, although the model's vocabulary is 8192).
   Part `levels`: one spec of --levels repeats of a 10,000-prompt level (512/128) at the highest
   concurrency, as the warm runner runs every level of a server in one process: does memory carry from
   level to level?
2. Tokenizer (part `tokenizer`). The pod loads the served model's tokenizer (Qwen2.5: 151,643 tokens + 22
   special). Offline, a byte-level BPE of that size is built locally (random merges of ASCII letters, mean
   token length about 6.7 characters; no hub) and measured: the RSS a fresh vLLM interpreter gains loading
   each tokenizer with vLLM's own get_tokenizer, and the grid's points at the highest concurrency again,
   with it (the random dataset's prompts then hold about 3x the characters per token).
3. vLLM CPU server (part `server`). `vllm serve` of the tiny model (accelbench.local.tiny_model: 4-layer
   random-weight Llama, bf16) started by accelbench.local.server.LocalServer exactly as local mode
   does (the recipe's arguments and environment, VLLM_CPU_KVCACHE_SPACE set, local mode's pinning), then 64
   requests (512 in, 128 out) at concurrency 16 through the Driver, as local mode runs them. The server's
   tree is sampled from launch to the end of the load: peak during start-up (launch to /health), median under
   load, peak overall, and overhead = peak - KV cache bytes - weight bytes (safetensors size). Runs:
   --enforce-eager with KV 1 GiB (the tiny spec and the demo), KV 2 GiB (the KV term should be additive),
   compiled with KV 1 GiB (what a campaign's server gets unless its request adds --enforce-eager). Part
   `server-vocab`: eager with KV 1 GiB, the same shape with the Qwen-sized BPE and vocabulary (151,665:
   embeddings and LM head 148 MiB), for what a real tokenizer adds to the server's processes.

4. The quality step (part `quality`, not in the default parts: it needs .venv-quant). `accelbench-loadgen` as
   the pod runs it, for a spec with a quality plan (accelbench.loadgen.quality_step: 48 probe prompts'
   logprobs, then lm-eval's `run` over --questions questions of the project's task, from .venv-quant's
   interpreter as the image's quality environment would run it) after one small level (16 prompts, 128/32,
   concurrency 4), against a LocalServer of the tiny model. The tree's roles: the driver, the `vllm bench
   serve` runner, and lm-eval (every process whose command line names lm_eval): lm-eval's peak is what the
   container needs beyond its load-generator memory (`LOADGEN_QUALITY_MIB`).

--runs N repeats every measurement and prints medians (default 1: memory varies little between runs).
--quick: a smoke test (two grid points, the eager 1 GiB server).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accelbench.core.spec import BenchmarkSpec, LoadPlan, ServerSpec
from accelbench.loadgen.bench_client import BenchClient
from accelbench.loadgen.driver import Driver
from accelbench.local.server import LocalServer, Pinning, local_vllm_version
from accelbench.local.tiny_model import server_spec
from tree_memory import MIB, TreeSampler
from zero_pipeline import CACHE, CLIENT_CPU, REPO, VLLM_BIN, tiny_tokenizer, zero_server

GIB = 1024**3
LOADGEN = REPO / ".venv" / "bin" / "accelbench-loadgen"
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
CONCURRENCY = (1, 256, 1024)  # 1024: the highest concurrency the planner allows
PROMPTS = (1024, 10000)
LENGTHS = ((512, 128), (4096, 512))
WARMUPS = 4
FIXED_S = 10.0  # a point's cost whatever its size: the runner's vLLM import, the warm-up, the copy
LEVELS_POINT = (10000, 512, 128)  # repeated --levels times in one spec: the warm runner's case
PER_REQUEST = ("charge", "rss", "pss", "driver_charge", "runner_charge")
QWEN_VOCAB = 151_643  # Qwen2.5's byte-level BPE (tokenizer.json), plus 22 special tokens
QWEN_SPECIALS = 22
COMPILERS = {
    "cc",
    "cc1",
    "cc1plus",
    "c++",
    "g++",
    "gcc",
    "as",
    "ld",
    "collect2",
}  # TorchInductor's C++ builds
SERVER_LOAD = LoadPlan(
    input_len=512, output_len=128, concurrency=(16,), prompts_per_level=64, warmups=WARMUPS
)
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}

# Runs under the vLLM interpreter (tokenizers, transformers): a Qwen2.5-sized byte-level BPE, no hub.
BUILD_TOKENIZER = textwrap.dedent(
    """
    import random, string, sys
    from pathlib import Path
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    out, size, specials = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(0)
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {t: i for i, t in enumerate(alphabet)}
    letters = list(string.ascii_letters + string.digits) + ["\u0120"]  # \u0120: byte-level space
    tokens, merges = list(letters), []
    while len(vocab) < size:  # a random known token + one letter: prefix chains, like BPE's own merges
        a, b = tokens[int(len(tokens) * rng.random() ** 1.5)], rng.choice(letters)  # short ones more often
        if a + b not in vocab and len(a) < 24:
            merges.append((a, b))
            vocab[a + b] = len(vocab)
            tokens.append(a + b)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    names = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + [f"<|extra_{i}|>" for i in range(specials - 3)]
    tok.add_special_tokens(names)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None
    )
    fast.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    fast.save_pretrained(out)
    mean = sum(len(t) for t in vocab) / len(vocab)
    print(f"{len(fast)} {mean:.2f}")
    """
)
# Runs under the vLLM interpreter (PYTHONPATH=plugins): the tiny model's shape, a Qwen-sized vocabulary.
BUILD_BIG_VOCAB_MODEL = textwrap.dedent(
    """
    import sys, torch
    from pathlib import Path
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM
    from accelbench.local.tiny_model import SHAPE

    out, source = Path(sys.argv[1]), Path(sys.argv[2])
    tok = AutoTokenizer.from_pretrained(source)
    tok.save_pretrained(out)
    pad, eos = tok.pad_token_id, tok.eos_token_id
    ids = {"eos_token_id": eos, "pad_token_id": pad, "bos_token_id": pad}
    config = LlamaConfig(**(SHAPE | {"vocab_size": len(tok)}), **ids, tie_word_embeddings=False)
    torch.manual_seed(0)
    LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(out, safe_serialization=True)
    """
)
# Runs under the vLLM interpreter: RSS gained by loading one tokenizer the way `vllm bench serve` does.
LOAD_TOKENIZER = textwrap.dedent(
    """
    import gc, sys, psutil
    import vllm.benchmarks.serve
    from vllm.tokenizers import get_tokenizer
    gc.collect()
    me = psutil.Process()
    before = me.memory_full_info()
    tok = get_tokenizer(sys.argv[1], tokenizer_mode="auto", trust_remote_code=False)
    gc.collect()
    after = me.memory_full_info()
    vocab = tok.get_vocab()
    mean = sum(len(t) for t in vocab) / len(vocab)
    print(after.rss - before.rss, after.pss - before.pss, after.uss - before.uss, len(tok), f"{mean:.2f}")
    """
)


def mib(value: float) -> str:
    return f"{value / MIB:,.0f}"


def median_of(results: list[dict]) -> dict:
    """Each numeric field's median over runs (others from the first run)."""
    out = dict(results[0])
    for key, value in results[0].items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = statistics.median(r[key] for r in results)
    if len(results) > 1:
        pss = [r["pss"] for r in results]
        out["pss_spread"] = max(pss) - min(pss)
    return out


# -- 1. the load generator ------------------------------------------------------------------------------


def loadgen_role(proc: psutil.Process, root_pid: int) -> str:
    return "driver" if proc.pid == root_pid else "runner"


def loadgen_point(
    c: int, n: int, lengths: tuple[int, int], tokenizer: Path, work: Path, repeats: int = 1
) -> dict:
    """One spec (one level x repeats) through `accelbench-loadgen` against the zero server; tree peaks."""
    in_len, out_len = lengths
    load = LoadPlan(
        input_len=in_len,
        output_len=out_len,
        concurrency=(c,),
        prompts_per_level=n,
        warmups=WARMUPS,
        repeats=repeats,
    )
    bench = BenchmarkSpec(server=server_spec(tokenizer), load=load, campaign_id=f"reserves-c{c}-n{n}")
    spec_file = work / "spec.json"
    spec_file.write_text(bench.model_dump_json())
    started = time.monotonic()
    with zero_server() as (url, server_pid), (work / "loadgen.log").open("w") as log:
        proc = subprocess.Popen(
            [
                *(str(LOADGEN), "--spec", str(spec_file), "--server-url", url, "--out", str(work / "raw")),
                *("--vllm", str(VLLM_BIN), "--server-pid", str(server_pid), "--lake", str(work / "lake")),
                *("--date", "2026-12-01"),
            ],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env=os.environ | OFFLINE,
            preexec_fn=lambda: os.sched_setaffinity(0, {CLIENT_CPU}),  # the runner inherits it
        )
        with TreeSampler(lambda: proc.pid, role=loadgen_role) as sampler:
            try:
                stdout, _ = proc.communicate(timeout=1800)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                raise SystemExit(f"c={c} n={n} {in_len}/{out_len}: no result after 1800 s") from None
    wall = time.monotonic() - started
    summary = json.loads(stdout.strip().splitlines()[-1])
    failed, errors, broken = 0, "", False
    for i, level in enumerate(summary["levels"]):
        # A level with failed requests still sent every request and kept every result: its memory counts.
        # The zero server streams "x" per token: one token of the tiny tokenizer, but a larger BPE merges
        # them when vLLM's client re-counts the text, so the count is checked against the tiny one's only.
        lost, why = failed_requests(work / "raw" / summary["spec_id"] / f"c{c}-r{i}.json")
        failed, errors = failed + lost, errors or why
        exact = tokenizer != tiny_tokenizer() or level["client_output_tokens"] == (n - lost) * out_len
        broken |= (level["status"] != "ok" and not lost) or not exact
    if proc.returncode not in (0, 1) or broken or not summary["levels"]:
        raise SystemExit(f"c={c} n={n} {in_len}/{out_len}: {summary} (see {work / 'loadgen.log'})")
    return {
        "failed": failed,
        "errors": errors,
        "levels": len(summary["levels"]),
        "concurrency": c,
        "prompts": n,
        "input_len": in_len,
        "output_len": out_len,
        "wall_s": wall,
        "samples": len(sampler.samples),
        "interval_ms": sampler.mean_interval_s() * 1000,
        "rss": sampler.peak("rss"),
        "pss": sampler.peak("pss"),
        "anon": sampler.peak("anon"),
        "charge": sampler.peak("charge"),
        "driver_charge": sampler.peak("charge", "driver"),
        "runner_charge": sampler.peak("charge", "runner"),
        "driver_rss": sampler.peak("rss", "driver"),
        "driver_pss": sampler.peak("pss", "driver"),
        "driver_anon": sampler.peak("anon", "driver"),
        "runner_rss": sampler.peak("rss", "runner"),
        "runner_pss": sampler.peak("pss", "runner"),
        "runner_anon": sampler.peak("anon", "runner"),
    }


def failed_requests(result: Path) -> tuple[int, str]:
    """How many requests of a level failed, and their distinct errors (vLLM's client keeps the text)."""
    try:
        errors = [e for e in json.loads(result.read_text()).get("errors", []) if e]
    except (OSError, ValueError):
        return 0, ""
    # A traceback's last line is the exception; the line above it, where it was raised.
    lines = [[line.strip() for line in e.strip().splitlines() if line.strip()] for e in errors]
    distinct = sorted({" <- ".join(reversed(ls[-3:]))[:240] for ls in lines})
    return len(errors), "; ".join(distinct[:3])


def work_of(c: int, n: int, lengths: tuple[int, int]) -> float:
    """What a point's duration scales with: streamed tokens, and prompt tokens generated and sent."""
    return n * (lengths[1] + lengths[0] / 8)


def work_done(r: dict) -> float:
    return work_of(r["concurrency"], r["prompts"], (r["input_len"], r["output_len"]))


def predict_s(c: int, n: int, lengths: tuple[int, int], done: list[dict]) -> float | None:
    same = [r for r in done if r["concurrency"] == c] or done
    if not same:
        return None
    ref = max(same, key=work_done)
    ref_work = work_done(ref)
    fixed = min(FIXED_S, ref["wall_s"])
    return fixed + (ref["wall_s"] - fixed) * work_of(c, n, lengths) / ref_work


def loadgen_grid(args: argparse.Namespace, tokenizer: Path) -> tuple[list[dict], list[str]]:
    grid = [(c, n, lengths) for c in args.concurrency for n in args.prompts for lengths in args.lengths]
    grid.sort(key=lambda p: (work_of(*p), p[0]))
    done: list[dict] = []
    dropped: list[str] = []
    print(
        f"\n1. Load generator: accelbench-loadgen tree vs the zero server, tiny tokenizer "
        f"({args.runs} run(s))"
    )
    print(HEADER)
    largest = (max(args.concurrency), max(args.prompts), max(args.lengths))
    for c, n, lengths in grid:
        guess = predict_s(c, n, lengths, done)
        if guess is not None and guess > args.max_point_s and (c, n, lengths) != largest:
            label = f"c={c} prompts={n} {lengths[0]}/{lengths[1]}"
            dropped.append(f"{label} (predicted {guess:.0f} s)")
            print(f"  {c:>5} {n:>7} {lengths[0]:>4}/{lengths[1]:<4} | dropped: predicted {guess:.0f} s")
            continue
        results = []
        for i in range(args.runs):
            with tempfile.TemporaryDirectory(prefix=f"reserves-{i}-") as tmp:
                results.append(loadgen_point(c, n, lengths, tokenizer, Path(tmp)))
        r = median_of(results)
        done.append(r)
        print(row(r), flush=True)
    return done, dropped


HEADER = (
    f"  {'conc':>5} {'prompts':>7} {'in/out':>9} | tree: {'charge':>6} {'RSS':>6} {'PSS':>6} {'anon':>6} | "
    f"driver: {'charge':>6} {'PSS':>5} | runner: {'charge':>6} {'PSS':>6} | {'wall s':>6} {'samples':>7}"
    "   (MiB)"
)


def row(r: dict) -> str:
    return (
        f"  {r['concurrency']:>5} {r['prompts']:>7} {r['input_len']:>4}/{r['output_len']:<4} | "
        f"{mib(r['charge']):>12} {mib(r['rss']):>6} {mib(r['pss']):>6} {mib(r['anon']):>6} | "
        f"{mib(r['driver_charge']):>14} {mib(r['driver_pss']):>5} | {mib(r['runner_charge']):>14} "
        f"{mib(r['runner_pss']):>6} | {r['wall_s']:>6.0f} {r['samples']:>7}"
        + (f" | {r['failed']} failed: {r['errors']}" if r["failed"] else "")
    )


def fit(points: list[dict], metric: str) -> tuple[float, float, float] | None:
    """Least squares of peak = base + prompts x (a x input_len + b x output_len): (base, a, b) in bytes."""
    if len({(p["prompts"], p["input_len"], p["output_len"]) for p in points}) < 3:
        return None
    x = np.array([[1.0, p["prompts"] * p["input_len"], p["prompts"] * p["output_len"]] for p in points])
    y = np.array([float(p[metric]) for p in points])
    (base, a, b), *_ = np.linalg.lstsq(x, y, rcond=None)
    return float(base), float(a), float(b)


def growth(done: list[dict]) -> dict:
    """How the peak grows: with concurrency, per request, and the fit at the highest concurrency."""
    out: dict = {}
    if not done:
        return out
    top_c = max(r["concurrency"] for r in done)
    at_top = [r for r in done if r["concurrency"] == top_c]
    largest = max(at_top, key=work_done)
    out["largest"], out["top"] = largest, sorted(at_top, key=work_done)
    print("\n  growth with concurrency (same prompts and lengths), tree peak charge / RSS, MiB:")
    keys = sorted({(r["prompts"], r["input_len"], r["output_len"]) for r in done})
    for n, i, o in keys:
        same = sorted(
            (r for r in done if (r["prompts"], r["input_len"], r["output_len"]) == (n, i, o)),
            key=lambda r: r["concurrency"],
        )
        cells = "   ".join(f"c{r['concurrency']}: {mib(r['charge'])} / {mib(r['rss'])}" for r in same)
        print(f"    {n:>6} prompts {i:>4}/{o:<4} {cells}")
    print("  per request (1024 -> 10000 prompts at the same concurrency and lengths), charge of the tree:")
    for c in sorted({r["concurrency"] for r in done}):
        for i, o in sorted({(r["input_len"], r["output_len"]) for r in done}):
            pair = {
                r["prompts"]: r
                for r in done
                if (r["concurrency"], r["input_len"], r["output_len"]) == (c, i, o)
            }
            if len(pair) >= 2:
                lo, hi = pair[min(pair)], pair[max(pair)]
                per = {k: (hi[k] - lo[k]) / (hi["prompts"] - lo["prompts"]) for k in PER_REQUEST}
                print(
                    f"    c{c} {i}/{o}: {per['charge'] / 1024:,.1f} KiB per request = "
                    f"{per['charge'] / (i + o):,.1f} B per request token (driver "
                    f"{per['driver_charge'] / 1024:,.1f} KiB, runner {per['runner_charge'] / 1024:,.1f} KiB; "
                    f"RSS {per['rss'] / 1024:,.1f} KiB, PSS {per['pss'] / 1024:,.1f} KiB)"
                )
    for metric in ("charge", "rss", "pss"):
        model = fit(at_top, metric)
        if model:
            base, a, b = model
            out[f"fit_{metric}"] = model
            print(
                f"  fit at c{top_c} ({metric}): peak = {mib(base)} MiB + prompts x "
                f"({a:.1f} B x input_len + {b:.1f} B x output_len)"
            )
    return out


def levels_part(args: argparse.Namespace, top: list[dict]) -> dict | None:
    """The warm runner runs every level of a server: does its memory carry from one level to the next?"""
    one = next((r for r in top if (r["prompts"], r["input_len"], r["output_len"]) == LEVELS_POINT), None)
    c, (n, in_len, out_len) = max(args.concurrency), LEVELS_POINT
    print(f"\n  {args.levels} levels in one spec (c={c}, {n} prompts, {in_len}/{out_len}, repeats):")
    print(HEADER)
    with tempfile.TemporaryDirectory(prefix="reserves-levels-") as tmp:
        r = loadgen_point(c, n, (in_len, out_len), tiny_tokenizer(), Path(tmp), repeats=args.levels)
    note = f" | vs 1 level: charge {(r['charge'] - one['charge']) / MIB:+,.0f} MiB" if one else ""
    print(f"{row(r)}{note} ({r['levels']} levels run)", flush=True)
    return r


# -- 2. the tokenizer -----------------------------------------------------------------------------------


def big_tokenizer() -> tuple[Path, str]:
    """A byte-level BPE of Qwen2.5's size, built once in the cache: (folder, 'size mean_length')."""
    out = CACHE / f"bpe-{QWEN_VOCAB}"
    stamp = out / "accelbench-built.txt"
    if not stamp.exists():
        shutil.rmtree(out, ignore_errors=True)
        proc = subprocess.run(
            [str(VLLM_PYTHON), "-c", BUILD_TOKENIZER, str(out), str(QWEN_VOCAB), str(QWEN_SPECIALS)],
            check=True,
            capture_output=True,
            text=True,
            env=os.environ | OFFLINE,
        )
        stamp.write_text(proc.stdout.strip().splitlines()[-1])
    return out, stamp.read_text()


def tokenizer_load(path: Path) -> dict:
    proc = subprocess.run(
        [str(VLLM_PYTHON), "-c", LOAD_TOKENIZER, str(path)],
        check=True,
        capture_output=True,
        text=True,
        env=os.environ | OFFLINE,
    )
    rss, pss, uss, size, mean = proc.stdout.strip().splitlines()[-1].split()
    return {"rss": int(rss), "pss": int(pss), "uss": int(uss), "size": int(size), "mean_len": float(mean)}


def tokenizer_part(args: argparse.Namespace, top: list[dict]) -> dict:
    print("\n2. Tokenizer: the tiny model's vs a locally built byte-level BPE of Qwen2.5's size")
    big, facts = big_tokenizer()
    size = int(facts.split()[0])
    tiny = tiny_tokenizer()
    print(
        f"  {'tokenizer':<24} {'tokens':>7} {'mean chars':>10} {'tokenizer.json':>14} | load: {'RSS':>5} "
        f"{'PSS':>5} {'USS':>5}   (MiB)"
    )
    loads = {}
    for name, path in (("tiny", tiny), ("big", big)):
        r = loads[name] = median_of([tokenizer_load(path) for _ in range(args.runs)])
        label = "the tiny model's" if name == "tiny" else "BPE built here"
        print(
            f"  {label:<24} {r['size']:>7,} {r['mean_len']:>10.2f} "
            f"{(path / 'tokenizer.json').stat().st_size / MIB:>14.2f} | {mib(r['rss']):>11} "
            f"{mib(r['pss']):>5} {mib(r['uss']):>5}"
        )
    out: dict = {"loads": loads, "big_size": size}
    if top:
        print(f"  the grid's points at c{top[0]['concurrency']} again, with the {size:,}-token BPE:")
        print(HEADER)
        again = []
        for point in top:
            lengths = (point["input_len"], point["output_len"])
            results = []
            for i in range(args.runs):
                with tempfile.TemporaryDirectory(prefix=f"reserves-tok-{i}-") as tmp:
                    results.append(
                        loadgen_point(point["concurrency"], point["prompts"], lengths, big, Path(tmp))
                    )
            r = median_of(results)
            again.append(r)
            print(
                f"{row(r)} | vs tiny: charge {(r['charge'] - point['charge']) / MIB:+,.0f} MiB",
                flush=True,
            )
        out["largest_big"] = max(again, key=work_done)
        for metric in ("charge", "rss", "pss"):
            model = fit(again, metric)
            if model:
                base, a, b = model
                out[f"fit_{metric}"] = model
                print(
                    f"  fit with this tokenizer ({metric}): peak = {mib(base)} MiB + prompts x "
                    f"({a:.1f} B x input_len + {b:.1f} B x output_len)"
                )
    return out


# -- 3. the vLLM CPU server -----------------------------------------------------------------------------


def server_role(proc: psutil.Process, root_pid: int) -> str:
    """api-server (vLLM's CLI process), VLLM::EngineCore, VLLM::Worker, or what else runs (its command)."""
    if proc.pid == root_pid:
        return "api-server"
    name = proc.name()
    if name.startswith("VLLM::"):
        return name
    if name in COMPILERS:
        return "compiler (g++, cc1plus, ld)"
    cmd = proc.cmdline()
    for flag in ("-m", "-c"):
        if flag in cmd[:-1]:
            return f"{name} {flag} {' '.join(cmd[cmd.index(flag) + 1].split())[:32]}"
    return name


def weight_bytes(model: Path) -> int:
    return sum(p.stat().st_size for p in model.glob("*.safetensors"))


def big_vocab_model() -> Path:
    """The tiny model's shape with the Qwen-sized BPE and a vocabulary to match, built once in the cache."""
    out = CACHE / f"tiny-model-vocab-{QWEN_VOCAB}"
    if not (out / "model.safetensors").exists():
        big, _ = big_tokenizer()
        subprocess.run(
            [str(VLLM_PYTHON), "-c", BUILD_BIG_VOCAB_MODEL, str(out), str(big)],
            check=True,
            capture_output=True,
            env=os.environ | OFFLINE | {"PYTHONPATH": str(REPO / "plugins")},
        )
    return out


def server_run(kv_gib: int, eager: bool, work: Path, model: Path | None = None) -> dict:
    """LocalServer + Driver as local mode runs them; the server's tree sampled from launch to the end."""
    tiny = model or tiny_tokenizer()
    engine = ("--enforce-eager",) if eager else ()
    server = server_spec(tiny).model_copy(update={"kv_cache_gib": kv_gib, "extra_engine_args": engine})
    assert isinstance(server, ServerSpec)
    bench = BenchmarkSpec(server=server, load=SERVER_LOAD, campaign_id=f"reserves-server-{kv_gib}")
    pinning = Pinning.from_env()
    vllm, client_cpus = str(VLLM_PYTHON.parent / "vllm"), pinning.client if pinning else None
    local = LocalServer(server, work / "server", pinning=pinning, python=VLLM_PYTHON, startup_timeout_s=900)
    sampler = TreeSampler(lambda: local.process.pid if local.process else None, role=server_role)
    with BenchClient(vllm, client_cpus) as client, sampler:
        sampler.mark("launch")
        try:
            local.start()
            sampler.mark("healthy")
            driver = Driver(
                bench,
                local.url,
                work / "raw",
                vllm=vllm,
                server_pid=local.process.pid,  # type: ignore[union-attr]
                client_cpus=client_cpus,
                client=client,
            )
            sampler.mark("load")
            envelope = driver.run()
            sampler.mark("loaded")
            time.sleep(1.0)
        finally:
            local.stop()
    (level,) = envelope["levels"]
    if envelope["failure"] or level["client_output_tokens"] != 64 * 128:
        raise SystemExit(f"server run failed: {envelope['failure']} (log {local.log_path})")
    kv, weights = kv_gib * GIB, weight_bytes(tiny)
    out = {
        "kv_gib": kv_gib,
        "mode": "eager" if eager else "compiled",
        "vocab": "tiny" if model is None else f"{QWEN_VOCAB // 1000}k",
        "startup_s": local.startup_s or 0.0,
        "samples": len(sampler.samples),
        "processes": max((s.processes for s in sampler.samples), default=0),
        "weights": weights,
        "roles": {role: sampler.peak("charge", role) for role in sampler.roles()},
        "driver_peak_rss": level["memory_peaks"].get("server_rss_bytes", 0.0),
    }
    for metric in ("charge", "rss", "pss", "anon"):
        out[f"start_{metric}"] = sampler.peak(metric, end="healthy")
        out[f"load_{metric}"] = sampler.median(metric, start="load", end="loaded")
        out[metric] = sampler.peak(metric)
        out[f"overhead_{metric}"] = out[metric] - kv - weights
    return out


def server_part(args: argparse.Namespace, parts: set[str]) -> list[dict]:
    configs = []
    if "server" in parts:
        configs += (
            [(1, True, False)] if args.quick else [(1, True, False), (2, True, False), (1, False, False)]
        )
    if "server-vocab" in parts and not args.quick:
        configs += [(1, True, True)]
    print(
        f"\n3. vLLM CPU server, tiny model, local mode's LocalServer + 64 requests at c16 "
        f"({args.runs} run(s))"
    )
    print(
        f"  {'mode':<8} {'vocab':>5} {'KV':>4} {'ready s':>7} | start-up peak: {'charge':>6} {'RSS':>6} "
        f"{'PSS':>6} | "
        f"under load: {'charge':>6} {'RSS':>6} | peak: {'charge':>6} {'RSS':>6} {'PSS':>6} {'anon':>6} | "
        f"overhead: {'charge':>6} {'RSS':>6} {'PSS':>6}   (MiB)"
    )
    rows = []
    for kv_gib, eager, big in configs:
        model = big_vocab_model() if big else None
        results = []
        for i in range(args.runs):
            with tempfile.TemporaryDirectory(prefix=f"reserves-srv-{i}-", dir=CACHE) as tmp:
                results.append(server_run(kv_gib, eager, Path(tmp), model))
        r = median_of(results)
        rows.append(r)
        print(
            f"  {r['mode']:<8} {r['vocab']:>5} {kv_gib:>2}Gi {r['startup_s']:>7.0f} | "
            f"{mib(r['start_charge']):>21} "
            f"{mib(r['start_rss']):>6} {mib(r['start_pss']):>6} | {mib(r['load_charge']):>18} "
            f"{mib(r['load_rss']):>6} | {mib(r['charge']):>12} {mib(r['rss']):>6} {mib(r['pss']):>6} "
            f"{mib(r['anon']):>6} | {mib(r['overhead_charge']):>16} {mib(r['overhead_rss']):>6} "
            f"{mib(r['overhead_pss']):>6}",
            flush=True,
        )
        roles = ", ".join(f"{k} {mib(v)}" for k, v in r["roles"].items() if v)
        print(
            f"  {'':<14} peak charge by process: {roles}; weights {r['weights'] / MIB:.1f} MiB, "
            f"{r['processes']} processes at most"
        )
    by = {(r["mode"], r["kv_gib"]): r for r in rows if r["vocab"] == "tiny"}
    if ("eager", 1) in by and ("eager", 2) in by:
        one, two = by[("eager", 1)], by[("eager", 2)]
        print(
            f"  KV 1 -> 2 GiB (eager): peak charge +{mib(two['charge'] - one['charge'])} MiB, RssAnon "
            f"+{mib(two['anon'] - one['anon'])} MiB (1 GiB = 1,024 MiB); overhead (charge) "
            f"{mib(one['overhead_charge'])} -> {mib(two['overhead_charge'])} MiB"
        )
    return rows


# -- summary --------------------------------------------------------------------------------------------


def machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    try:
        vllm = local_vllm_version(VLLM_PYTHON)
    except Exception as exc:  # the summary must print anyway
        vllm = f"unknown ({exc})"
    ram = psutil.virtual_memory().total / GIB
    return (
        f"{cpu}, {os.cpu_count()} vCPUs, {ram:.0f} GiB RAM, {platform.machine()}, "
        f"Linux {platform.release()}, "
        f"Python {platform.python_version()}, vllm-cpu {vllm}"
    )


def peaks(r: dict) -> str:
    return (
        f"charge {mib(r['charge'])} MiB, RSS {mib(r['rss'])} MiB, PSS {mib(r['pss'])} MiB, "
        f"RssAnon {mib(r['anon'])} MiB"
    )


def formula(name: str, model: tuple[float, float, float]) -> str:
    base, a, b = model
    return f"{name} ~ {mib(base)} MiB + prompts x ({a:.0f} B x input_len + {b:.0f} B x output_len)"


def summarize(loadgen: dict, dropped: list[str], tokenizer: dict | None, servers: list[dict]) -> None:
    print("\nSummary: what the sizing constants should cite (peaks of the process tree)")
    largest = loadgen.get("largest")
    if largest:
        print(
            f"  load generator, largest point run (c={largest['concurrency']}, {largest['prompts']} prompts, "
            f"{largest['input_len']}/{largest['output_len']}), tiny tokenizer: {peaks(largest)}"
        )
        for metric in ("charge", "rss"):
            if f"fit_{metric}" in loadgen:
                print(f"    {formula(metric, loadgen[f'fit_{metric}'])}")
    if loadgen.get("levels"):
        r = loadgen["levels"]
        print(
            f"  {r['levels']} levels in one spec (c={r['concurrency']}, {r['prompts']} prompts, "
            f"{r['input_len']}/{r['output_len']}): {peaks(r)}"
        )
    if tokenizer and "largest_big" in tokenizer:
        big = tokenizer["largest_big"]
        print(
            f"  the same point with a {tokenizer['big_size']:,}-token tokenizer (the pod's case): "
            f"{peaks(big)}"
        )
        for metric in ("charge", "rss"):
            if f"fit_{metric}" in tokenizer:
                print(f"    {formula(metric, tokenizer[f'fit_{metric}'])}")
    if dropped:
        print(f"  grid points dropped (predicted over --max-point-s): {'; '.join(dropped)}")
    for r in servers:
        print(
            f"  vLLM CPU server ({r['mode']}, KV {r['kv_gib']} GiB, {r['vocab']} vocabulary): "
            f"peak {peaks(r)}; overhead beyond KV "
            f"{r['kv_gib'] * 1024:,} MiB + weights {r['weights'] / MIB:.0f} MiB: charge "
            f"{mib(r['overhead_charge'])} MiB, RSS {mib(r['overhead_rss'])} MiB, "
            f"PSS {mib(r['overhead_pss'])} MiB"
        )
    print(f"  machine: {machine()}")
    print(f"  command: {' '.join([Path(sys.executable).name, *sys.argv])}")


QUANT_PYTHON = REPO / ".venv-quant" / "bin" / "python"


def quality_role(proc: psutil.Process, root_pid: int) -> str:
    if proc.pid == root_pid:
        return "driver"
    try:
        return "lm-eval" if any("lm_eval" in part for part in proc.cmdline()) else "runner"
    except psutil.Error:
        return "runner"


def quality_part(args: argparse.Namespace, work: Path) -> dict:
    """One spec with a quality plan through `accelbench-loadgen` against a tiny-model LocalServer."""
    from accelbench.core.spec import QualityPlan

    server = server_spec(tiny_tokenizer()).model_copy(update={"extra_engine_args": ("--enforce-eager",)})
    assert isinstance(server, ServerSpec)
    load = LoadPlan(input_len=128, output_len=32, concurrency=(4,), prompts_per_level=16, warmups=WARMUPS)
    plan = QualityPlan(reference=server.model, questions=args.questions)
    bench = BenchmarkSpec(server=server, load=load, campaign_id="reserves-quality", quality=plan)
    spec_file = work / "spec.json"
    spec_file.write_text(bench.model_dump_json())
    pinning = Pinning.from_env()
    local = LocalServer(server, work / "server", pinning=pinning, python=VLLM_PYTHON, startup_timeout_s=900)
    with local, (work / "loadgen.log").open("w") as log:
        started = time.monotonic()
        proc = subprocess.Popen(
            [
                *(
                    str(LOADGEN),
                    "--spec",
                    str(spec_file),
                    "--server-url",
                    local.url,
                    "--out",
                    str(work / "raw"),
                ),
                *("--vllm", str(VLLM_BIN), "--server-pid", str(local.process.pid)),  # type: ignore[union-attr]
                *(
                    "--lake",
                    str(work / "lake"),
                    "--date",
                    "2026-12-01",
                    "--lm-eval-python",
                    str(QUANT_PYTHON),
                ),
            ],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env=os.environ | OFFLINE,
            preexec_fn=lambda: os.sched_setaffinity(0, {CLIENT_CPU}),
        )
        with TreeSampler(lambda: proc.pid, role=quality_role) as sampler:
            stdout, _ = proc.communicate(timeout=1800)
        wall = time.monotonic() - started
    quality = json.loads((work / "raw" / bench.spec_id / "quality.json").read_text())
    if proc.returncode != 0 or quality["errors"] or len(quality["accuracy"]["correct"]) != args.questions:
        raise SystemExit(
            f"quality run failed: {quality['errors']} (see {work / 'loadgen.log'}) {stdout[-500:]}"
        )
    return {
        "questions": args.questions,
        "wall_s": wall,
        "samples": len(sampler.samples),
        "roles": {
            role: {m: sampler.peak(m, role) for m in ("charge", "rss", "anon")} for role in sampler.roles()
        },
        "total": {m: sampler.peak(m) for m in ("charge", "rss", "anon")},
    }


def quality_summary(r: dict) -> None:
    head = f"{r['questions']} questions, 48 probe prompts, {r['wall_s']:.0f} s, {r['samples']} samples"
    print(f"\nQuality step: {head}")
    for role, peak in [*sorted(r["roles"].items()), ("tree", r["total"])]:
        figures = (
            f"charge {mib(peak['charge'])} MiB, RSS {mib(peak['rss'])} MiB, anon {mib(peak['anon'])} MiB"
        )
        print(f"  {role:8} peak {figures}")


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="a smoke test: 2 grid points, one server")
    parser.add_argument("--parts", default="loadgen,levels,tokenizer,server,server-vocab")
    parser.add_argument(
        "--max-point-s",
        type=float,
        default=240.0,
        help="drop grid points predicted to take longer (never the largest: the point the question is about)",
    )
    parser.add_argument("--levels", type=int, default=4, help="levels of the `levels` part's spec")
    parser.add_argument("--questions", type=int, default=200, help="the `quality` part's lm-eval questions")
    parser.add_argument("--concurrency", default=",".join(map(str, CONCURRENCY)), help="the grid's levels")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    args.prompts, args.lengths = PROMPTS, LENGTHS
    args.concurrency = tuple(int(c) for c in args.concurrency.split(","))
    if args.quick:
        args.concurrency, args.prompts, args.lengths = (1, 1024), (1024,), ((512, 128),)
    CACHE.mkdir(parents=True, exist_ok=True)
    loadgen: dict = {}
    dropped: list[str] = []
    tokenizer = None
    servers: list[dict] = []
    if "loadgen" in parts:
        done, dropped = loadgen_grid(args, tiny_tokenizer())
        loadgen = growth(done)
    if "levels" in parts and not args.quick:
        loadgen["levels"] = levels_part(args, loadgen.get("top", []))
    if "tokenizer" in parts:
        tokenizer = tokenizer_part(args, loadgen.get("top", []))
    if parts & {"server", "server-vocab"}:
        servers = server_part(args, parts)
    quality = None
    if "quality" in parts:
        with tempfile.TemporaryDirectory() as tmp:
            quality = quality_part(args, Path(tmp))
    with contextlib.suppress(BrokenPipeError):
        summarize(loadgen, dropped, tokenizer, servers)
        if quality:
            quality_summary(quality)


if __name__ == "__main__":
    main()
