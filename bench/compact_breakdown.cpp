// memtrack-compact-breakdown: where an artifact's bytes go (issue 25). A bench tool, not part of the product:
// it walks the file's frames itself (docs/FORMAT.md, "Layers", "Context section: frame layout") and prints
//   - the bytes on file of the data frames, the context frames and the frame index, per event;
//   - for compact data frames (version 2 to 5), every column of every frame compressed alone at LEVEL (one
//     zstd frame per column per data frame, as a frame's columns would be if each were its own stream);
//   - for context frames, the records of each `type` of each context frame compressed alone at LEVEL.
// The per-column and per-type figures are attributions (compressing a column alone loses the matches zstd
// finds across columns), so they add up to about, not exactly, the bytes on file.
//
// usage: memtrack-compact-breakdown ARTIFACT [LEVEL]   (LEVEL default 1, the compact default)
#include <zstd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <msgpack.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Bytes = std::vector<unsigned char>;

std::uint32_t le32(const unsigned char* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24;
}

Bytes decompress(const unsigned char* p, std::size_t n) {
  const unsigned long long size = ZSTD_getFrameContentSize(p, n);
  if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR || size > (1u << 26)) {
    throw std::runtime_error("a frame without a usable content size");
  }
  Bytes out(size);
  const std::size_t got = ZSTD_decompress(out.data(), out.size(), p, n);
  if (ZSTD_isError(got) || got != size) throw std::runtime_error("a frame that does not decompress");
  return out;
}

std::size_t compressed_size(const Bytes& b, int level) {
  if (b.empty()) return 0;
  Bytes out(ZSTD_compressBound(b.size()));
  const std::size_t n = ZSTD_compress(out.data(), out.size(), b.data(), b.size(), level);
  if (ZSTD_isError(n)) throw std::runtime_error("compression failed");
  return n;
}

struct Reader {
  const Bytes& b;
  std::size_t at = 0;
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (at >= b.size()) throw std::runtime_error("content ends inside a varint");
      const unsigned char c = b[at++];
      v |= std::uint64_t{c & 0x7Fu} << shift;
      if ((c & 0x80) == 0) return v;
    }
    throw std::runtime_error("a varint above 64 bits");
  }
  void skip(std::size_t n) {
    if (b.size() - at < n) throw std::runtime_error("content ends inside a column");
    at += n;
  }
  void varints(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) varint();
  }
};

// column name -> (raw bytes, compressed bytes summed over frames)
struct Tally {
  std::size_t raw = 0;
  std::size_t packed = 0;
};
std::vector<std::string> order;
std::map<std::string, Tally> columns;
std::map<std::string, Tally> records;
// The data frames compressed whole at LEVEL, and compressed with a zstd block ended (ZSTD_e_flush) at every
// column boundary (and, in version 3, every timestamp group's): what a writer that ends blocks there would
// write, each column (group) with literal statistics of its own.
std::size_t whole_bytes = 0;
std::size_t flushed_bytes = 0;

std::size_t flushed_size(const Bytes& b, const std::vector<std::size_t>& cuts, int level) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_setPledgedSrcSize(c, b.size());
  Bytes out(ZSTD_compressBound(b.size()) + 64 * (cuts.size() + 1));
  ZSTD_outBuffer o{out.data(), out.size(), 0};
  std::size_t from = 0;
  for (std::size_t k = 0; k <= cuts.size(); ++k) {
    const std::size_t to = k < cuts.size() ? cuts[k] : b.size();
    if (to < from) continue;
    ZSTD_inBuffer in{b.data() + from, to - from, 0};
    const ZSTD_EndDirective mode = k < cuts.size() ? ZSTD_e_flush : ZSTD_e_end;
    std::size_t r = 0;
    do {
      r = ZSTD_compressStream2(c, &o, &in, mode);
      if (ZSTD_isError(r)) throw std::runtime_error("compression failed");
    } while (r != 0);
    from = to;
  }
  ZSTD_freeCCtx(c);
  return o.pos;
}

void add(std::map<std::string, Tally>& to, const std::string& name, const Bytes& all, std::size_t from,
         std::size_t to_offset, int level) {
  Bytes part(all.begin() + static_cast<std::ptrdiff_t>(from), all.begin() + static_cast<std::ptrdiff_t>(to_offset));
  if (&to == &columns && !to.contains(name)) order.push_back(name);
  Tally& t = to[name];
  t.raw += part.size();
  t.packed += compressed_size(part, level);
}

