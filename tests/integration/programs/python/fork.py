# A fork child (os.fork, no exec) meeting code objects its parent never ran: it names them in a Python module
# of its own, and those its parent noted before the fork through the parent's.
import os


def before_fork():
    return [[0] * 5 for _ in range(10_000)]


def child_only():
    return [[1] * 6 for _ in range(20_000)]


kept = before_fork()
pid = os.fork()
if pid == 0:
    kept2 = child_only()
    kept3 = before_fork()
    os._exit(0)
os.waitpid(pid, 0)
print("done")
