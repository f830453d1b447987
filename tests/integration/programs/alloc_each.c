// Calls every interposed function once with a distinctive size, so the test can find exactly its events.
// Prints "name size addr" per call (addresses in decimal, as the artifact reader prints them).
#define _GNU_SOURCE
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static void show(const char* what, size_t size, void* p) {
  printf("%s %zu %llu\n", what, size, (unsigned long long)(uintptr_t)p);
}

int main(void) {
  setvbuf(stdout, NULL, _IOFBF, 1 << 16);  // stdio's own buffer is allocated now, before our calls
  void* volatile p;

  p = malloc(1000003);
  show("malloc", 1000003, p);
  free(p);

  p = calloc(7, 142861);  // 1000027 bytes
  show("calloc", 1000027, p);
  free(p);

  void* volatile null = NULL;  // volatile: GCC folds a literal realloc(NULL, n) into malloc(n)
  p = realloc(null, 1000033);  // an allocation: Realloc without old_addr
  show("realloc_null", 1000033, p);
  void* q = realloc(p, 1000037);  // grows (may or may not move): Realloc with old_addr
  show("realloc_grow", 1000037, q);
  p = realloc(q, 0);  // glibc frees q and returns NULL: a Free
  show("realloc_zero", 0, q);

  p = reallocarray(null, 3, 333347);  // 1000041 bytes
  show("reallocarray", 1000041, p);
  free(p);

  p = aligned_alloc(64, 1000064);
  show("aligned_alloc", 1000064, p);
  free(p);
  p = memalign(128, 1000091);
  show("memalign", 1000091, p);
  free(p);
  void* r = NULL;
  if (posix_memalign(&r, 256, 1000099) != 0) return 1;
  show("posix_memalign", 1000099, r);
  free(r);
  p = valloc(1000117);
  show("valloc", 1000117, p);
  free(p);
  p = pvalloc(1000121);
  show("pvalloc", 1000121, p);
  free(p);

  p = mmap(NULL, 1003520, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  show("mmap", 1003520, p);
  munmap(p, 1003520);

  void* old_brk = sbrk(0);
  void* b = sbrk(20480);  // returns the old break
  show("sbrk_grow", 20480, (char*)b + 20480);
  sbrk(-20480);
  show("sbrk_shrink", 20480, old_brk);

  // Not events: free(NULL), a failed malloc, a failed calloc (overflow).
  free(NULL);
  volatile size_t huge = SIZE_MAX / 2;  // volatile: keep the compiler from rejecting what we mean to fail
  p = malloc(huge);
  p = calloc(huge, 4);
  fflush(stdout);
  return 0;
}
