# bench/python_cost.sh's JSON/regex script: a dict of 40,000 records through json.dumps and json.loads, then
# re.findall and re.sub over the text, a few rounds. Allocation-heavy in pymalloc (small str, dict, list
# objects) under a shallow Python stack.
import json
import re
import sys

WORD = re.compile(r"[a-z]+-\d+")
KEY = re.compile(r'"(k\d+)": \{')


def build(n):
    return {f"k{i}": {"name": f"item-{i}", "tags": [f"t{i % 7}", f"g{i % 13}"], "value": i * 0.5} for i in range(n)}


def roundtrip(data):
    text = json.dumps(data)
    back = json.loads(text)
    return text, back


def scan(text):
    words = WORD.findall(text)
    keys = KEY.findall(text)
    return len(words), len(keys), len(WORD.sub("x", text[: len(text) // 4]))


def main(n, rounds):
    total = 0
    for _ in range(rounds):
        data = build(n)
        text, back = roundtrip(data)
        assert back == data
        words, keys, subbed = scan(text)
        total += words + keys + subbed
    print("json_regex", n, rounds, total)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 40000, int(sys.argv[2]) if len(sys.argv) > 2 else 3)
