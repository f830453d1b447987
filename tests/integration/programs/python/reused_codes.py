# Code objects compiled, run and freed one after another, so a new one is often allocated where a freed one
# was (python.cpp's table of codes, keyed by address, tells them apart by a fingerprint): each function's
# allocation (a bytearray of 4,000 + i bytes, one block of 4,001 + i) must be named after its own function.
for i in range(300):
    ns = {}
    exec(compile(f"def made_{i}():\n    return bytearray({4000 + i})\n", f"<made {i}>", "exec"), ns)
    block = ns[f"made_{i}"]()
    del ns, block
