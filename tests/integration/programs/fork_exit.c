// A fork child that exits without exec, as a shell's $(...) subshell does; with an argument, the child execs
// that program instead (no arguments) after its allocation. The child frees one inherited block, keeps the
// other untouched, and allocates 1000159 bytes it never frees: its only leak. The parent frees both.
// Prints "child PID".
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  void* volatile kept = malloc(1000151);   // the child never touches it
  void* volatile freed = malloc(1000153);  // the child frees its copy
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    free(freed);
    void* volatile own = malloc(1000159);
    (void)own;
    if (argc > 1) {
      char* child_argv[] = {argv[1], NULL};
      execv(argv[1], child_argv);
    }
    _exit(argc > 1 ? 127 : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  printf("child %d\n", (int)pid);
  free(kept);
  free(freed);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
