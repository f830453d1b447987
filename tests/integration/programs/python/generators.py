# A generator consumed by list(), a key function called back from C (sorted), and a coroutine run by asyncio:
# python_test.cpp finds each allocating line under its Python caller.
def produce(n):
    for i in range(n):
        yield [i] * 4


def key_of(x):
    return ("k%d" % x[0], [x[0]] * 3)


def consume():
    items = list(produce(30000))
    return sorted(items, key=key_of)


async def coro_alloc():
    return [[j] * 5 for j in range(30000)]


def run_coro():
    import asyncio
    return asyncio.run(coro_alloc())


r1 = consume()
r2 = run_coro()
print(len(r1), len(r2))
