"""A fixed prompt set the project generates itself, to compare configurations' next-token distributions
(`accelbench.quality.fidelity`): no copied text, the same prompts on every host and every run (a seeded
numpy generator over word lists written here), short plain English a 135M instruct model continues
sensibly: arithmetic sentences, counting, and templated sentences about everyday things."""

from __future__ import annotations

import numpy as np

NUMBERS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
]
COLOURS = ("red", "blue", "green", "yellow", "white", "black", "brown", "grey")
THINGS = ("cat", "dog", "horse", "bird", "fox", "rabbit", "cow", "goat", "duck", "mouse")
PLACES = ("garden", "kitchen", "river", "market", "school", "station", "forest", "library")
VERBS = ("walked to", "ran to", "slept in", "waited at", "looked at", "played near")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
SEED = 20261203


def _arithmetic(rng: np.random.Generator) -> str:
    a, b = (int(x) for x in rng.integers(1, 10, 2))
    c, d = (int(x) for x in rng.integers(1, 10, 2))
    first = f"{NUMBERS[a].capitalize()} plus {NUMBERS[b]} equals {NUMBERS[a + b]}."
    return f"{first} {NUMBERS[c].capitalize()} plus {NUMBERS[d]} equals"


def _counting(rng: np.random.Generator) -> str:
    start = int(rng.integers(0, 8))
    return "Counting: " + ", ".join(NUMBERS[start : start + 8]) + ","


def _story(rng: np.random.Generator) -> str:
    colour, thing, place, verb, day = (
        str(rng.choice(words)) for words in (COLOURS, THINGS, PLACES, VERBS, DAYS)
    )
    return f"On {day} the {colour} {thing} {verb} the {place}. After that, the {thing}"


KINDS = (_arithmetic, _counting, _story)


def probe_prompts(count: int, seed: int = SEED) -> list[str]:
    """`count` prompts, the kinds in turn; the same list for the same count and seed."""
    rng = np.random.default_rng(seed)
    return [KINDS[i % len(KINDS)](rng) for i in range(count)]
