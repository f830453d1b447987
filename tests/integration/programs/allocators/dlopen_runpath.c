// Loads a library by its bare name, found only through this executable's DT_RUNPATH ($ORIGIN/runpath):
// the preload's dlopen must search the caller's paths as glibc would (hooks_dlopen.cpp). Prints "value N".
#include <dlfcn.h>
#include <stdio.h>

int main(void) {
  void* h = dlopen("libmt_runpath_value.so", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  int (*f)(void) = (int (*)(void))dlsym(h, "mt_runpath_value");
  if (!f) return 1;
  printf("value %d\n", f());
  return 0;
}
