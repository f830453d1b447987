/* A program with known call chains for the report's tests: main -> report_parse -> report_buffer allocates
   and frees, main -> report_build allocates what stays live at the peak, main -> report_leak never frees. */
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static void* report_buffer(size_t n) {
  void* p = malloc(n);
  memset(p, 1, n);
  return p;
}

__attribute__((noinline)) static void report_parse(void) {
  for (int i = 0; i < 200; ++i) free(report_buffer(1000 + (size_t)i));
}

__attribute__((noinline)) static void** report_build(int n) {
  void** v = malloc(sizeof(void*) * (size_t)n);
  for (int i = 0; i < n; ++i) v[i] = report_buffer(4096);
  return v;
}

__attribute__((noinline)) static void report_leak(void) {
  for (int i = 0; i < 10; ++i) (void)report_buffer(512);
}

int main(void) {
  report_parse();
  void** v = report_build(64);
  for (int i = 0; i < 64; ++i) free(v[i]);
  free(v);
  report_leak();
  return 0;
}
