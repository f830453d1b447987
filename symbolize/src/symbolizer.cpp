// The Symbolizer: one Dwfl session per module, each module's ELF (and its separate debug file) opened once
// and kept for the Symbolizer's lifetime, so a batch of addresses costs lookups only. Opening is in
// module_open.cpp, DWARF lookup in dwarf_frames.cpp, the symbol-table fallback in elf_symbols.cpp.
#include "memtrack/symbolize/symbolizer.h"

#include <cxxabi.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>

#include "module_internal.h"
#include "names_internal.h"

namespace memtrack::symbolize {

const char* to_string(Source source) noexcept {
  switch (source) {
    case Source::none:
      return "none";
    case Source::dwarf:
      return "dwarf";
    case Source::symtab:
      return "symtab";
    case Source::dynsym:
      return "dynsym";
  }
  return "?";
}

const char* to_string(ModuleStatus status) noexcept {
  switch (status) {
    case ModuleStatus::ok:
      return "ok";
    case ModuleStatus::missing:
      return "missing";
    case ModuleStatus::build_id_mismatch:
      return "build_id_mismatch";
    case ModuleStatus::not_elf:
      return "not_elf";
  }
  return "?";
}

std::string to_hex(const BuildId& id) {
  char text[2 * kMaxBuildIdSize + 1];
  build_id_to_hex(id, text, sizeof text);
  return text;
}

std::string demangle(std::string_view name) {
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') return std::string(name);
  std::string text(name);
  int status = 0;
  char* out = abi::__cxa_demangle(text.c_str(), nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) return text;
  std::string result(out);
  std::free(out);
  return result;
}

struct Symbolizer::Impl {
  Options options;
  NameCache names{options.demangle};
  ModuleOpener opener{options};
  std::map<std::string, std::unique_ptr<Module>> modules;

  explicit Impl(Options opts) : options(std::move(opts)) {}

  Module& open(const ModuleRef& ref) {
    std::string key = ref.path;
    key += '\0';
    key += to_hex(ref.build_id);
    auto it = modules.find(key);
    if (it != modules.end()) return *it->second;
    auto module = std::make_unique<Module>();
    Module& m = *module;
    modules.emplace(std::move(key), std::move(module));
    opener.open(ref, m);
    return m;
  }

  void symbolize_address(Module& m, std::uint64_t address, AddressKind kind, SymbolizedAddress& out) {
    out.address = address;
    if (m.mod == nullptr) return;
    const Dwarf_Addr pc = kind == AddressKind::return_address && address > 0 ? address - 1 : address;

    ElfSymbol* symbol = m.symbols.find(m.mod, pc);
    if (symbol != nullptr) out.symbol_offset = address - symbol->value;

    if (m.info.has_dwarf && m.dwarf.frames(m.mod, names, pc, symbol, out)) {
      out.source = Source::dwarf;
      Frame& outer = out.frames.back();
      if (outer.function.empty() && symbol != nullptr) outer.function = symbol_name(names, *symbol);
      if (outer.function.empty() && out.frames.size() == 1 && outer.file.empty()) {
        out.frames.clear();  // nothing useful in it
      } else {
        return;
      }
    }
    if (symbol == nullptr) {
      out.source = Source::none;
      out.symbol_offset = 0;
      return;
    }
    out.source = m.info.symbols == Source::dynsym ? Source::dynsym : Source::symtab;
    Frame frame;
    frame.function = symbol_name(names, *symbol);
    out.frames.push_back(std::move(frame));
  }
};

Symbolizer::Symbolizer(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Symbolizer::~Symbolizer() = default;

const ModuleInfo& Symbolizer::open(const ModuleRef& module) { return impl_->open(module).info; }

std::size_t Symbolizer::modules_open() const { return impl_->modules.size(); }

std::vector<SymbolizedAddress> Symbolizer::symbolize(const ModuleRef& module, std::span<const std::uint64_t> addresses,
                                                     AddressKind kind, const ProgressFn& progress) {
  Module& m = impl_->open(module);
  std::vector<SymbolizedAddress> results(addresses.size());
  // Stacks share most of their frames: each distinct address is looked up once per batch.
  std::unordered_map<std::uint64_t, std::size_t> seen;
  seen.reserve(addresses.size());
  const std::size_t interval = impl_->options.progress_interval == 0 ? 4096 : impl_->options.progress_interval;
  Progress report{0, addresses.size(), module.path};
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    if (progress && i > 0 && i % interval == 0) {
      report.done = i;
      if (!progress(report)) {
        for (std::size_t j = i; j < addresses.size(); ++j) results[j].address = addresses[j];
        return results;
      }
    }
    auto [it, inserted] = seen.emplace(addresses[i], i);
    if (!inserted) {
      results[i] = results[it->second];
      continue;
    }
    impl_->symbolize_address(m, addresses[i], kind, results[i]);
  }
  if (progress) {
    report.done = addresses.size();
    progress(report);
  }
  return results;
}

SymbolizedAddress Symbolizer::symbolize_one(const ModuleRef& module, std::uint64_t address, AddressKind kind) {
  SymbolizedAddress result;
  impl_->symbolize_address(impl_->open(module), address, kind, result);
  return result;
}

}  // namespace memtrack::symbolize
