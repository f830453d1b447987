#include "symbols_writer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "memtrack/symbolize/symbolizer.h"

namespace memtrack::runtime {

namespace {

// Addresses per Symbols record: its columns and string array stay far below the reader's limits
// (codec::kMaxContextArrayElements, kMaxContextBinBytes) even with deep inlining.
constexpr std::size_t kAddressesPerRecord = 8192;

struct ModuleKey {
  std::string path;
  std::vector<std::uint8_t> build_id;
  friend bool operator<(const ModuleKey& a, const ModuleKey& b) {
    return std::tie(a.path, a.build_id) < std::tie(b.path, b.build_id);
  }
};

// The module of `address` in an image: the last noted one whose range holds it (a range reused after a
// dlclose belongs to the later module; stacks of the earlier one are rare and resolved as the later).
const ModuleEntry* module_of(const ImageTables& image, std::uint64_t address) {
  for (auto it = image.modules.rbegin(); it != image.modules.rend(); ++it)
    if (address >= it->start && address < it->end && !it->path.empty()) return &*it;
  return nullptr;
}

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

}  // namespace

SymbolsSummary write_symbols(const StackTables& tables, pipeline::ContextChannel& channel, bool progress) {
  const auto started = std::chrono::steady_clock::now();
  SymbolsSummary summary;
  std::map<ModuleKey, std::vector<std::uint64_t>> by_module;  // module-relative addresses
  for (const ImageTables& image : tables.images()) {
    for (const auto& [id, address] : image.addresses) {
      if (address == codec::kTruncatedStackAddress) continue;
      const ModuleEntry* m = module_of(image, address);
      if (m == nullptr) {
        ++summary.outside;
        continue;
      }
      by_module[{m->path, m->build_id}].push_back(address - m->bias);
    }
  }
  std::size_t total = 0;
  for (auto& [key, addresses] : by_module) {
    std::sort(addresses.begin(), addresses.end());
    addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
    total += addresses.size();
  }
  symbolize::Symbolizer symbolizer;
  std::size_t done = 0;
  for (const auto& [key, addresses] : by_module) {
    symbolize::ModuleRef ref;
    ref.path = key.path;
    symbolize::build_id_from_bytes(key.build_id.data(), key.build_id.size(), ref.build_id);
    const symbolize::ProgressFn report = [&](const symbolize::Progress& p) {
      if (progress)
        std::fprintf(stderr, "\rmemtrack record: symbolizing %zu/%zu addresses (%.*s)\x1b[K", done + p.done, total,
                     static_cast<int>(p.module.size()), p.module.data());
      return true;
    };
    const std::vector<symbolize::SymbolizedAddress> resolved =
        symbolizer.symbolize(ref, addresses, symbolize::AddressKind::return_address, report);
    done += addresses.size();
    ++summary.modules;
    summary.addresses += addresses.size();
    for (std::size_t begin = 0; begin < resolved.size(); begin += kAddressesPerRecord) {
      const std::size_t end = std::min(resolved.size(), begin + kAddressesPerRecord);
      codec::Symbols r;
      r.path = key.path;
      r.build_id = key.build_id;
      StringTable strings;
      for (std::size_t i = begin; i < end; ++i) {
        const symbolize::SymbolizedAddress& a = resolved[i];
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
  if (progress && total != 0) std::fprintf(stderr, "\rmemtrack record: symbolized %zu addresses\x1b[K\n", total);
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return summary;
}

}  // namespace memtrack::runtime
