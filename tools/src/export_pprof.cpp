#include <elf.h>
#include <fcntl.h>
#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "export_format.h"
#include "memtrack/symbolize/symbolizer.h"
#include "profile.pb.h"

namespace memtrack::tools {
namespace {

namespace pb = perftools::profiles;

// The file offset of the byte at module-relative address `vaddr` of the 64-bit ELF file `path`: its PT_LOAD
// segment's p_offset + (vaddr - p_vaddr). nullopt when the file is gone, unreadable, not ELF64, another
// build than `build_id` (an empty id is not checked, as when symbolizing), or no segment holds `vaddr`.
std::optional<std::uint64_t> file_offset_of(const std::string& path, const std::vector<std::uint8_t>& build_id,
                                            std::uint64_t vaddr) {
  if (!build_id.empty()) {
    symbolize::BuildId recorded, file;
    if (!symbolize::build_id_from_bytes(build_id.data(), build_id.size(), recorded) ||
        !symbolize::read_build_id(path, file) || !(file == recorded))
      return std::nullopt;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<std::uint64_t> offset;
  Elf64_Ehdr eh;
  if (::pread(fd, &eh, sizeof eh, 0) == static_cast<ssize_t>(sizeof eh) &&
      std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
      eh.e_phentsize == sizeof(Elf64_Phdr)) {
    for (unsigned i = 0; i < eh.e_phnum && !offset; ++i) {
      Elf64_Phdr ph;
      if (::pread(fd, &ph, sizeof ph, static_cast<off_t>(eh.e_phoff + i * sizeof ph)) !=
          static_cast<ssize_t>(sizeof ph))
        break;
      if (ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz)
        offset = ph.p_offset + (vaddr - ph.p_vaddr);
    }
  }
  ::close(fd);
  return offset;
}

class Builder {
 public:
  explicit Builder(const std::vector<codec::Module>& modules) : modules_(modules) { string_id(""); }

  std::int64_t string_id(const std::string& s) {
    auto [it, fresh] = strings_.try_emplace(s, static_cast<std::int64_t>(strings_.size()));
    if (fresh) profile.add_string_table(s);
    return it->second;
  }

  std::uint64_t function_id(const std::string& name, const std::string& file) {
    auto [it, fresh] = functions_.try_emplace({name, file}, functions_.size() + 1);
    if (fresh) {
      pb::Function* f = profile.add_function();
      f->set_id(it->second);
      f->set_name(string_id(name));
      f->set_system_name(string_id(name));
      f->set_filename(string_id(file));
    }
    return it->second;
  }

  // The mapping of a module path (0: no module); `bias` receives the address the module-relative addresses
  // are shifted by (the first Module record's).
  std::uint64_t mapping_id(const std::string& path, std::uint64_t& bias) {
    bias = 0;
    if (path.empty()) return 0;
    const codec::Module* record = nullptr;
    for (const codec::Module& m : modules_)
      if (m.path == path) {
        record = &m;
        break;
      }
    if (record) bias = record->bias;
    auto [it, fresh] = mappings_.try_emplace(path, mappings_.size() + 1);
    if (fresh) {
      pb::Mapping* m = profile.add_mapping();
      m->set_id(it->second);
      m->set_filename(string_id(path));
      if (record) {
        m->set_memory_start(record->start);
        m->set_memory_limit(record->end);
        // The mapping starts at the module's lowest PT_LOAD segment (module-relative start - bias: 0 for a
        // PIE or a library, 0x400000 for a typical non-PIE executable); its file offset is that segment's
        // p_offset, read from the file when it is the recorded build. Otherwise 0: GNU ld, gold and lld put
        // the ELF header, at offset 0, at the start of the lowest PT_LOAD segment.
        const std::uint64_t vaddr = record->start >= record->bias ? record->start - record->bias : 0;
        m->set_file_offset(file_offset_of(record->path, record->build_id, vaddr).value_or(0));
        std::string hex;
        for (const std::uint8_t b : record->build_id) {
          static constexpr char kDigits[] = "0123456789abcdef";
          hex += kDigits[b >> 4];
          hex += kDigits[b & 15];
        }
        m->set_build_id(string_id(hex));
      }
      m->set_has_functions(true);
      m->set_has_filenames(true);
      m->set_has_line_numbers(true);
      m->set_has_inline_frames(true);
    }
    return it->second;
  }

  // The locations of a stack, innermost first: frames sharing an address (inlined calls, then their caller)
  // are one location.
  void locations(const std::vector<analysis::SiteFrame>& stack, pb::Sample* sample) {
    for (std::size_t i = 0; i < stack.size();) {
      std::size_t end = i;
      while (end + 1 < stack.size() && stack[end].inlined && !stack[end].truncated_marker &&
             stack[end + 1].address == stack[i].address && stack[end + 1].module == stack[i].module)
        ++end;
      const analysis::SiteFrame& f = stack[i];
      std::string key = f.truncated_marker ? "\x01" : f.module;
      key += '\0';
      key += std::to_string(f.address.value_or(0));
      key += '\0';
      for (std::size_t k = i; k <= end; ++k) key += analysis::frame_name(stack[k]) + '\0';
      auto [it, fresh] = locations_.try_emplace(key, locations_.size() + 1);
      if (fresh) {
        pb::Location* loc = profile.add_location();
        loc->set_id(it->second);
        std::uint64_t bias = 0;
        if (!f.truncated_marker) {
          loc->set_mapping_id(mapping_id(f.module, bias));
          if (f.address) loc->set_address(*f.address + bias);
        }
        for (std::size_t k = i; k <= end; ++k) {
          pb::Line* line = loc->add_line();
          line->set_function_id(function_id(analysis::frame_name(stack[k]), stack[k].file));
          line->set_line(stack[k].line);
        }
      }
      sample->add_location_id(it->second);
      i = end + 1;
    }
  }

  void sample(const std::vector<analysis::SiteFrame>& stack, const analysis::SiteTotals& t) {
    if (t.peak_bytes == 0 && t.allocated_bytes == 0 && t.allocations == 0 && t.leaked_bytes == 0) return;
    pb::Sample* s = profile.add_sample();
    locations(stack, s);
    for (const std::uint64_t v : {t.peak_bytes, t.allocated_bytes, t.allocations, t.leaked_bytes, t.leaked_blocks})
      s->add_value(static_cast<std::int64_t>(v));
  }

  pb::Profile profile;

 private:
  const std::vector<codec::Module>& modules_;
  std::unordered_map<std::string, std::int64_t> strings_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> functions_;
  std::unordered_map<std::string, std::uint64_t> mappings_, locations_;
};

}  // namespace

codec::Status format_pprof(const SiteSource& sites, const std::vector<codec::Module>& modules,
                           analysis::FlameValue default_value, std::string& out) {
  Builder b(modules);
  static constexpr std::pair<const char*, const char*> kTypes[] = {{"peak_space", "bytes"},
                                                                   {"alloc_space", "bytes"},
                                                                   {"alloc_objects", "count"},
                                                                   {"leaked_space", "bytes"},
                                                                   {"leaked_objects", "count"}};
  for (const auto& [type, unit] : kTypes) {
    pb::ValueType* vt = b.profile.add_sample_type();
    vt->set_type(b.string_id(type));
    vt->set_unit(b.string_id(unit));
  }
  const char* chosen = default_value == analysis::FlameValue::peak        ? "peak_space"
                       : default_value == analysis::FlameValue::allocated ? "alloc_space"
                       : default_value == analysis::FlameValue::count     ? "alloc_objects"
                                                                          : "leaked_space";
  b.profile.set_default_sample_type(b.string_id(chosen));
  const analysis::SitesResult rest = sites([&b](const analysis::Site& s) { b.sample(s.stack, s.totals); });
  {
    analysis::SiteFrame none;
    none.function = "[no stack]";
    b.sample({none}, rest.unknown);
  }
  out.clear();
  google::protobuf::io::StringOutputStream sink(&out);
  google::protobuf::io::GzipOutputStream::Options options;
  options.format = google::protobuf::io::GzipOutputStream::GZIP;
  google::protobuf::io::GzipOutputStream gz(&sink, options);
  if (!b.profile.SerializeToZeroCopyStream(&gz) || !gz.Close())
    return {codec::Errc::too_large, "the profile could not be serialized (larger than protobuf's 2 GiB limit)"};
  return {};
}

}  // namespace memtrack::tools
