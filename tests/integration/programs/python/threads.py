# Four threads, each building its own list of 20,000 lists in a function of its own, a C call through
# ctypes (malloc of a known size from Python), and a subprocess running this file's child part.
import ctypes
import subprocess
import sys
import threading

kept = {}


def worker_0():
    kept[0] = [[0] * 5 for _ in range(20_000)]


def worker_1():
    kept[1] = [[1] * 6 for _ in range(20_000)]


def worker_2():
    kept[2] = [[2] * 7 for _ in range(20_000)]


def worker_3():
    kept[3] = [[3] * 8 for _ in range(20_000)]


def call_c():
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    return libc.malloc(1_000_003)


def child():
    kept[4] = [[4] * 9 for _ in range(20_000)]


if len(sys.argv) > 1:
    child()
else:
    threads = [threading.Thread(target=f) for f in (worker_0, worker_1, worker_2, worker_3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    call_c()
    subprocess.run([sys.executable, __file__, "child"], check=True)
    print(sum(len(v) for v in kept.values()))
