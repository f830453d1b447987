// An ELF image's defined symbols found by name through its GNU hash table (DT_GNU_HASH in memory, the
// .gnu.hash section in its file): per name, one bucket and its chain are read, not the whole symbol table.
// python.cpp looks up the interpreter's runtime in memory; patch/sites.cpp looks up the allocator entries in
// a stripped image's file, where every index and name is checked against the sections' sizes (a file is
// read as it is, the loader's checks are not behind it).
#pragma once

#include <elf.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#pragma GCC visibility push(hidden)

namespace memtrack::preload {

struct GnuHashSymbols {
  const Elf64_Sym* syms = nullptr;
  size_t nsyms = SIZE_MAX;  // SIZE_MAX: not known (an image in memory, whose loader checked it)
  const char* strs = nullptr;
  size_t strs_len = SIZE_MAX;
  const uint32_t* hash = nullptr;  // the table: nbuckets, symoffset, bloom words, shift, bloom, buckets, chains
  size_t hash_words = SIZE_MAX;
};

// Calls f(const Elf64_Sym&) for every defined symbol named `name` (a name may have several versions), in
// table order; stops early when f returns false.
template <typename F>
void for_each_gnu_hash_match(const GnuHashSymbols& s, const char* name, F&& f) {
  if (s.syms == nullptr || s.strs == nullptr || s.hash == nullptr || s.hash_words < 4) return;
  uint32_t h = 5381;
  for (const char* c = name; *c; ++c) h = h * 33 + static_cast<uint8_t>(*c);
  const uint32_t nbuckets = s.hash[0], symoffset = s.hash[1], bloom_words = s.hash[2];
  const size_t chains_at = 4 + 2 * static_cast<size_t>(bloom_words) + nbuckets;  // 64-bit bloom words
  if (nbuckets == 0 || chains_at > s.hash_words) return;
  const uint32_t* buckets = s.hash + 4 + 2 * static_cast<size_t>(bloom_words);
  const uint32_t* chain = buckets + nbuckets;
  const size_t name_len = strlen(name);
  for (size_t i = buckets[h % nbuckets]; i >= symoffset && i < s.nsyms; ++i) {
    const size_t link = i - symoffset;
    if (link >= s.hash_words - chains_at) return;
    const uint32_t ch = chain[link];
    if ((ch | 1) == (h | 1)) {
      // strncmp stops at the name's NUL: in memory the string table's size is not known.
      const Elf64_Sym& sym = s.syms[i];
      if (sym.st_name < s.strs_len && s.strs_len - sym.st_name > name_len &&
          strncmp(s.strs + sym.st_name, name, name_len + 1) == 0 && sym.st_shndx != SHN_UNDEF && sym.st_value != 0 &&
          !f(sym))
        return;
    }
    if ((ch & 1) != 0) return;  // the chain's last entry
  }
}

// The first defined symbol named `name`, or nullptr.
inline const Elf64_Sym* gnu_hash_lookup(const GnuHashSymbols& s, const char* name) {
  const Elf64_Sym* found = nullptr;
  for_each_gnu_hash_match(s, name, [&](const Elf64_Sym& sym) {
    found = &sym;
    return false;
  });
  return found;
}

}  // namespace memtrack::preload

#pragma GCC visibility pop
