#include "memtrack/symbolize/symbol_table.h"

#include <algorithm>
#include <tuple>

namespace memtrack::symbolize {

const SymbolTable::Address* SymbolTable::find(std::uint32_t module, std::uint64_t address) const {
  auto it = std::lower_bound(addresses.begin(), addresses.end(), std::pair{module, address},
                             [](const Address& entry, const std::pair<std::uint32_t, std::uint64_t>& key) {
                               return std::tie(entry.module, entry.address) < std::tie(key.first, key.second);
                             });
  if (it == addresses.end() || it->module != module || it->address != address) return nullptr;
  return &*it;
}

SymbolTableBuilder::SymbolTableBuilder() { index_.emplace(std::string(), 0); }

std::uint32_t SymbolTableBuilder::intern(std::string_view text) {
  auto [it, inserted] = index_.try_emplace(std::string(text), static_cast<std::uint32_t>(table_.strings.size()));
  if (inserted) table_.strings.emplace_back(text);
  return it->second;
}

std::uint32_t SymbolTableBuilder::add_module(const ModuleRef& module, const ModuleInfo& info) {
  SymbolTable::Module entry;
  entry.path = intern(module.path);
  entry.build_id = module.build_id;
  entry.status = info.status;
  entry.message = intern(info.message);
  table_.modules.push_back(entry);
  return static_cast<std::uint32_t>(table_.modules.size() - 1);
}

void SymbolTableBuilder::add(std::uint32_t module, const SymbolizedAddress& symbolized) {
  SymbolTable::Address entry;
  entry.module = module;
  entry.address = symbolized.address;
  entry.first_frame = static_cast<std::uint32_t>(table_.frames.size());
  entry.frame_count = static_cast<std::uint32_t>(symbolized.frames.size());
  entry.source = symbolized.source;
  for (const Frame& frame : symbolized.frames) {
    table_.frames.push_back({intern(frame.function), intern(frame.file), frame.line, frame.column});
  }
  table_.addresses.push_back(entry);
}

SymbolTable SymbolTableBuilder::finish() {
  auto key = [](const SymbolTable::Address& a) { return std::tie(a.module, a.address); };
  // Stable, so of two entries for one (module, address) the first added is kept. Its frames stay where they
  // are: frames are indexed, not ordered.
  std::stable_sort(table_.addresses.begin(), table_.addresses.end(),
                   [&](const SymbolTable::Address& a, const SymbolTable::Address& b) { return key(a) < key(b); });
  table_.addresses.erase(
      std::unique(table_.addresses.begin(), table_.addresses.end(),
                  [&](const SymbolTable::Address& a, const SymbolTable::Address& b) { return key(a) == key(b); }),
      table_.addresses.end());
  SymbolTable table = std::move(table_);
  table_ = SymbolTable{};
  index_.clear();
  index_.emplace(std::string(), 0);
  return table;
}

SymbolTable symbolize_table(Symbolizer& symbolizer, std::span<const ModuleAddresses> requests,
                            const ProgressFn& progress) {
  SymbolTableBuilder builder;
  std::size_t total = 0;
  for (const ModuleAddresses& request : requests) total += request.addresses.size();
  std::size_t done = 0;
  bool stopped = false;
  for (const ModuleAddresses& request : requests) {
    const std::uint32_t module = builder.add_module(request.module, symbolizer.open(request.module));
    std::vector<SymbolizedAddress> results;
    if (stopped) {
      results.resize(request.addresses.size());
      for (std::size_t i = 0; i < results.size(); ++i) results[i].address = request.addresses[i];
    } else {
      ProgressFn overall;
      if (progress) {
        overall = [&](const Progress& batch) {
          const bool go_on = progress(Progress{done + batch.done, total, batch.module});
          stopped = stopped || !go_on;
          return go_on;
        };
      }
      results = symbolizer.symbolize(request.module, request.addresses, request.kind, overall);
    }
    for (const SymbolizedAddress& result : results) builder.add(module, result);
    done += request.addresses.size();
  }
  return builder.finish();
}

}  // namespace memtrack::symbolize
