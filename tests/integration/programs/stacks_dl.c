// The dlopen'd module of tests/integration/programs/stacks.c: dl_outer -> dl_inner -> malloc.
#include <stdlib.h>

#define KEEP(p) __asm__ volatile("" : : "r"(p) : "memory")

__attribute__((noinline)) void* dl_inner(size_t n) {
  void* p = malloc(n);
  KEEP(p);
  return p;
}
void* dl_outer(size_t n) {
  void* p = dl_inner(n);
  KEEP(p);
  return p;
}
