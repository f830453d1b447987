# A small suite: each test allocates a known number of objects at a line of its own.
def make_strings(n):
    return ["s-%d" % i for i in range(n)]


def test_strings():
    assert len(make_strings(30_000)) == 30_000


def test_lists():
    kept = [[i] * 4 for i in range(20_000)]
    assert len(kept) == 20_000


def test_nothing_much():
    assert sum(range(10)) == 45
