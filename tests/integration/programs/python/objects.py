# 100,000 bytes objects of 77 bytes each, kept in a list: each is one PyObject_Calloc(1, 33 + 77) (33: the
# header of a bytes object in CPython 3.11), served by pymalloc (<= 512 bytes).
N = 100_000


def build(n):
    return [bytes(77) for _ in range(n)]


keep = build(N)
print(len(keep))
