// The chain with frame pointers (this file is compiled with -O2 -fno-omit-frame-pointer).
#include "unwind/chain_impl.h"

void memtrack::unwind_test::run_chain_fp(Chain* chain) {
  level<0>(chain);
  asm volatile("" : : "r"(chain) : "memory");
  chain->work += 1;
}
