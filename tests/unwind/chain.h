// Call chains of distinct functions for the unwinder's tests and benchmark. Each level is its own function
// (a template instance, never inlined, never tail-called) and records its own return address, so the
// test knows the exact addresses a correct unwind must produce without trusting any unwinder.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memtrack::unwind_test {

constexpr int kMaxChainDepth = 40;

struct Chain;
using Leaf = void (*)(Chain* chain);

struct Chain {
  int depth = 0;                                     // levels between the entry point and the leaf, 1..kMaxChainDepth
  Leaf leaf = nullptr;                               // called by the last level
  void* arg = nullptr;                               // for the leaf
  std::uintptr_t level_return[kMaxChainDepth] = {};  // level_return[k]: where level k returns to
  std::uintptr_t leaf_return = 0;                    // set by the leaf if it wants to (see expected())
  std::uint64_t work = 0;                            // written after each call: no call is a tail call

  // The return addresses a capture inside the leaf must produce from its out[1] on (out[0] is the address
  // in the leaf after the capture call): the leaf's, then each level's, innermost first. Returns the count.
  std::size_t expected(std::uintptr_t* out) const {
    std::size_t n = 0;
    out[n++] = leaf_return;
    for (int k = depth - 1; k >= 0; --k) out[n++] = level_return[k];
    return n;
  }
};

// Runs the chain, compiled with -O2 -fomit-frame-pointer (tests/unwind/chain.cpp).
void run_chain(Chain* chain);
// The same chain compiled with frame pointers (chain_fp.cpp), for a frame-pointer walk to compare with.
void run_chain_fp(Chain* chain);

}  // namespace memtrack::unwind_test

// The same chain in a shared library the test links (chain_lib.cpp) and in one it dlopens (symbol looked
// up with dlsym).
extern "C" void memtrack_unwind_test_lib_chain(memtrack::unwind_test::Chain* chain);
