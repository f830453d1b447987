// Process-lifecycle scenarios for tests/integration/lifecycle_test.cpp. Each mode prints "NAME VALUE" lines.
//   daemon MARKER     allocates a block of 1000039 bytes it never frees, then forks a daemon (setsid) that
//                     allocates a block of 1000003 bytes, waits until MARKER.go
//                     exists (at most 30 s), allocates 19 more 50 ms apart and then writes "done 20" to MARKER
//                     (its stderr goes to MARKER.err); prints "daemon PID" and "exit_ns T" (CLOCK_MONOTONIC
//                     just before it exits, once the daemon has allocated once)
//   linger SECONDS    forks a child in the same session that allocates once and sleeps; prints "child PID"
//   envdump SIZE      prints its environment ("env" lines, in order) after allocating SIZE bytes once
//   spawn_env SELF    posix_spawns "SELF envdump 1000033" with the environment {"ONLY=1"}, then execve's
//                     "SELF envdump 1000037" with {"ONLY=2"}
//   system_env SELF   system("SELF envdump 1000039")
//   spawn PATH        posix_spawns PATH (no arguments) with environ and waits; prints "child PID"
//   leak SIZE         allocates SIZE bytes, touches them and exits without freeing them
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

static unsigned long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static int daemon_mode(const char* marker) {
  int ready[2];
  if (pipe(ready) != 0) return 1;
  // Never freed: the command's leak, which the daemon inherits and never touches.
  char* volatile kept = malloc(1000039);
  kept[0] = 1;
  const pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    close(ready[0]);
    setsid();
    char err[4096];
    snprintf(err, sizeof err, "%s.err", marker);
    const int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    close(fd);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    close(null);
    char go[4096];
    snprintf(go, sizeof go, "%s.go", marker);
    int n = 0;
    for (int i = 0; i < 20; ++i) {
      void* volatile p = malloc(1000003);
      free(p);
      ++n;
      if (i == 0) {
        (void)!write(ready[1], "r", 1);
        close(ready[1]);
        for (int wait = 0; wait < 3000 && access(go, F_OK) != 0; ++wait) usleep(10 * 1000);
      }
      usleep(50 * 1000);
    }
    FILE* f = fopen(marker, "w");
    fprintf(f, "done %d\n", n);
    fclose(f);
    return 0;
  }
  close(ready[1]);
  char c;
  (void)!read(ready[0], &c, 1);
  printf("daemon %d\n", (int)pid);
  printf("exit_ns %llu\n", now_ns());
  fflush(stdout);
  return 0;
}

static int linger_mode(int seconds) {
  const pid_t pid = fork();
  if (pid == 0) {
    void* volatile p = malloc(1000007);
    free(p);
    sleep((unsigned)seconds);
    return 0;
  }
  printf("child %d\n", (int)pid);
  fflush(stdout);
  return 0;
}

static int envdump_mode(size_t size) {
  void* volatile p = malloc(size);
  free(p);
  printf("pid %d\n", (int)getpid());
  for (char** e = environ; e != NULL && *e != NULL; ++e) printf("env %s\n", *e);
  fflush(stdout);
  return 0;
}

static void* volatile leaked;

static int leak_mode(size_t size) {
  leaked = malloc(size);
  if (leaked != NULL) memset(leaked, 1, size);
  return leaked == NULL;
}

static int spawn_env_mode(const char* self) {
  char* env1[] = {"ONLY=1", NULL};
  char* argv1[] = {(char*)self, "envdump", "1000033", NULL};
  pid_t pid;
  if (posix_spawn(&pid, self, NULL, NULL, argv1, env1) != 0) return 1;
  waitpid(pid, NULL, 0);
  char* env2[] = {"ONLY=2", NULL};
  char* argv2[] = {(char*)self, "envdump", "1000037", NULL};
  execve(self, argv2, env2);
  return 1;
}

static int system_env_mode(const char* self) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' envdump 1000039", self);
  return system(cmd) == 0 ? 0 : 1;
}

static int spawn_mode(const char* path) {
  char* argv[] = {(char*)path, NULL};
  pid_t pid;
  if (posix_spawn(&pid, path, NULL, NULL, argv, environ) != 0) return 1;
  printf("child %d\n", (int)pid);
  fflush(stdout);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const char* mode = argv[1];
  if (strcmp(mode, "daemon") == 0) return daemon_mode(argv[2]);
  if (strcmp(mode, "linger") == 0) return linger_mode(atoi(argv[2]));
  if (strcmp(mode, "envdump") == 0) return envdump_mode((size_t)atol(argv[2]));
  if (strcmp(mode, "spawn_env") == 0) return spawn_env_mode(argv[2]);
  if (strcmp(mode, "system_env") == 0) return system_env_mode(argv[2]);
  if (strcmp(mode, "spawn") == 0) return spawn_mode(argv[2]);
  if (strcmp(mode, "leak") == 0) return leak_mode((size_t)atol(argv[2]));
  return 2;
}
