// Linked statically (tests/integration/CMakeLists.txt): no dynamic loader runs, so LD_PRELOAD cannot track
// it. Allocates once and prints "static PID".
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void) {
  void* volatile p = malloc(1000049);
  free(p);
  printf("static %d\n", (int)getpid());
  return 0;
}
