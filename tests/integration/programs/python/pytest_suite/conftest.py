# A pytest plugin of a few lines: a memtrack region per test (memtrack/control.h through ctypes), named by
# the test's node id, so `memtrack top --region NAME` and `stats --region NAME` show one test's allocations.
# The control library is found through MEMTRACK_CONTROL_LIB, else by its name; outside `memtrack record`
# its calls do nothing.
import ctypes
import os

import pytest

_control = ctypes.CDLL(os.environ.get("MEMTRACK_CONTROL_LIB", "libmemtrack-control.so.0"))
_control.memtrack_region_begin.argtypes = [ctypes.c_char_p]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    _control.memtrack_region_begin(item.nodeid.encode())
    try:
        yield
    finally:
        _control.memtrack_region_end()
