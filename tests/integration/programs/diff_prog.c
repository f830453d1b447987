// Two builds of one program for `memtrack diff` (diff_test.cpp). Built twice: plain (the base) and with
// MT_HEAD (the head), which adds a padding function before the others, so every address and line moves, and
// changes the allocations: grown() allocates 1000 bytes more per block, steady() is unchanged, removed()
// exists only in the base and added() only in the head. Nothing is freed or printed: each site's peak and
// leaked bytes are its allocated bytes.
#include <stdlib.h>
#include <string.h>

#ifdef MT_HEAD
// Only its size matters: it moves the code after it.
__attribute__((noinline)) unsigned padding(unsigned x) {
  volatile unsigned table[64];
  for (unsigned i = 0; i < 64; ++i) table[i] = x * i + 7;
  unsigned s = 0;
  for (unsigned i = 0; i < 64; ++i) s += table[(i * 13) % 64] ^ (s << 3);
  for (unsigned i = 0; i < 64; ++i) s = s * 31 + table[63 - i];
  return s;
}
#define GROWN_SIZE (4096 + 1000)
#else
#define GROWN_SIZE 4096
#endif

void* volatile sink[16];
static int next;

// Each stores its block (no tail call: the function stays on the stack).
__attribute__((noinline)) void grown(void) {
  void* p = malloc(GROWN_SIZE);
  memset(p, 1, 16);
  sink[next++] = p;
}

__attribute__((noinline)) void steady(void) {
  void* p = malloc(777);
  memset(p, 2, 16);
  sink[next++] = p;
}

#ifdef MT_HEAD
__attribute__((noinline)) void added(void) {
  void* p = malloc(321);
  memset(p, 3, 16);
  sink[next++] = p;
}
#else
__attribute__((noinline)) void removed(void) {
  void* p = malloc(555);
  memset(p, 4, 16);
  sink[next++] = p;
}
#endif

int main(int argc, char** argv) {
  (void)argv;
#ifdef MT_HEAD
  if (padding((unsigned)argc) == 1) return 3;
#endif
  for (int i = 0; i < 3; ++i) grown();
  for (int i = 0; i < 2; ++i) steady();
#ifdef MT_HEAD
  added();
#else
  removed();
#endif
  return 0;
}
