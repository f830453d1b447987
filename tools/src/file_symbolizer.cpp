// Symbolization at analysis time, for modules the artifact has no Symbols record for (a recorder that was
// killed before it wrote them): the module file, if it still exists and is the recorded build.
#include "file_symbolizer.h"

#include <memory>

#include "memtrack/symbolize/symbolizer.h"

namespace memtrack::tools {

using analysis::SiteFrame;

analysis::ModuleSymbolizer file_symbolizer() {
  // One libdwfl session for every module of one result (a Symbolizer opens each module once).
  auto session = std::make_shared<symbolize::Symbolizer>();
  return [session](const std::string& path, const std::vector<std::uint8_t>& build_id,
                   std::span<const std::uint64_t> addresses, std::vector<std::vector<SiteFrame>>& out) {
    symbolize::ModuleRef ref;
    ref.path = path;
    // An oversized id cannot be checked: symbolizing against whatever file is there could name the wrong
    // functions, so such a module stays module + offset.
    if (!build_id.empty() && !symbolize::build_id_from_bytes(build_id.data(), build_id.size(), ref.build_id)) return;
    const std::vector<symbolize::SymbolizedAddress> r =
        session->symbolize(ref, addresses, symbolize::AddressKind::return_address);
    out.assign(addresses.size(), {});
    for (std::size_t i = 0; i < r.size() && i < out.size(); ++i) {
      for (const symbolize::Frame& f : r[i].frames) {
        SiteFrame s;
        s.function = f.function;
        s.file = f.file;
        s.line = f.line;
        s.inlined = f.inlined;
        out[i].push_back(std::move(s));
      }
    }
  };
}

}  // namespace memtrack::tools
