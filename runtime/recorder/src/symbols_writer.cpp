#include "symbols_writer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace memtrack::runtime {

namespace {

// Addresses per Symbols record: its columns and string array stay far below the reader's limits
// (codec::kMaxContextArrayElements, kMaxContextBinBytes) even with deep inlining.
constexpr std::size_t kAddressesPerRecord = 8192;

// Addresses per Symbolizer call on the worker: the end waits for at most one batch (plus opening a module).
constexpr std::size_t kWorkerBatch = 256;

// When the worker wakes: it sleeps until addresses are queued, then gathers more for up to kGather (or until
// kWakeAddresses are queued) before taking them. A process-heavy program sends a stack note with a few new
// addresses every few allocations: waking the worker for each note is a futex wake and two context switches
// per note (docs/RUNTIME.md, "Call stacks", has the profile).
constexpr auto kGather = std::chrono::milliseconds(20);
constexpr std::size_t kWakeAddresses = 4096;

// An image's trace tree holds each return address under many parents (pytest's 1.13M nodes hold 28K distinct
// addresses): a direct-mapped filter of the addresses met last lets most repeats skip the module lookup and
// the list, so the sort below sees about the distinct ones. Only a filter: sort and unique still make the
// lists exact.
class RecentAddresses {
 public:
  // Whether `a` was met lately (then nothing to do); else remembers it.
  bool seen(std::uint64_t a) {
    std::uint64_t& slot = slots_[(a * 0x9E3779B97F4A7C15u) >> (64 - kBits)];
    if (slot == a) return true;
    slot = a;
    return false;
  }

 private:
  static constexpr unsigned kBits = 12;
  std::vector<std::uint64_t> slots_ = std::vector<std::uint64_t>(std::size_t{1} << kBits, ~std::uint64_t{0});
};

class StringTable {
 public:
  std::uint32_t id(const std::string& s) {
    if (s.empty()) return codec::kNoString;
    const auto [it, added] = ids_.emplace(s, static_cast<std::uint32_t>(strings_.size()));
    if (added) strings_.push_back(s);
    return it->second;
  }
  std::vector<std::string> take() {
    ids_.clear();
    return std::exchange(strings_, {});
  }

 private:
  std::unordered_map<std::string, std::uint32_t> ids_;
  std::vector<std::string> strings_;
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double thread_cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace

SymbolsWriter::SymbolsWriter(bool progress) : progress_(progress) {}

SymbolsWriter::~SymbolsWriter() { stop_worker(); }

void SymbolsWriter::prefetch(std::span<const StackTables::NewAddress> addresses) {
  bool wake = false;
  {
    const std::lock_guard lock(mutex_);
    if (closing_) return;
    const ModuleEntry* module = nullptr;
    std::vector<std::uint64_t>* list = nullptr;
    for (const StackTables::NewAddress& a : addresses) {
      if (a.module != module) {  // a stack's frames come in runs of one module: one key per run
        module = a.module;
        list = &queue_[{module->path, module->build_id}];
      }
      list->push_back(a.relative);
    }
    const std::size_t before = queued_;
    queued_ += addresses.size();
    wake = before == 0 || (before < kWakeAddresses && queued_ >= kWakeAddresses);
  }
  if (!worker_.joinable()) worker_ = std::thread([this] { work(); });
  if (wake) wake_.notify_one();
}

void SymbolsWriter::work() {
  for (;;) {
    std::map<ModuleKey, std::vector<std::uint64_t>> batch;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return closing_ || queued_ != 0; });
      wake_.wait_for(lock, kGather, [&] { return closing_ || flush_ || queued_ >= kWakeAddresses; });
      if (closing_) return;
      batch.swap(queue_);
      queued_ = 0;
      busy_ = true;
    }
    try {
      for (auto& [key, addresses] : batch) {
        if (stop_.load(std::memory_order_relaxed)) break;
        symbolize_into(key, addresses, cache_[key], {}, /*stoppable=*/true);
      }
    } catch (const std::exception&) {
      // Out of memory while symbolizing ahead: stop prefetching; the end symbolizes what is missing (and
      // reports a failure there, on the reader thread, as it did before there was a worker).
      const std::lock_guard lock(mutex_);
      closing_ = true;
      queue_.clear();
      queued_ = 0;
    }
    worker_cpu_seconds_ = thread_cpu_seconds();
    {
      const std::lock_guard lock(mutex_);
      busy_ = false;
    }
    idle_.notify_all();
  }
}

void SymbolsWriter::wait_until_idle() {
  std::unique_lock lock(mutex_);
  flush_ = true;  // no gathering: take what is queued now
  wake_.notify_one();
  idle_.wait(lock, [&] { return closing_ || (queued_ == 0 && !busy_); });
  flush_ = false;
}

void SymbolsWriter::stop_worker() {
  stop_.store(true, std::memory_order_relaxed);
  {
    const std::lock_guard lock(mutex_);
    closing_ = true;
  }
  wake_.notify_one();
  if (worker_.joinable()) worker_.join();
}

