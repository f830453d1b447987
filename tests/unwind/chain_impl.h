// The chain's levels (see chain.h), included once per translation unit that builds a chain with its own
// code-generation flags.
#include "unwind/chain.h"

namespace {

template <int N>
__attribute__((noinline)) void level(memtrack::unwind_test::Chain* chain) {
  chain->level_return[N] = reinterpret_cast<std::uintptr_t>(__builtin_extract_return_addr(__builtin_return_address(0)));
  if constexpr (N + 1 < memtrack::unwind_test::kMaxChainDepth) {
    if (N + 1 < chain->depth) {
      level<N + 1>(chain);
    } else {
      chain->leaf(chain);
    }
  } else {
    chain->leaf(chain);
  }
  // A store after the call keeps it from being a tail call; the asm keeps the compiler from merging levels.
  asm volatile("" : : "r"(chain) : "memory");
  chain->work += N;
}

}  // namespace