// Splits a compact frame's content into its columns (docs/FORMAT.md, "Compact data frames"). Returns N.
std::size_t split_compact(const Bytes& c, int level) {
  Reader r{c};
  r.skip(4);
  const unsigned version = c.at(4);
  r.at = 5;
  if (version < 2 || version > 5) throw std::runtime_error("compact version " + std::to_string(version));
  const std::size_t n = r.varint();
  std::size_t mark = r.at;
  std::vector<std::size_t> cuts;
  auto cut = [&](const std::string& name) {
    add(columns, name, c, mark, r.at, level);
    mark = r.at;
    cuts.push_back(r.at);
  };
  add(columns, "header", c, 0, mark, level);
  std::size_t frees = 0;
  for (std::size_t i = 0; i < n; ++i) frees += (c.at(r.at + i) & 0x0F) == 2 ? 1 : 0;
  r.skip(n);
  cut("tokens");
  const std::size_t d = r.varint();
  r.varints(2 * d);
  cut("thread dictionary");
  r.varints(n);
  bool short_gaps[9] = {};
  if (version >= 4) {
    for (bool& s : short_gaps) s = c.at(r.at++) == 1;
  }
  cut("threads");
  // Version 3's timestamp groups (docs/FORMAT.md): 3 * class(kind) + class(previous kind).
  std::size_t groups[9] = {};
  {
    unsigned before = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const unsigned k = c.at(5 + (n < 128 ? 1 : n < 16384 ? 2 : 3) + i) & 0x0F;
      const unsigned now = version >= 3 ? (k == 2 || k == 7 ? 0u : k == 4 ? 1u : 2u) : 0u;
      ++groups[3 * now + before];
      before = now;
    }
  }
  // Version 4's short gaps: the escaped ones (byte 255) have a low byte and a high part after the group's bytes.
  std::size_t escaped[9] = {};
  for (std::size_t g = 0, at = r.at; g < 9; ++g) {
    escaped[g] = groups[g];
    if (short_gaps[g])
      escaped[g] = static_cast<std::size_t>(std::count(c.begin() + static_cast<std::ptrdiff_t>(at),
                                                       c.begin() + static_cast<std::ptrdiff_t>(at + groups[g]),
                                                       static_cast<unsigned char>(0xFF)));
    at += groups[g];
    if (groups[g] != 0 && version >= 3) cuts.push_back(at);
  }
  r.skip(n);
  cut("timestamps, low bytes (or short gaps)");
  for (std::size_t g = 0; g < 9; ++g) {
    if (short_gaps[g]) {
      r.skip(escaped[g]);  // the escaped gaps' low bytes, then their high parts
      if (escaped[g] != 0) cuts.push_back(r.at);
    }
    r.varints(escaped[g]);
    if (escaped[g] != 0 && version >= 3) cuts.push_back(r.at);
  }
  cut(version >= 4 ? "timestamps, escaped low bytes and high parts" : "timestamps, high parts");
  r.skip(n - frees);
  cut("sizes, low bytes");
  r.varints(n - frees);
  cut("sizes, high parts");
  for (const char* name : {"live ranks", "class references", "release references", "deltas", "delta remainders"}) {
    if (version < 5 && name[0] == 'd' && name[6] == 'r') break;  // the remainders: version 5 on
    const std::size_t l = r.varint();
    r.skip(l);
    cut(name);
  }
  if (version >= 5 && c.at(r.at++) == 1) {  // the stack section: flag, first event, dictionary, codes
    r.varint();
    const std::size_t s = r.varint();
    r.varints(s);
    cut("stacks, flag and dictionary");
    r.at = c.size();
    cut("stacks, codes");
  } else if (version >= 5) {
    cut("stacks, flag");
  }
  if (r.at != c.size()) throw std::runtime_error("bytes after the last column");
  std::sort(cuts.begin(), cuts.end());
  whole_bytes += compressed_size(c, level);
  flushed_bytes += flushed_size(c, cuts, level);
  return n;
}

