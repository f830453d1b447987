// Children that end without exit(), one after another, while the recorder is not their parent (the program
// is; docs/RUNTIME.md, "Processes"). `sequential N [GAP_MS]`: N fork children, each keeping a 1 MiB block
// (1048576 bytes) and calling _exit(3); the parent reaps each and waits GAP_MS (default 0) before the next. `killed
// [GAP_MS [waitid]]`: a child keeps 4 MiB (4194304 bytes) and waits; the parent kills it with SIGKILL, reaps it
// (waitpid, or waitid), checks the status it gets, waits GAP_MS, then keeps 3 MiB (3145728 bytes) itself. Prints "child
// PID" for each child.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void* volatile kept;

static void keep(size_t bytes) {
  kept = malloc(bytes);
  memset(kept, 1, bytes);
}

int main(int argc, char** argv) {
  if (argc > 2 && strcmp(argv[1], "sequential") == 0) {
    const int n = atoi(argv[2]);
    const int gap_ms = argc > 3 ? atoi(argv[3]) : 0;
    for (int i = 0; i < n; ++i) {
      fflush(stdout);
      const pid_t pid = fork();
      if (pid == 0) {
        keep(1048576);
        _exit(3);
      }
      int status = 0;
      waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 3) return 1;
      printf("child %d\n", (int)pid);
      if (gap_ms > 0) usleep((useconds_t)gap_ms * 1000u);
    }
    return 0;
  }
  if (argc > 1 && strcmp(argv[1], "killed") == 0) {
    int ready[2];
    if (pipe(ready) != 0) return 1;
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
      keep(4194304);
      (void)!write(ready[1], "r", 1);
      for (;;) pause();
    }
    char c;
    if (read(ready[0], &c, 1) != 1) return 1;
    kill(pid, SIGKILL);
    if (argc > 3 && strcmp(argv[3], "waitid") == 0) {
      siginfo_t info;
      memset(&info, 0, sizeof info);
      if (waitid(P_PID, (id_t)pid, &info, WEXITED) != 0) return 1;
      if (info.si_pid != pid || info.si_code != CLD_KILLED || info.si_status != SIGKILL) return 1;
    } else {
      int status = 0;
      if (waitpid(pid, &status, 0) != pid) return 1;
      if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) return 1;
    }
    printf("child %d\n", (int)pid);
    if (argc > 2) usleep((useconds_t)atoi(argv[2]) * 1000u);
    keep(3145728);
    return 0;
  }
  fprintf(stderr, "usage: exit_children sequential N [GAP_MS] | killed [GAP_MS [waitid]]\n");
  return 2;
}
