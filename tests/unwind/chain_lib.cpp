// The chain in a shared library (built twice: linked by the test, and as a module it dlopens).
#include "unwind/chain_impl.h"

extern "C" __attribute__((visibility("default"))) void memtrack_unwind_test_lib_chain(
    memtrack::unwind_test::Chain* chain) {
  level<0>(chain);
  asm volatile("" : : "r"(chain) : "memory");
  chain->work += 1;
}
