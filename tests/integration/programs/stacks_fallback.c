// The unwinder's fallback under `memtrack record` (stacks_test.cpp, StacksFallback): expr_frame's CFA is a DWARF
// expression (DW_CFA_def_cfa_expression "DW_OP_breg7 rsp 16"), which has no compact rule, so only libunwind
// steps it. The preload loads libunwind at the program's first dlopen: before it the stack through expr_frame
// ends there, after it the stack goes on to main. Says on stderr whether libunwind is mapped at each point.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEEP(p) __asm__ volatile("" : : "r"(p) : "memory")
#define NOINLINE __attribute__((noinline))

// void* expr_frame(void* (*fn)(size_t), size_t n): returns fn(n), in a frame whose CFA is an expression.
void* expr_frame(void* (*fn)(size_t), size_t n);
__asm__(
    ".text\n"
    ".globl expr_frame\n"
    ".type expr_frame, @function\n"
    "expr_frame:\n"
    "  .cfi_startproc\n"
    "  subq $8, %rsp\n"
    "  .cfi_escape 0x0f, 0x02, 0x77, 0x10\n"  // DW_CFA_def_cfa_expression, 2 bytes: DW_OP_breg7 (rsp) + 16
    "  movq %rdi, %rax\n"
    "  movq %rsi, %rdi\n"
    "  call *%rax\n"
    "  addq $8, %rsp\n"
    "  .cfi_def_cfa %rsp, 8\n"
    "  ret\n"
    "  .cfi_endproc\n"
    ".size expr_frame, .-expr_frame\n");

NOINLINE void* fallback_alloc(size_t n) {
  void* p = malloc(n);
  KEEP(p);
  return p;
}
NOINLINE void* expr_outer(size_t n) {
  void* p = expr_frame(fallback_alloc, n);
  KEEP(p);
  return p;
}

static int libunwind_mapped(void) {
  FILE* maps = fopen("/proc/self/maps", "r");
  if (maps == NULL) return -1;
  char line[4096];
  int found = 0;
  while (fgets(line, sizeof line, maps) != NULL) found |= strstr(line, "libunwind") != NULL;
  fclose(maps);
  return found;
}

int main(void) {
  fprintf(stderr, "libunwind before dlopen: %s\n", libunwind_mapped() ? "mapped" : "not mapped");
  void* before = expr_outer(1011);
  void* m = dlopen("libm.so.6", RTLD_NOW);
  if (m == NULL) {
    fprintf(stderr, "dlopen libm.so.6: %s\n", dlerror());
    return 1;
  }
  fprintf(stderr, "libunwind after dlopen: %s\n", libunwind_mapped() ? "mapped" : "not mapped");
  void* after = expr_outer(1012);
  free(before);
  free(after);
  dlclose(m);
  return 0;
}
