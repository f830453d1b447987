// The shared library of tests/integration/programs/stacks.c: lib_outer -> lib_inner -> malloc.
#include "stacks_lib.h"

#include <stdlib.h>

#define KEEP(p) __asm__ volatile("" : : "r"(p) : "memory")

__attribute__((noinline)) void* lib_inner(size_t n) {
  void* p = malloc(n);
  KEEP(p);
  return p;
}
void* lib_outer(size_t n) {
  void* p = lib_inner(n);
  KEEP(p);
  return p;
}
