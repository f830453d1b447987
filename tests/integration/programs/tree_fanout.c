// A program whose trace tree has a node with hundreds of children (stacks_test.cpp, StacksTree): main calls
// 320 distinct leaf functions through one indirect call site, so the node of that call site has 320 children,
// far more than a line of memtrack's hash slots holds. Each leaf allocates 2000 + its index bytes and frees
// them. Two rounds: the second round's stacks are the first round's, found again in the tree.
#include <stdlib.h>

#define LEAF(i)                                          \
  static __attribute__((noinline)) void leaf_##i(void) { \
    void* volatile block = malloc(2000 + (i));           \
    free(block);                                         \
    __asm__ volatile("" ::: "memory");                   \
  }
#define LEAF8(i) LEAF(i##0) LEAF(i##1) LEAF(i##2) LEAF(i##3) LEAF(i##4) LEAF(i##5) LEAF(i##6) LEAF(i##7)
#define LEAF64(i) LEAF8(i##0) LEAF8(i##1) LEAF8(i##2) LEAF8(i##3) LEAF8(i##4) LEAF8(i##5) LEAF8(i##6) LEAF8(i##7)
LEAF64(1)
LEAF64(2)
LEAF64(3)
LEAF64(4)
LEAF64(5)

#define REF8(i) leaf_##i##0, leaf_##i##1, leaf_##i##2, leaf_##i##3, leaf_##i##4, leaf_##i##5, leaf_##i##6, leaf_##i##7
#define REF64(i) REF8(i##0), REF8(i##1), REF8(i##2), REF8(i##3), REF8(i##4), REF8(i##5), REF8(i##6), REF8(i##7)
static void (*const leaves[])(void) = {REF64(1), REF64(2), REF64(3), REF64(4), REF64(5)};

static __attribute__((noinline)) void call(void (*volatile f)(void)) {
  f();
  __asm__ volatile("" ::: "memory");  // not a tail call: this frame stays on the stack
}

static volatile int rounds = 2;  // volatile: one loop, so one call site of call() in main for both rounds

int main(void) {
  for (int round = 0; round < rounds; ++round)
    for (unsigned i = 0; i < sizeof leaves / sizeof leaves[0]; ++i) call(leaves[i]);
  return 0;
}
