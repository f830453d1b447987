// Linked statically (tests/integration/CMakeLists.txt): `memtrack attach` must refuse it (no libc.so, no
// dlopen to load the library with). Prints "ready PID", then waits until the file argv[1] exists.
#include <stdio.h>
#include <unistd.h>

int main(int argc, char** argv) {
  printf("ready %d\n", (int)getpid());
  fflush(stdout);
  while (argc > 1 && access(argv[1], F_OK) != 0) usleep(10000);
  return 0;
}
