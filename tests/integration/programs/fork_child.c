// A block allocated before fork is freed in both processes; the child also allocates its own.
// Prints "parent PID inherited ADDR" and "child PID own ADDR".
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
  void* inherited = malloc(1000151);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    void* own = malloc(1000159);
    printf("child %d own %llu\n", (int)getpid(), (unsigned long long)(uintptr_t)own);
    free(own);
    free(inherited);
    fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  printf("parent %d inherited %llu\n", (int)getpid(), (unsigned long long)(uintptr_t)inherited);
  free(inherited);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
