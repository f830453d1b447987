// Build-id of a module mapped in this process, read from its PT_NOTE segments. libc only, no allocation:
// the LD_PRELOAD library links this file (see build_id.h and symbolize/CMakeLists.txt).
#include <elf.h>
#include <link.h>

#include <cstring>

#include "memtrack/symbolize/build_id.h"

namespace memtrack::symbolize {
namespace {

constexpr std::size_t align_up(std::size_t value, std::size_t alignment) {
  return (value + alignment - 1) & ~(alignment - 1);
}

// Walks one note segment. Each note is a 12-byte header, the name and the descriptor; the descriptor and the
// next note start at offsets aligned to the segment's alignment (4 for classic notes; 8 for the gABI 64-bit
// layout that .note.gnu.property uses, where the 12-byte header makes the name's padding 4 bytes, not 8).
bool find_in_notes(const unsigned char* notes, std::size_t size, std::size_t alignment, BuildId& out) {
  std::size_t pos = 0;
  while (pos < size && size - pos >= sizeof(ElfW(Nhdr))) {
    ElfW(Nhdr) header;
    std::memcpy(&header, notes + pos, sizeof header);
    const std::size_t name = pos + sizeof header;
    if (header.n_namesz > size - name) return false;  // malformed: stop
    const std::size_t desc = align_up(name + header.n_namesz, alignment);
    if (desc > size || header.n_descsz > size - desc) return false;
    if (header.n_type == NT_GNU_BUILD_ID && header.n_namesz == 4 && std::memcmp(notes + name, "GNU", 4) == 0) {
      return build_id_from_bytes(notes + desc, header.n_descsz, out);
    }
    pos = align_up(desc + header.n_descsz, alignment);
  }
  return false;
}

struct AddressQuery {
  ElfW(Addr) address;
  BuildId* out;
  ElfW(Addr) load_bias;
  bool found;
};

int match_module(dl_phdr_info* info, std::size_t, void* data) {
  auto* query = static_cast<AddressQuery*>(data);
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const ElfW(Addr) start = info->dlpi_addr + ph.p_vaddr;
    if (query->address >= start && query->address - start < ph.p_memsz) {
      query->found = true;
      query->load_bias = info->dlpi_addr;
      build_id_of(*info, *query->out);
      return 1;
    }
  }
  return 0;
}

}  // namespace

bool build_id_from_bytes(const void* data, std::size_t size, BuildId& out) noexcept {
  out.size = 0;
  if (size == 0 || size > kMaxBuildIdSize) return false;
  std::memcpy(out.bytes, data, size);
  out.size = static_cast<std::uint8_t>(size);
  return true;
}

bool build_id_from_phdrs(ElfW(Addr) load_bias, const ElfW(Phdr) * phdrs, std::size_t phnum, BuildId& out) noexcept {
  out.size = 0;
  if (phdrs == nullptr) return false;
  for (std::size_t i = 0; i < phnum; ++i) {
    const ElfW(Phdr)& ph = phdrs[i];
    if (ph.p_type != PT_NOTE) continue;
    const std::size_t alignment = ph.p_align == 8 ? 8 : 4;
    const std::size_t size = ph.p_filesz < ph.p_memsz ? ph.p_filesz : ph.p_memsz;
    const auto* notes = reinterpret_cast<const unsigned char*>(load_bias + ph.p_vaddr);
    if (find_in_notes(notes, size, alignment, out)) return true;
  }
  return false;
}

bool build_id_of_address(const void* address, BuildId& out, ElfW(Addr) * load_bias) noexcept {
  out.size = 0;
  AddressQuery query{reinterpret_cast<ElfW(Addr)>(address), &out, 0, false};
  dl_iterate_phdr(match_module, &query);
  if (load_bias != nullptr) *load_bias = query.load_bias;
  return query.found && !out.empty();
}

std::size_t build_id_to_hex(const BuildId& id, char* out, std::size_t capacity) noexcept {
  static constexpr char kDigits[] = "0123456789abcdef";
  const std::size_t digits = 2 * std::size_t{id.size};
  if (capacity < digits + 1) {
    if (capacity > 0) out[0] = '\0';
    return 0;
  }
  for (std::size_t i = 0; i < id.size; ++i) {
    out[2 * i] = kDigits[id.bytes[i] >> 4];
    out[2 * i + 1] = kDigits[id.bytes[i] & 0xf];
  }
  out[digits] = '\0';
  return digits;
}

bool build_id_from_hex(const char* hex, std::size_t length, BuildId& out) noexcept {
  out.size = 0;
  if (length % 2 != 0 || length / 2 > kMaxBuildIdSize) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < length / 2; ++i) {
    const int hi = nibble(hex[2 * i]);
    const int lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out.bytes[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  out.size = static_cast<std::uint8_t>(length / 2);
  return true;
}

}  // namespace memtrack::symbolize
