// `memtrack attach`'s target (attach_test.cpp): THREADS threads (argv[1], default 1), each allocating and
// freeing in a loop of ITERS iterations (argv[2]) with malloc, calloc, realloc, free and operator new/delete,
// checking every block's contents and folding them into a checksum. It prints "ready PID" once its threads
// run (the test attaches then) and at the end "checksum N" (the same for every run with the same arguments:
// the PRNG is seeded per thread, and the work does not depend on timing) and exits 0, or 1 on a corrupted
// block. A short sleep every 1000 iterations stretches the run so the test can attach, record and detach
// while it runs; argv[3] names a file whose existence makes the loop end early ("stop file"), for tests that
// need the process to run until they are done. With ATTACH_LOOP_FORK=1 thread 0 forks a child every 20,000
// iterations, which allocates and frees 1,000 blocks and exits 0 (its parent reaps it; the checksum is the
// parent's alone). With ATTACH_LOOP_EXEC="PATH ARG..." (words separated by spaces) the program, once it printed
// its checksum, takes that variable out of its environment and execv's PATH with those arguments instead of
// exiting (an exec after the attach).
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<int> g_running{0};
bool g_fork = false;

void forked_child() {
  void* blocks[100] = {};
  for (int i = 0; i < 1000; ++i) {
    std::free(blocks[i % 100]);
    blocks[i % 100] = std::malloc(static_cast<std::size_t>(16 + i));
  }
  for (void* b : blocks) std::free(b);
  ::_exit(0);
}

std::uint64_t work(unsigned seed, long iters, const char* stop_file) {
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1, sum = 0;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  constexpr int kSlots = 64;
  unsigned char* blocks[kSlots] = {};
  std::size_t sizes[kSlots] = {};
  g_running.fetch_add(1);
  for (long i = 0; i < iters; ++i) {
    const int s = static_cast<int>(next() % kSlots);
    if (blocks[s] != nullptr) {
      for (std::size_t k = 0; k < sizes[s]; ++k)
        if (blocks[s][k] != static_cast<unsigned char>(sizes[s] + k)) {
          std::fprintf(stderr, "corrupted block\n");
          std::exit(1);
        }
      sum = sum * 31 + sizes[s];
    }
    const std::size_t n = 1 + next() % 512;
    switch (next() % 4) {
      case 0:
        std::free(blocks[s]);
        blocks[s] = static_cast<unsigned char*>(std::malloc(n));
        break;
      case 1:
        std::free(blocks[s]);
        blocks[s] = static_cast<unsigned char*>(std::calloc(1, n));
        break;
      case 2:
        blocks[s] = static_cast<unsigned char*>(std::realloc(blocks[s], n));
        break;
      default: {
        delete[] reinterpret_cast<std::uint64_t*>(new std::uint64_t[n / 8 + 1]);
        std::free(blocks[s]);
        blocks[s] = static_cast<unsigned char*>(std::malloc(n));
      }
    }
    sizes[s] = n;
    for (std::size_t k = 0; k < n; ++k) blocks[s][k] = static_cast<unsigned char>(n + k);
    if (g_fork && seed == 0 && i % 20000 == 19999) {
      const pid_t child = ::fork();
      if (child == 0) forked_child();
      if (child > 0) ::waitpid(child, nullptr, 0);
    }
    if (i % 1000 == 999) {
      ::usleep(200);
      if (stop_file != nullptr && ::access(stop_file, F_OK) == 0) break;
    }
  }
  for (unsigned char* b : blocks) std::free(b);
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const long iters = argc > 2 ? std::atol(argv[2]) : 2000000;
  const char* stop_file = argc > 3 ? argv[3] : nullptr;
  const char* fork_env = std::getenv("ATTACH_LOOP_FORK");
  g_fork = fork_env != nullptr && std::strcmp(fork_env, "1") == 0;
  std::vector<std::uint64_t> sums(static_cast<std::size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t)
    pool.emplace_back([&, t] { sums[static_cast<std::size_t>(t)] = work(static_cast<unsigned>(t), iters, stop_file); });
  std::thread announce([&] {
    while (g_running.load() < threads) ::usleep(100);
    std::printf("ready %d\n", static_cast<int>(::getpid()));
    std::fflush(stdout);
  });
  sums[0] = work(0, iters, stop_file);
  announce.join();
  for (std::thread& t : pool) t.join();
  std::uint64_t total = 0;
  for (const std::uint64_t s : sums) total = total * 1000003 + s;
  std::printf("checksum %llu\n", static_cast<unsigned long long>(total));
  std::fflush(stdout);
  if (const char* exec = std::getenv("ATTACH_LOOP_EXEC"); exec != nullptr && *exec != '\0') {
    std::vector<std::string> words;
    std::istringstream in(exec);
    for (std::string w; in >> w;) words.push_back(w);
    std::vector<char*> args;
    for (std::string& w : words) args.push_back(w.data());
    args.push_back(nullptr);
    ::unsetenv("ATTACH_LOOP_EXEC");
    ::execv(args[0], args.data());
    std::perror("execv");
    return 127;
  }
  return 0;
}
