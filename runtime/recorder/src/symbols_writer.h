// The recording's symbol table (docs/FORMAT.md, "Context section: stacks and modules", `Symbols`): every
// return address of every image's trace tree, placed in its module (the image's Module notes) and
// symbolized with memtrack::symbolize (libdw: demangled functions, file:line, inlined frames; .symtab/.dynsym
// names without DWARF); one or more Symbols records per module go into the context when the recording ends.
// Never on the program's path: all of it runs in the recorder.
//
// Ahead of the end: the reader hands each stack note's new addresses to prefetch() as the note passes, and a worker
// thread symbolizes it (opening the module and its debug file, the costly part) while the program runs. At
// the end, write() stops the worker after its current batch, symbolizes what it had not reached, and writes
// the records from both, sorted by module and address: the same records as symbolizing everything at the
// end, since a module is placed again at the end and a prefetched address in another module is not used.
//
// Thread safety: prefetch() and write() from the reader thread only; the worker touches only its queue
// (under a mutex), the Symbolizer and the cache, which write() takes over after joining it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "memtrack/pipeline/context_channel.h"
#include "memtrack/symbolize/symbolizer.h"
#include "stack_tables.h"

namespace memtrack::runtime {

struct SymbolsSummary {
  std::uint64_t modules = 0;     // modules with at least one address
  std::uint64_t addresses = 0;   // distinct module-relative addresses symbolized
  std::uint64_t resolved = 0;    // of which have at least a function name
  std::uint64_t ahead = 0;       // of `addresses`, symbolized by the worker while the program ran
  double ahead_cpu_seconds = 0;  // the worker's CPU time
  double seconds_at_end = 0;     // wall time after the program ended (what the user waits for)
};

class SymbolsWriter {
 public:
  // `progress`: show the end's progress on stderr (a terminal).
  explicit SymbolsWriter(bool progress);
  ~SymbolsWriter();  // stops and joins the worker if write() did not
  SymbolsWriter(const SymbolsWriter&) = delete;
  SymbolsWriter& operator=(const SymbolsWriter&) = delete;

  // Reader thread: one stack note's new addresses, each relative to its module's load bias (one lock per
  // note; the worker is woken when the queue stops being empty, then gathers for a few milliseconds or a few
  // thousand addresses before it takes them). The worker starts with the first call.
  void prefetch(std::span<const StackTables::NewAddress> addresses);

  // Blocks until the worker has symbolized everything prefetched so far (tests: what write() then finds).
  void wait_until_idle();

  // Reader thread, after the last slot: writes the Symbols records of `tables` into `channel`.
  SymbolsSummary write(const StackTables& tables, pipeline::ContextChannel& channel);

 private:
  struct ModuleKey {
    std::string path;
    std::vector<std::uint8_t> build_id;
    friend bool operator<(const ModuleKey& a, const ModuleKey& b) {
      return a.path != b.path ? a.path < b.path : a.build_id < b.build_id;
    }
  };
  using Cache = std::unordered_map<std::uint64_t, symbolize::SymbolizedAddress>;

  void work();
  void stop_worker();
  // Symbolizes those of `addresses` not in `cache` yet into it (batches: the worker checks stop_ between).
  void symbolize_into(const ModuleKey& key, const std::vector<std::uint64_t>& addresses, Cache& cache,
                      const symbolize::ProgressFn& progress, bool stoppable);

  bool progress_;
  symbolize::Symbolizer symbolizer_;
  std::map<ModuleKey, Cache> cache_;  // the worker's until joined, then write()'s
  double worker_cpu_seconds_ = 0;     // the worker's until joined

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::map<ModuleKey, std::vector<std::uint64_t>> queue_;  // under mutex_
  std::size_t queued_ = 0;                                 // under mutex_: addresses in queue_
  bool flush_ = false;                                     // under mutex_: wait_until_idle() waits
  bool closing_ = false;                                   // under mutex_
  bool busy_ = false;                                      // under mutex_: the worker holds a batch
  std::atomic<bool> stop_{false};
  std::thread worker_;
};

}  // namespace memtrack::runtime
