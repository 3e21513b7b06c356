"""The exact-answer task the project generates to measure a configuration's accuracy through lm-eval: short
questions with one right answer each, written from a seed (no copied text), and the lm-eval task files that
serve them to the harness as a local dataset.

What it can tell: whether a quantized configuration still gets right what its reference gets right on
single-step tasks a 135M model answers well above chance (the embedded model's bf16 checkpoint through
lm-eval, 200 questions: 73% right, copying a word 100%, a word's first letter 80%, the next number 66%, a
word in capitals 46%). What it cannot: reasoning, knowledge or long-context quality, which a model this size
has little of; a larger model's quality belongs to the field's own tasks (lm-eval's, imported as results
JSON). Chance is ~0 on every kind (open answers, not choices)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

TASK = "accelbench_exact"
SEED = 20261203
FEWSHOT = 5  # worked examples before each question, of its own kind
MAX_GEN_TOKS = 8  # an answer is a word or a number
# The longest document's prompt, in tokens, with room: 111 of the embedded model's tokenizer over 5,000
# documents; a server measured for quality serves at least this (tests/e2e/test_quantized_model.py runs it).
PROMPT_TOKENS = 160
METRIC = "exact_match,strip"  # lm-eval's key: the metric, then the filter its answers went through
WORDS = (
    "apple",
    "river",
    "stone",
    "cloud",
    "green",
    "table",
    "music",
    "light",
    "paper",
    "horse",
    "garden",
    "window",
    "summer",
    "bread",
    "silver",
    "chair",
    "winter",
    "forest",
    "candle",
    "bottle",
    "pencil",
    "orange",
    "planet",
    "rabbit",
    "tiger",
    "yellow",
    "mountain",
    "ocean",
    "letter",
    "basket",
    "mirror",
    "violin",
    "butter",
    "jacket",
    "island",
    "rocket",
    "pepper",
    "castle",
    "dragon",
    "flower",
)


@dataclass(frozen=True)
class Question:
    kind: str
    question: str
    answer: str


def _successor(rng: np.random.Generator) -> Question:
    n = int(rng.integers(1, 99))
    return Question("successor", f"What number comes after {n}?", str(n + 1))


def _first_letter(rng: np.random.Generator) -> Question:
    word = str(rng.choice(WORDS))
    return Question("first_letter", f"The first letter of the word '{word}' is", word[0])


def _capitals(rng: np.random.Generator) -> Question:
    word = str(rng.choice(WORDS))
    return Question("capitals", f"Write in capital letters: {word}", word.upper())


def _copy(rng: np.random.Generator) -> Question:
    word = str(rng.choice(WORDS))
    return Question("copy", f"Repeat the word: {word}", word)


KINDS: tuple[Callable[[np.random.Generator], Question], ...] = (_successor, _first_letter, _capitals, _copy)


def questions(count: int, seed: int = SEED) -> list[Question]:
    """`count` questions, the kinds in turn, the same for the same seed on every machine (numpy's PCG64)."""
    rng = np.random.default_rng(seed)
    return [KINDS[i % len(KINDS)](rng) for i in range(count)]


def prompt(question: Question, shots: list[Question]) -> str:
    """The question after its worked examples: "Q: ...\nA: ...\n\n" each, then "Q: <question>\nA:"."""
    return "".join(f"Q: {s.question}\nA: {s.answer}\n\n" for s in shots) + f"Q: {question.question}\nA:"


def documents(count: int, seed: int = SEED) -> list[dict[str, str]]:
    """The task's documents: each question with FEWSHOT examples of its own kind (drawn from another seed;
    examples of other kinds mislead a model this size: 41% right against ~70% on the same questions)."""
    rng = np.random.default_rng(seed + 1)
    docs = []
    for i, q in enumerate(questions(count, seed)):
        kind = KINDS[i % len(KINDS)]
        shots: list[Question] = []
        while len(shots) < FEWSHOT:
            shot = kind(rng)
            if shot.question != q.question and shot not in shots:
                shots.append(shot)
        docs.append(asdict(q) | {"prompt": prompt(q, shots)})
    return docs


def write_task(folder: Path, count: int, seed: int = SEED) -> Path:
    """The lm-eval task (a YAML over a local JSONL of `documents`) in `folder`, for `--include_path`.
    Returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / f"{TASK}.jsonl"
    data.write_text("".join(json.dumps(d) + "\n" for d in documents(count, seed)))
    # lm-eval reads YAML; JSON is YAML, and needs no YAML writer here.
    config = {
        "task": TASK,
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": str(data)}},
        "test_split": "test",
        "num_fewshot": 0,  # the examples are in each document's prompt, of the question's own kind
        "output_type": "generate_until",
        "doc_to_text": "{{prompt}}",
        "doc_to_target": "{{answer}}",
        "target_delimiter": " ",
        "generation_kwargs": {
            "until": ["\n"],
            "max_gen_toks": MAX_GEN_TOKS,
            "do_sample": False,
            "temperature": 0.0,
        },
        "filter_list": [
            {"name": "strip", "filter": [{"function": "remove_whitespace"}, {"function": "take_first"}]}
        ],
        "metric_list": [{"metric": "exact_match", "aggregation": "mean", "higher_is_better": True}],
        "metadata": {"version": 1, "seed": seed, "questions": count},
    }
    (folder / f"{TASK}.yaml").write_text(json.dumps(config, indent=1))
    return folder
