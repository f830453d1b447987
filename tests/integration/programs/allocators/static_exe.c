// A fully static executable (no PT_INTERP): LD_PRELOAD never enters it. It allocates, and exits 3 so the
// test sees record pass the program's status through.
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  void* p = malloc(4242);
  printf("static %p\n", p);
  free(p);
  return 3;
}