void SymbolsWriter::symbolize_into(const ModuleKey& key, const std::vector<std::uint64_t>& addresses, Cache& cache,
                                   const symbolize::ProgressFn& progress, bool stoppable) {
  std::vector<std::uint64_t> todo;
  todo.reserve(addresses.size());
  for (std::uint64_t a : addresses)
    if (!cache.contains(a)) todo.push_back(a);
  std::sort(todo.begin(), todo.end());
  todo.erase(std::unique(todo.begin(), todo.end()), todo.end());
  symbolize::ModuleRef ref;
  ref.path = key.path;
  symbolize::build_id_from_bytes(key.build_id.data(), key.build_id.size(), ref.build_id);
  const std::size_t step = stoppable ? kWorkerBatch : todo.size();
  for (std::size_t begin = 0; begin < todo.size(); begin += step) {
    if (stoppable && stop_.load(std::memory_order_relaxed)) return;
    const std::size_t end = std::min(todo.size(), begin + step);
    const std::span<const std::uint64_t> part(todo.data() + begin, end - begin);
    std::vector<symbolize::SymbolizedAddress> resolved =
        symbolizer_.symbolize(ref, part, symbolize::AddressKind::return_address, progress);
    for (std::size_t i = 0; i < resolved.size(); ++i) cache.emplace(part[i], std::move(resolved[i]));
  }
}

SymbolsSummary SymbolsWriter::write(const StackTables& tables, pipeline::ContextChannel& channel) {
  stop_worker();
  const auto started = std::chrono::steady_clock::now();
  SymbolsSummary summary;
  std::map<ModuleKey, std::vector<std::uint64_t>> by_module;  // module-relative addresses
  for (const ImageTables& image : tables.images()) {
    // Each module's list found once per image, not once per address (a key is two copies).
    std::vector<std::vector<std::uint64_t>*> lists(image.modules.size(), nullptr);
    RecentAddresses recent;
    image.addresses.for_each([&](std::uint32_t, std::uint64_t address) {
      if (address == codec::kTruncatedStackAddress || recent.seen(address)) return;
      const ModuleEntry* m = image.module_of(address);
      if (m == nullptr) return;  // in no noted module (JIT code): not named
      std::vector<std::uint64_t>*& list = lists[static_cast<std::size_t>(m - image.modules.data())];
      if (list == nullptr) list = &by_module[{m->path, m->build_id}];
      list->push_back(address - m->bias);
    });
  }
  std::size_t total = 0, missing = 0;
  for (auto& [key, addresses] : by_module) {
    std::sort(addresses.begin(), addresses.end());
    addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
    total += addresses.size();
    const auto cached = cache_.find(key);
    if (key.path == "[python]") {  // named from the code notes below, not symbolized
      continue;
    }
    for (std::uint64_t a : addresses) missing += cached == cache_.end() || !cached->second.contains(a);
  }
  summary.ahead = total - missing;
  // What the worker had not reached, with progress on a terminal.
  std::size_t done = 0;
  for (const auto& [key, addresses] : by_module) {
    Cache& cache = cache_[key];
    if (key.path == "[python]") {
      // A Python module's frames (stack_tables.h, PythonCode): module-relative id << 20 | (index + 1). Sorted,
      // so each code's frames come together, its units in order: its table is read once for all of them.
      const std::map<std::uint32_t, PythonCode>* codes = tables.python_codes(key.path, key.build_id);
      const PythonCode* code = nullptr;
      std::optional<PythonLines> lines;
      std::uint64_t code_id = ~std::uint64_t{0};
      for (const std::uint64_t a : addresses) {
        if ((a >> 20) != code_id) {
          code_id = a >> 20;
          const auto c = codes != nullptr ? codes->find(static_cast<std::uint32_t>(code_id)) : decltype(codes->end()){};
          code = codes != nullptr && c != codes->end() ? &c->second : nullptr;
          if (code != nullptr) lines.emplace(code->linetable, code->first_line, code->table_format);
        }
        symbolize::SymbolizedAddress s;
        s.address = a;
        const std::uint64_t index = a & 0xFFFFF;
        symbolize::Frame f;
        f.function = code != nullptr ? code->name : "<python>";
        if (code != nullptr) f.file = code->file;
        if (code != nullptr && index != 0) f.line = lines->line(index - 1);
        s.frames.push_back(std::move(f));
        cache.emplace(a, std::move(s));
      }
      continue;
    }
    const std::size_t before = cache.size();
    const symbolize::ProgressFn report = [&](const symbolize::Progress& p) {
      if (progress_)
        std::fprintf(stderr, "\rmemtrack record: symbolizing %zu/%zu addresses (%.*s)\x1b[K", done + p.done, missing,
                     static_cast<int>(p.module.size()), p.module.data());
      return true;
    };
    symbolize_into(key, addresses, cache, report, /*stoppable=*/false);
    done += cache.size() - before;
  }
  for (const auto& [key, addresses] : by_module) {
    const Cache& cache = cache_[key];
    ++summary.modules;
    summary.addresses += addresses.size();
    for (std::size_t begin = 0; begin < addresses.size(); begin += kAddressesPerRecord) {
      const std::size_t end = std::min(addresses.size(), begin + kAddressesPerRecord);
      codec::Symbols r;
      r.path = key.path;
      r.build_id = key.build_id;
      StringTable strings;
      for (std::size_t i = begin; i < end; ++i) {
        const symbolize::SymbolizedAddress& a = cache.at(addresses[i]);
        r.addresses.push_back(addresses[i]);
        r.depths.push_back(static_cast<std::uint32_t>(a.frames.size()));
        if (!a.frames.empty() && !a.frames.back().function.empty()) ++summary.resolved;
        for (const symbolize::Frame& f : a.frames) {
          r.functions.push_back(strings.id(f.function));
          r.files.push_back(strings.id(f.file));
          r.lines.push_back(f.line);
        }
      }
      r.strings = strings.take();
      channel.add(std::move(r));
    }
  }
  cache_.clear();  // the records hold it now
  if (progress_ && missing != 0) std::fprintf(stderr, "\rmemtrack record: symbolized %zu addresses\x1b[K\n", total);
  summary.seconds_at_end = seconds_since(started);
  summary.ahead_cpu_seconds = worker_cpu_seconds_;
  return summary;
}

}  // namespace memtrack::runtime
