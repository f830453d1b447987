// `memtrack export`'s formats of allocation sites, for the viewers people already use.
//
// folded: Brendan Gregg's collapsed stacks, one line per distinct stack, "outermost;...;innermost VALUE"
//   (flamegraph.pl, inferno, speedscope read it). Frames are named as in the flame graphs (flame.h,
//   frame_name: inlined frames are frames of their own); ';' in a name becomes ':' and control characters
//   become spaces, so every line parses. Lines are sorted (flamegraph.pl's order), zero values left out;
//   allocations without a stack are the line "[no stack] VALUE".
// pprof: profile.proto (tools/export/profile.proto), gzipped. Sample types, in this order:
//   peak_space/bytes, alloc_space/bytes, alloc_objects/count, leaked_space/bytes, leaked_objects/count;
//   default_sample_type the one `--by` names (count: alloc_objects). One sample per site (its location ids
//   innermost first); one location per return address (module + address: its inlined calls are the
//   location's first lines, the function containing the call its last), one function per (name, file); one
//   mapping per module with its path, build-id (hex), and start/limit/offset from the first Module record of
//   that path (a location's address is then the module-relative address plus that record's bias, so the
//   mapping resolves it as the process that loaded it first saw it).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "memtrack/analysis/flame.h"
#include "memtrack/analysis/sites.h"
#include "memtrack/codec/context.h"
#include "memtrack/codec/status.h"

namespace memtrack::tools {

// The sites to write, handed over one at a time (SiteAccumulator::for_each_site), so no list of every site
// with its frames need exist; returns the rest of the result (`unknown`: the allocations without a stack).
using SiteSource = std::function<analysis::SitesResult(const std::function<void(const analysis::Site&)>&)>;
// A source over a list already built.
SiteSource sites_of(const analysis::SitesResult& sites);

std::string format_folded(const SiteSource& sites, analysis::FlameValue value);

// The gzipped profile.proto bytes. Fails only if protobuf cannot serialize (a profile beyond 2 GiB).
codec::Status format_pprof(const SiteSource& sites, const std::vector<codec::Module>& modules,
                           analysis::FlameValue default_value, std::string& out);

}  // namespace memtrack::tools
