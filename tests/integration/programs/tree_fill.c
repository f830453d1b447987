// A program whose call stacks fill memtrack's trace tree (stacks_test.cpp, StacksTree): 2^DEPTH leaves of a
// binary recursion (two call sites per level), each then recursing CHAIN more times before one malloc(777)
// and its free. Each leaf's stack shares its outer frames with the others, but its chain's CHAIN + 1 frames
// are nodes of their own (same return address, another parent): the tree grows by about
// 2^DEPTH x (CHAIN + 1) nodes, with 2^DEPTH allocations only. Record it with --stack-depth 256 and
// 2 x DEPTH + CHAIN below about 240, or the stacks are cut at the depth cap.
//   tree_fill DEPTH CHAIN
#include <stdlib.h>

static __attribute__((noinline)) void chain(int n) {
  if (n == 0) {
    void* volatile block = malloc(777);  // volatile: the compiler may not drop the pair
    free(block);
    return;
  }
  chain(n - 1);
  __asm__ volatile("" ::: "memory");  // not a tail call: every frame stays on the stack
}

static void branch(int depth, int chain_length);
static __attribute__((noinline)) void left(int depth, int chain_length) {
  branch(depth - 1, chain_length);
  __asm__ volatile("" ::: "memory");
}
static __attribute__((noinline)) void right(int depth, int chain_length) {
  branch(depth - 1, chain_length);
  __asm__ volatile("" ::: "memory");
}
static __attribute__((noinline)) void branch(int depth, int chain_length) {
  if (depth == 0) {
    chain(chain_length);
  } else {
    left(depth, chain_length);
    right(depth, chain_length);
  }
  __asm__ volatile("" ::: "memory");
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  branch(atoi(argv[1]), atoi(argv[2]));
  return 0;
}
