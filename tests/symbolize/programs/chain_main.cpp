// The symbolization test program: runs a known call chain through the executable and a shared library
// (chain_lib.cpp), then writes each captured return address with its module to the file named by argv[1]:
//   <label> <module path> <load bias hex> <address hex> <build-id hex>
// The load bias and build-id come from memtrack::build_id (dl_iterate_phdr), what the preload will use.
// Also captures a return address inside libc (qsort calling back the comparator).
#include <dlfcn.h>
#include <limits.h>
#include <link.h>

#include <cstdio>
#include <cstdlib>

#include "chain_lib.h"
#include "memtrack/symbolize/build_id.h"

namespace chain {

struct Outer {
  template <typename T>
  static int run(symlib::Recorder* recorder, T x);
};

template <typename T>
__attribute__((noipa)) int Outer::run(symlib::Recorder* recorder, T x) {
  recorder->run_return = __builtin_return_address(0);
  const int v = symlib::middle(recorder, static_cast<int>(x));  // @run_call
  return v + 2;
}

}  // namespace chain

namespace {

void* g_compare_return = nullptr;

__attribute__((noipa)) int compare(const void* a, const void* b) {
  g_compare_return = __builtin_return_address(0);
  const int x = *static_cast<const int*>(a);
  const int y = *static_cast<const int*>(b);
  return (x > y) - (x < y);
}

bool write_record(std::FILE* out, const char* label, void* address) {
  memtrack::symbolize::BuildId id;
  ElfW(Addr) bias = 0;
  if (!memtrack::symbolize::build_id_of_address(address, id, &bias)) {
    std::fprintf(stderr, "chain: no module with a build-id contains %p (%s)\n", address, label);
    return false;
  }
  Dl_info info;
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) {
    std::fprintf(stderr, "chain: dladdr failed for %p (%s)\n", address, label);
    return false;
  }
  // dladdr names the executable by argv[0], which may be relative.
  char path[PATH_MAX];
  const char* name = info.dli_fname;
  Dl_info exe;
  if (dladdr(reinterpret_cast<void*>(&compare), &exe) != 0 && exe.dli_fbase == info.dli_fbase) {
    name = "/proc/self/exe";
  }
  if (realpath(name, path) == nullptr) {
    std::fprintf(stderr, "chain: realpath(%s) failed\n", name);
    return false;
  }
  char hex[2 * memtrack::symbolize::kMaxBuildIdSize + 1];
  memtrack::symbolize::build_id_to_hex(id, hex, sizeof hex);
  std::fprintf(out, "%s %s %lx %lx %s\n", label, path, static_cast<unsigned long>(bias),
               reinterpret_cast<unsigned long>(address), hex);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: chain OUTPUT\n");
    return 2;
  }
  symlib::Recorder recorder;
  const int v = chain::Outer::run<int>(&recorder, argc);  // @main_call
  const int w = symlib::via_lambda(&recorder, v);
  int values[] = {3, 1, 2};
  std::qsort(values, 3, sizeof values[0], compare);

  std::FILE* out = std::fopen(argv[1], "w");
  if (out == nullptr) return 1;
  const bool ok =
      write_record(out, "leaf", recorder.leaf_return) && write_record(out, "middle", recorder.middle_return) &&
      write_record(out, "run", recorder.run_return) && write_record(out, "qsort", g_compare_return) &&
      write_record(out, "lambda", recorder.lambda_return) && write_record(out, "hidden", recorder.hidden_return);
  return std::fclose(out) == 0 && ok && v > 0 && w > 0 ? 0 : 1;
}
