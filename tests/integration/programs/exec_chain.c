// Each stage allocates one block of its own size and prints "stage PID". Stage "start" runs the others
// through `sh -c`, posix_spawn and vfork+exec, so tracking must survive exec in every new image.
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

static size_t stage_size(const char* stage) {
  if (strcmp(stage, "start") == 0) return 1000171;
  if (strcmp(stage, "middle") == 0) return 1000181;
  if (strcmp(stage, "final") == 0) return 1000187;
  if (strcmp(stage, "spawned") == 0) return 1000193;
  if (strcmp(stage, "vforked") == 0) return 1000199;
  return 0;
}

int main(int argc, char** argv) {
  const char* stage = argc > 1 ? argv[1] : "start";
  void* volatile p = malloc(stage_size(stage));  // volatile: GCC drops an unused malloc/free pair
  printf("%s %d\n", stage, (int)getpid());
  fflush(stdout);
  free(p);
  if (strcmp(stage, "start") != 0) return 0;

  pid_t pid;
  char* spawn_argv[] = {argv[0], "spawned", NULL};
  if (posix_spawn(&pid, argv[0], NULL, NULL, spawn_argv, environ) != 0) return 1;
  waitpid(pid, NULL, 0);

  pid = vfork();
  if (pid == 0) {
    execl(argv[0], argv[0], "vforked", (char*)NULL);
    _exit(127);
  }
  waitpid(pid, NULL, 0);

  // sh runs "middle" as a child, then execs "final" in place of itself.
  execl("/bin/sh", "sh", "-c", "\"$0\" middle && exec \"$0\" final", argv[0], (char*)NULL);
  return 1;
}
