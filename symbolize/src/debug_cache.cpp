#include "debug_cache.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "memtrack/symbolize/symbolizer.h"

namespace memtrack::symbolize {
namespace {

bool is_compressed_debug(Elf* elf, Elf_Scn* scn, std::size_t shstrndx) {
  GElf_Shdr shdr;
  if (gelf_getshdr(scn, &shdr) == nullptr || (shdr.sh_flags & SHF_COMPRESSED) == 0) return false;
  const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
  return name != nullptr && std::string_view(name).starts_with(".debug");
}

bool has_compressed_debug_sections(Elf* elf) {
  std::size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return false;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;)
    if (is_compressed_debug(elf, scn, shstrndx)) return true;
  return false;
}

// Moves each program header of `out` (copied from `in`) with the section its offset falls in: the output's
// layout is new (libelf's), and libdwfl reads the build-id note through PT_NOTE.
bool move_program_headers(Elf* in, Elf* out, std::size_t phnum) {
  for (std::size_t i = 0; i < phnum; ++i) {
    GElf_Phdr phdr;
    if (gelf_getphdr(out, static_cast<int>(i), &phdr) == nullptr) return false;
    Elf_Scn* to = nullptr;
    for (Elf_Scn* from = nullptr; (from = elf_nextscn(in, from)) != nullptr;) {
      to = elf_nextscn(out, to);
      GElf_Shdr old_shdr, new_shdr;
      if (to == nullptr || gelf_getshdr(from, &old_shdr) == nullptr || gelf_getshdr(to, &new_shdr) == nullptr) break;
      if (old_shdr.sh_type == SHT_NOBITS || old_shdr.sh_size == 0) continue;
      if (phdr.p_offset >= old_shdr.sh_offset && phdr.p_offset < old_shdr.sh_offset + old_shdr.sh_size) {
        phdr.p_offset = new_shdr.sh_offset + (phdr.p_offset - old_shdr.sh_offset);
        if (gelf_update_phdr(out, static_cast<int>(i), &phdr) == 0) return false;
        break;
      }
    }
  }
  return true;
}

// Writes an uncompressed copy of `in` to the file open at `out_fd`: the same header, program headers and
// sections in the same order, each compressed .debug section inflated; libelf lays the file out anew.
bool write_decompressed(Elf* in, int out_fd) {
  std::size_t shstrndx = 0, phnum = 0;
  GElf_Ehdr ehdr;
  if (elf_getshdrstrndx(in, &shstrndx) != 0 || elf_getphdrnum(in, &phnum) != 0 || gelf_getehdr(in, &ehdr) == nullptr)
    return false;
  Elf* out = elf_begin(out_fd, ELF_C_WRITE, nullptr);
  if (out == nullptr) return false;
  bool ok = gelf_newehdr(out, gelf_getclass(in)) != nullptr;
  if (ok && phnum != 0) {
    ok = gelf_newphdr(out, phnum) != nullptr;
    for (std::size_t i = 0; ok && i < phnum; ++i) {
      GElf_Phdr phdr;
      ok = gelf_getphdr(in, static_cast<int>(i), &phdr) != nullptr &&
           gelf_update_phdr(out, static_cast<int>(i), &phdr) != 0;
    }
  }
  for (Elf_Scn* scn = nullptr; ok && (scn = elf_nextscn(in, scn)) != nullptr;) {
    if (is_compressed_debug(in, scn, shstrndx)) ok = elf_compress(scn, 0, 0) >= 0;
    GElf_Shdr shdr;
    Elf_Scn* copy = ok ? elf_newscn(out) : nullptr;
    ok = copy != nullptr && gelf_getshdr(scn, &shdr) != nullptr;
    for (Elf_Data* data = nullptr; ok && (data = elf_getdata(scn, data)) != nullptr;) {
      Elf_Data* to = elf_newdata(copy);
      ok = to != nullptr;
      if (ok) *to = *data;  // the buffer stays the input's until elf_update has written it
    }
    ok = ok && gelf_update_shdr(copy, &shdr) != 0;
  }
  GElf_Ehdr to;
  if (ok && (ok = gelf_getehdr(out, &to) != nullptr)) {
    std::memcpy(to.e_ident, ehdr.e_ident, EI_NIDENT);
    to.e_type = ehdr.e_type;
    to.e_machine = ehdr.e_machine;
    to.e_version = ehdr.e_version;
    to.e_entry = ehdr.e_entry;
    to.e_flags = ehdr.e_flags;
    to.e_shstrndx = ehdr.e_shstrndx;
    ok = gelf_update_ehdr(out, &to) != 0;
  }
  ok = ok && elf_update(out, ELF_C_NULL) >= 0 && move_program_headers(in, out, phnum) &&
       elf_update(out, ELF_C_WRITE) >= 0;
  elf_end(out);
  return ok;
}

}  // namespace

std::string cached_debug_file(const BuildId& id, const std::string& dir) {
  if (dir.empty() || id.size == 0) return {};
  const std::string path = dir + "/" + to_hex(id) + ".debug";
  BuildId cached;
  return read_build_id(path, cached) && cached == id ? path : std::string();
}

std::string write_decompressed_copy(const std::string& path, const BuildId& id, const std::string& dir) {
  if (dir.empty() || id.size == 0) return {};
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  elf_version(EV_CURRENT);
  Elf* in = elf_begin(fd, ELF_C_READ, nullptr);  // not mmap: elf_compress replaces the sections' data
  std::string target;
  if (in != nullptr && elf_kind(in) == ELF_K_ELF && has_compressed_debug_sections(in)) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    target = dir + "/" + to_hex(id) + ".debug";
    std::string temp = target + ".XXXXXX";
    const int out = ::mkostemp(temp.data(), O_CLOEXEC);
    const bool ok = out >= 0 && write_decompressed(in, out);
    const bool closed = out >= 0 && ::close(out) == 0;
    BuildId written;
    if (!ok || !closed || !read_build_id(temp, written) || !(written == id) ||
        ::rename(temp.c_str(), target.c_str()) != 0) {
      if (out >= 0) ::unlink(temp.c_str());
      target.clear();
    }
  }
  if (in != nullptr) elf_end(in);
  ::close(fd);
  return target;
}

std::string default_debug_cache_dir() {
  if (const char* env = std::getenv("MEMTRACK_DEBUG_CACHE"); env != nullptr)
    return std::strcmp(env, "off") == 0 ? std::string() : std::string(env);
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/')
    return std::string(xdg) + "/memtrack/debug";
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/')
    return std::string(home) + "/.cache/memtrack/debug";
  return {};
}

}  // namespace memtrack::symbolize
