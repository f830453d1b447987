// Build-ids: the GNU build-id note (NT_GNU_BUILD_ID) names one exact build of an ELF module, so an address
// recorded in one process can be resolved later against the same file, or against its separate debug file
// (/usr/lib/debug/.build-id/xx/yyyy.debug), and a file replaced on disk since the recording is detected.
//
// This header and its code (target memtrack::build_id) depend on libc only: no allocation, no exceptions,
// no libstdc++ symbols, no sanitizer instrumentation, so the LD_PRELOAD library can link it and read the
// build-id of each module as it is mapped. Reading the build-id of a file on disk needs libelf and lives in
// symbolizer.h.
#pragma once

#include <link.h>

#include <cstddef>
#include <cstdint>

namespace memtrack::symbolize {

// GNU ld and lld write 20 bytes (sha1) by default, 16 for md5/uuid; --build-id=0x<hex> can be longer.
// Longer notes are rejected rather than truncated, so two different ids never compare equal.
inline constexpr std::size_t kMaxBuildIdSize = 64;

struct BuildId {
  std::uint8_t size = 0;  // 0: none known
  std::uint8_t bytes[kMaxBuildIdSize] = {};

  [[nodiscard]] bool empty() const noexcept { return size == 0; }
  friend bool operator==(const BuildId& a, const BuildId& b) noexcept {
    if (a.size != b.size) return false;
    for (std::size_t i = 0; i < a.size; ++i) {
      if (a.bytes[i] != b.bytes[i]) return false;
    }
    return true;
  }
};

// Copies `size` bytes into a BuildId. False (and `out` left empty) when size exceeds kMaxBuildIdSize.
bool build_id_from_bytes(const void* data, std::size_t size, BuildId& out) noexcept;

// Finds the NT_GNU_BUILD_ID note in the PT_NOTE segments of a module mapped in this process, given its load
// bias (dl_phdr_info::dlpi_addr, link_map::l_addr) and its program headers. Reads memory only: no allocation,
// no locks, no system calls, so it is async-signal-safe as long as the module stays mapped. Handles notes
// aligned to 4 (the usual .note.gnu.build-id) and to 8 (PT_NOTE segments that also hold .note.gnu.property).
// False (and `out` empty) when the module has no build-id note, or a malformed or oversized one.
bool build_id_from_phdrs(ElfW(Addr) load_bias, const ElfW(Phdr) * phdrs, std::size_t phnum, BuildId& out) noexcept;

// The same for one dl_iterate_phdr() entry.
inline bool build_id_of(const dl_phdr_info& info, BuildId& out) noexcept {
  return build_id_from_phdrs(info.dlpi_addr, info.dlpi_phdr, info.dlpi_phnum, out);
}

// Finds, with dl_iterate_phdr(), the loaded module whose PT_LOAD segments contain `address`, and returns its
// build-id and load bias. No allocation, but dl_iterate_phdr() takes the dynamic loader's lock: not for a
// signal handler (use build_id_from_phdrs() from a dl_iterate_phdr callback, or on saved program headers).
bool build_id_of_address(const void* address, BuildId& out, ElfW(Addr) * load_bias = nullptr) noexcept;

// Writes the id as lowercase hex (what `readelf -n` and the .build-id/ paths show) followed by a NUL, into
// `out` of `capacity` bytes. Returns the number of hex digits written (2 * size), or 0 when it does not fit.
std::size_t build_id_to_hex(const BuildId& id, char* out, std::size_t capacity) noexcept;

// Parses hex digits (upper or lower case, nothing else) into `out`. False on odd length, a non-hex
// character or more than kMaxBuildIdSize bytes.
bool build_id_from_hex(const char* hex, std::size_t length, BuildId& out) noexcept;

}  // namespace memtrack::symbolize
