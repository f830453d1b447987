# bench/python_cost.sh's small pytest suite: a few ordinary tests (parametrized, a fixture, assertion
# rewriting on failure-free asserts) over json, re, dataclasses and collections. Run with
# `python3 -m pytest -q -p no:cacheprovider` and PYTHONDONTWRITEBYTECODE=1, so each run collects, rewrites and
# compiles the same way.
import collections
import dataclasses
import json
import re

import pytest


@dataclasses.dataclass
class Record:
    name: str
    tags: list
    value: float


@pytest.fixture
def records():
    return [Record(f"r{i}", [f"t{i % 5}"], i / 3) for i in range(5_000)]


@pytest.mark.parametrize("n", [1_000, 5_000, 20_000])
def test_json_roundtrip(n):
    data = {f"k{i}": [i, str(i), {"v": i}] for i in range(n)}
    assert json.loads(json.dumps(data)) == data


@pytest.mark.parametrize("pattern", [r"\d+", r"[a-z]+\d", r"(\w)(\w)"])
def test_regex(pattern):
    text = " ".join(f"w{i} {i}" for i in range(10_000))
    assert len(re.findall(pattern, text)) > 0


def test_dataclasses(records):
    by_tag = collections.defaultdict(list)
    for r in records:
        by_tag[r.tags[0]].append(dataclasses.asdict(r))
    assert sum(len(v) for v in by_tag.values()) == len(records)


def test_counter():
    c = collections.Counter(str(i % 97) for i in range(50_000))
    assert c.most_common(1)[0][1] > 500


class TestStrings:
    def test_join(self):
        assert len("".join(str(i) for i in range(30_000))) > 30_000

    def test_format(self):
        assert all(f"{i:08d}".startswith("0") for i in range(10_000))
