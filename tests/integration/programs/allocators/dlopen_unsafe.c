// Loads unsafe_entry.S's library with dlopen and calls its mi_malloc through a dlsym'd pointer: the call
// must still work (the preload refused to patch it). Prints "result N".
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) return 1;
  void* (*f)(unsigned long) = (void* (*)(unsigned long))dlsym(h, "mi_malloc");
  if (!f) return 1;
  printf("result %p\n", f(100));
  return 0;
}
