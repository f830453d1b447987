// A module's separate debug file found by the name in its .gnu_debuglink section, on the local disk only.
//
// Why not libdwfl's own search (dwfl_standard_find_debuginfo): its last step is a debuginfod query, and
// elfutils 0.188 loads the debuginfod client library for it (dlopen of libdebuginfod, which brings libcurl,
// GnuTLS, nettle and their initialisation) even when DEBUGINFOD_URLS is unset and no query can be made:
// a fifth to a quarter of recording a short command whose modules lack a debug file (docs/RUNTIME.md,
// "Call stacks": MEMTRACK_AB_REPEAT=20 bench/record_ab.sh). This search does the same local steps as
// libdwfl's and nothing else; the network stays behind Options::debuginfod.
#pragma once

#include <elfutils/libdwfl.h>

#include <string>
#include <vector>

namespace memtrack::symbolize {

// Looks for `debuglink` (the module's .gnu_debuglink name; null: the module file's name + ".debug", taken
// without a CRC check) in the directory of `file_name`, in its .debug/ subdirectory, then under each root
// of `debug_dirs`: <root><dir>/<name>, the same with a leading /usr dropped from <dir> (a merged-/usr
// system's /bin is /usr/bin), and <root>/<name>. The first candidate that is not the module's file itself
// and describes it is taken: its build-id is the module's, or, when the module has none, its CRC-32 is
// `crc` (0: not checked). Returns the file open read-only, its path in *found (malloc'd: libdwfl frees it),
// or -1 with errno 0 when there is none.
int find_by_debuglink(Dwfl_Module* mod, const char* file_name, const char* debuglink, GElf_Word crc,
                      const std::vector<std::string>& debug_dirs, char** found);

}  // namespace memtrack::symbolize
