// memtrack-symbolize-addrs: addr2line over memtrack::symbolize. Reads module-relative hex addresses from
// the arguments or, if none, from stdin (one per line), and prints each address's frames. --stats prints
// the time and the addresses per second to stderr (bench/symbolize_throughput.sh uses it).
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "memtrack/symbolize/symbolizer.h"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: memtrack-symbolize-addrs -e MODULE [--build-id HEX] [--return-addresses] "
               "[--debug-dir DIR]... [--stats] [--quiet] [ADDR...]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace memtrack::symbolize;
  ModuleRef module;
  Options options;
  bool custom_debug_dirs = false;
  AddressKind kind = AddressKind::exact;
  bool stats = false;
  bool quiet = false;
  std::vector<std::uint64_t> addresses;
  auto parse_address = [&](const char* text) {
    char* end = nullptr;
    const unsigned long long value = std::strtoull(text, &end, 16);
    if (end == text || *end != '\0') {
      std::fprintf(stderr, "memtrack-symbolize-addrs: not a hex address: '%s'\n", text);
      return false;
    }
    addresses.push_back(value);
    return true;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "-e" || arg == "--build-id" || arg == "--debug-dir") && i + 1 >= argc) return usage();
    if (arg == "-e") {
      module.path = argv[++i];
    } else if (arg == "--build-id") {
      const char* hex = argv[++i];
      if (!build_id_from_hex(hex, std::strlen(hex), module.build_id)) {
        std::fprintf(stderr, "memtrack-symbolize-addrs: not a build-id: '%s'\n", hex);
        return 2;
      }
    } else if (arg == "--debug-dir") {
      if (!custom_debug_dirs) options.debug_dirs.clear();
      custom_debug_dirs = true;
      options.debug_dirs.emplace_back(argv[++i]);
    } else if (arg == "--return-addresses") {
      kind = AddressKind::return_address;
    } else if (arg == "--stats") {
      stats = true;
    } else if (arg == "--quiet") {
      quiet = true;
    } else if (!arg.empty() && arg[0] == '-' && arg != "-") {
      return usage();
    } else if (!parse_address(argv[i])) {
      return 2;
    }
  }
  if (module.path.empty()) return usage();
  if (addresses.empty()) {
    std::string line;
    while (std::getline(std::cin, line)) {
      if (line.empty()) continue;
      if (!parse_address(line.c_str())) return 1;
    }
  }

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  Symbolizer symbolizer(options);
  const ModuleInfo& info = symbolizer.open(module);
  const auto opened = Clock::now();
  const std::vector<SymbolizedAddress> results = symbolizer.symbolize(module, addresses, kind);
  const auto end = Clock::now();

  if (info.status != ModuleStatus::ok) std::fprintf(stderr, "memtrack-symbolize-addrs: %s\n", info.message.c_str());
  std::size_t by_source[4] = {};
  std::size_t frames = 0;
  std::size_t inlined = 0;
  for (const SymbolizedAddress& result : results) {
    ++by_source[static_cast<int>(result.source)];
    frames += result.frames.size();
    for (const Frame& frame : result.frames) inlined += frame.inlined ? 1 : 0;
    if (quiet) continue;
    if (result.frames.empty()) {
      std::printf("0x%" PRIx64 " %s+0x%" PRIx64 "\n", result.address, info.path.c_str(), result.address);
      continue;
    }
    bool first = true;
    for (const Frame& frame : result.frames) {
      if (first) {
        std::printf("0x%" PRIx64 " ", result.address);
      } else {
        std::printf("    ");
      }
      std::printf("%s", frame.function.empty() ? "??" : frame.function.c_str());
      if (!frame.file.empty()) std::printf(" at %s:%u", frame.file.c_str(), frame.line);
      if (frame.inlined) std::printf(" (inlined)");
      std::printf("\n");
      first = false;
    }
  }
  if (stats) {
    const double open_s = std::chrono::duration<double>(opened - start).count();
    const double lookup_s = std::chrono::duration<double>(end - opened).count();
    const double total_s = open_s + lookup_s;
    std::fprintf(stderr,
                 "%s: %zu addresses in %.3f s (open %.3f s, lookups %.3f s): %.0f addresses/s overall, %.0f/s "
                 "lookups only; dwarf %zu, symtab %zu, dynsym %zu, none %zu; %zu frames, %zu inlined; "
                 "symbols %s, dwarf %s%s%s\n",
                 info.path.c_str(), results.size(), total_s, open_s, lookup_s,
                 total_s > 0 ? static_cast<double>(results.size()) / total_s : 0.0,
                 lookup_s > 0 ? static_cast<double>(results.size()) / lookup_s : 0.0, by_source[1], by_source[2],
                 by_source[3], by_source[0], frames, inlined, to_string(info.symbols), info.has_dwarf ? "yes" : "no",
                 info.debug_file.empty() ? "" : " from ", info.debug_file.c_str());
  }
  return 0;
}