void split_context(const Bytes& c, int level) {
  std::size_t off = 0;
  // Per type, the records of this context frame, concatenated.
  std::map<std::string, Bytes> by_type;
  while (off < c.size()) {
    const std::size_t start = off;
    msgpack::object_handle oh = msgpack::unpack(reinterpret_cast<const char*>(c.data()), c.size(), off);
    std::string type = "?";
    const msgpack::object& o = oh.get();
    if (o.type == msgpack::type::MAP) {
      for (std::uint32_t i = 0; i < o.via.map.size; ++i) {
        const auto& kv = o.via.map.ptr[i];
        if (kv.key.type == msgpack::type::STR && kv.key.as<std::string>() == "type" &&
            kv.val.type == msgpack::type::STR) {
          type = kv.val.as<std::string>();
        }
      }
    }
    Bytes& to = by_type[type];
    to.insert(to.end(), c.begin() + static_cast<std::ptrdiff_t>(start), c.begin() + static_cast<std::ptrdiff_t>(off));
  }
  for (const auto& [type, b] : by_type) add(records, type, b, 0, b.size(), level);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: memtrack-compact-breakdown ARTIFACT [LEVEL]\n");
    return 2;
  }
  const int level = argc == 3 ? std::atoi(argv[2]) : 1;
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "%s: cannot open\n", argv[1]);
    return 1;
  }
  const Bytes file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t events = 0, data_bytes = 0, context_bytes = 0, other_bytes = 0, frames = 0, msgpack_frames = 0;
  std::size_t off = 0;
  try {
    while (off + 8 <= file.size()) {
      const std::uint32_t magic = le32(&file[off]);
      if (magic == 0xFD2FB528u) {
        const std::size_t n = ZSTD_findFrameCompressedSize(&file[off], file.size() - off);
        if (ZSTD_isError(n)) throw std::runtime_error("a damaged data frame");
        const Bytes content = decompress(&file[off], n);
        ++frames;
        data_bytes += n;
        if (content.size() >= 5 && content[0] == 0xC1 && content[1] == 'm' && content[2] == 't' && content[3] == 'c') {
          events += split_compact(content, level);
        } else {
          ++msgpack_frames;
        }
        off += n;
      } else if ((magic & 0xFFFFFFF0u) == 0x184D2A50u) {
        const std::size_t n = 8 + std::size_t{le32(&file[off + 4])};
        if (off + n > file.size()) throw std::runtime_error("a skippable frame past the end");
        if (magic == 0x184D2A5Bu && n > 16) {
          context_bytes += n;
          split_context(decompress(&file[off + 16], n - 16), level);
        } else {
          other_bytes += n;
        }
        off += n;
      } else {
        throw std::runtime_error("bytes that are no frame");
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: at byte %zu: %s\n", argv[1], off, e.what());
    return 1;
  }
  const double ev = events ? static_cast<double>(events) : 1.0;
  auto per = [ev](std::size_t n) { return static_cast<double>(n) / ev; };
  std::printf("file\t%zu bytes\t%zu events (compact frames)\t%.3f B/event\n", file.size(), events, per(file.size()));
  std::printf("data frames\t%zu (%zu msgpack)\t%zu bytes\t%.3f B/event\n", frames, msgpack_frames, data_bytes,
              per(data_bytes));
  std::printf("context frames\t\t%zu bytes\t%.3f B/event\n", context_bytes, per(context_bytes));
  std::printf("frame index and other\t\t%zu bytes\t%.3f B/event\n", other_bytes, per(other_bytes));
  std::printf("\ncolumn (each alone per frame, level %d)\traw B/event\tcompressed B/event\n", level);
  std::size_t sum = 0;
  for (const auto& name : order) {
    const Tally& t = columns[name];
    sum += t.packed;
    std::printf("%s\t%.3f\t%.3f\n", name.c_str(), per(t.raw), per(t.packed));
  }
  std::printf("columns, sum\t\t%.3f\n", per(sum));
  std::printf("compact frames compressed whole\t\t%.3f\n", per(whole_bytes));
  std::printf("compact frames, a zstd block per column (and timestamp group)\t\t%.3f\n", per(flushed_bytes));
  std::printf("\ncontext record type (each alone per context frame, level %d)\traw B/event\tcompressed B/event\n",
              level);
  sum = 0;
  for (const auto& [name, t] : records) {
    sum += t.packed;
    std::printf("%s\t%.3f\t%.3f\n", name.c_str(), per(t.raw), per(t.packed));
  }
  std::printf("context records, sum\t\t%.3f\n", per(sum));
  return 0;
}
