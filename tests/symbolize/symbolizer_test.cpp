// Symbolizer against binaries built by the suite (programs/), their stripped copies, separate debug files,
// a deleted module and another build; and against libc with its debug file when libc6-dbg is installed,
// checked against binutils' addr2line.
#include "memtrack/symbolize/symbolizer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "chain_fixture.h"

namespace memtrack::symbolize {
namespace {

using testing::capture;
using testing::marker_line;
using testing::programs_dir;
using testing::source_file;
namespace fs = std::filesystem;

const char* kLeaf = "symlib::inlined_leaf(symlib::Recorder*, int)";
const char* kMiddle = "symlib::middle(symlib::Recorder*, int)";
const char* kRun = "int chain::Outer::run<int>(symlib::Recorder*, int)";

// A scratch directory removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string templ = ::testing::TempDir() + "/memtrack_symbolize_XXXXXX";
    path = ::mkdtemp(templ.data());
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

// Puts `debug_file` where a build-id lookup under `root` finds it: root/.build-id/xx/yyyy.debug.
void install_debug_file(const fs::path& root, const BuildId& id, const fs::path& debug_file) {
  const std::string hex = to_hex(id);
  const fs::path dir = root / ".build-id" / hex.substr(0, 2);
  fs::create_directories(dir);
  fs::copy_file(debug_file, dir / (hex.substr(2) + ".debug"));
}

Options no_system_debug_dirs() {
  Options options;
  options.debug_dirs.clear();
  return options;
}

void expect_frame(const Frame& frame, const std::string& function, const std::string& source, std::uint32_t line,
                  bool inlined) {
  EXPECT_EQ(frame.function, function);
  EXPECT_EQ(frame.file, source_file(source));
  EXPECT_EQ(frame.line, line);
  EXPECT_EQ(frame.inlined, inlined);
}

TEST(Symbolizer, InlinedFrameThenItsCallerInTheSharedLibrary) {
  const testing::Capture& leaf = capture("leaf");
  ASSERT_EQ(leaf.module, fs::canonical(testing::lib_path()).string());
  Symbolizer symbolizer(no_system_debug_dirs());
  const SymbolizedAddress result = symbolizer.symbolize_one(leaf.ref(), leaf.relative(), AddressKind::return_address);
  EXPECT_EQ(result.address, leaf.relative());
  EXPECT_EQ(result.source, Source::dwarf);
  ASSERT_EQ(result.frames.size(), 2u);
  expect_frame(result.frames[0], kLeaf, "chain_lib.cpp", marker_line("chain_lib.cpp", "leaf_call"), true);
  expect_frame(result.frames[1], kMiddle, "chain_lib.cpp", marker_line("chain_lib.cpp", "inline_site"), false);
  EXPECT_GT(result.symbol_offset, 0u);
  const ModuleInfo& info = symbolizer.open(leaf.ref());
  EXPECT_EQ(info.status, ModuleStatus::ok) << info.message;
  EXPECT_TRUE(info.has_dwarf);
  EXPECT_EQ(info.symbols, Source::symtab);
  EXPECT_EQ(info.file_build_id, leaf.build_id);
  EXPECT_TRUE(info.debug_file.empty());
}

TEST(Symbolizer, CallSitesInTheExecutable) {
  const testing::Capture& middle = capture("middle");
  const testing::Capture& run = capture("run");
  ASSERT_EQ(middle.module, fs::canonical(testing::exe_path()).string());
  Symbolizer symbolizer(no_system_debug_dirs());
  const std::vector<std::uint64_t> addresses = {middle.relative(), run.relative()};
  const std::vector<SymbolizedAddress> results = symbolizer.symbolize(middle.ref(), addresses);
  ASSERT_EQ(results.size(), 2u);
  ASSERT_EQ(results[0].frames.size(), 1u);
  expect_frame(results[0].frames[0], kRun, "chain_main.cpp", marker_line("chain_main.cpp", "run_call"), false);
  ASSERT_EQ(results[1].frames.size(), 1u);
  expect_frame(results[1].frames[0], "main", "chain_main.cpp", marker_line("chain_main.cpp", "main_call"), false);
}

TEST(Symbolizer, LambdasAndAnonymousNamespacesAreQualified) {
  const testing::Capture& lambda = capture("lambda");
  const testing::Capture& hidden = capture("hidden");
  Symbolizer symbolizer(no_system_debug_dirs());
  const std::vector<std::uint64_t> addresses = {lambda.relative(), hidden.relative()};
  const std::vector<SymbolizedAddress> results = symbolizer.symbolize(lambda.ref(), addresses);
  // The lambda's operator() has no linkage name in DWARF: its symbol names it.
  ASSERT_EQ(results[0].frames.size(), 1u);
  expect_frame(results[0].frames[0],
               "symlib::via_lambda(symlib::Recorder*, int)::{lambda(int)#1}::operator()(int) const", "chain_lib.cpp",
               marker_line("chain_lib.cpp", "lambda_call"), false);
  // An inlined function has no symbol: its namespaces come from DWARF (its DW_AT_name has no parameters).
  ASSERT_EQ(results[1].frames.size(), 2u);
  expect_frame(results[1].frames[0], "symlib::(anonymous namespace)::hidden_step", "chain_lib.cpp",
               marker_line("chain_lib.cpp", "hidden_call"), true);
  expect_frame(results[1].frames[1], "symlib::via_lambda(symlib::Recorder*, int)", "chain_lib.cpp",
               marker_line("chain_lib.cpp", "hidden_site"), false);
}

TEST(Symbolizer, ExactAddressesAreNotMovedBack) {
  // The start of middle's symbol is an exact address inside middle, not the byte before it.
  const testing::Capture& leaf = capture("leaf");
  Symbolizer symbolizer(no_system_debug_dirs());
  const SymbolizedAddress inside = symbolizer.symbolize_one(leaf.ref(), leaf.relative(), AddressKind::return_address);
  const std::uint64_t start = leaf.relative() - inside.symbol_offset;
  const SymbolizedAddress exact = symbolizer.symbolize_one(leaf.ref(), start, AddressKind::exact);
  ASSERT_FALSE(exact.frames.empty());
  EXPECT_EQ(exact.frames.back().function, kMiddle);
  EXPECT_EQ(exact.symbol_offset, 0u);
}

TEST(Symbolizer, StripDebugKeepsSymtabNames) {
  const testing::Capture& leaf = capture("leaf");
  const testing::Capture& middle = capture("middle");
  const testing::Capture& run = capture("run");
  Symbolizer symbolizer(no_system_debug_dirs());
  const ModuleRef lib{programs_dir() + "/libmtsym_chain.so.strip-debug", leaf.build_id};
  const ModuleRef exe{programs_dir() + "/chain.strip-debug", middle.build_id};
  const SymbolizedAddress in_lib = symbolizer.symbolize_one(lib, leaf.relative(), AddressKind::return_address);
  EXPECT_EQ(symbolizer.open(lib).status, ModuleStatus::ok) << symbolizer.open(lib).message;
  EXPECT_FALSE(symbolizer.open(lib).has_dwarf);
  EXPECT_EQ(in_lib.source, Source::symtab);
  ASSERT_EQ(in_lib.frames.size(), 1u);  // the inlined frame is gone with the DWARF
  EXPECT_EQ(in_lib.frames[0].function, kMiddle);
  EXPECT_EQ(in_lib.frames[0].file, "");
  EXPECT_EQ(in_lib.frames[0].line, 0u);
  const std::vector<std::uint64_t> addresses = {middle.relative(), run.relative()};
  const std::vector<SymbolizedAddress> in_exe = symbolizer.symbolize(exe, addresses);
  ASSERT_EQ(in_exe[0].frames.size(), 1u);
  EXPECT_EQ(in_exe[0].source, Source::symtab);
  EXPECT_EQ(in_exe[0].frames[0].function, kRun);
  ASSERT_EQ(in_exe[1].frames.size(), 1u);
  EXPECT_EQ(in_exe[1].frames[0].function, "main");
}

TEST(Symbolizer, StripAllLeavesDynsymOrModuleOffset) {
  const testing::Capture& leaf = capture("leaf");
  const testing::Capture& middle = capture("middle");
  Symbolizer symbolizer(no_system_debug_dirs());
  // middle is exported by the library: .dynsym still names it.
  const ModuleRef lib{programs_dir() + "/libmtsym_chain.so.strip-all", leaf.build_id};
  const SymbolizedAddress in_lib = symbolizer.symbolize_one(lib, leaf.relative(), AddressKind::return_address);
  EXPECT_EQ(symbolizer.open(lib).symbols, Source::dynsym);
  EXPECT_EQ(in_lib.source, Source::dynsym);
  ASSERT_EQ(in_lib.frames.size(), 1u);
  EXPECT_EQ(in_lib.frames[0].function, kMiddle);
  // The executable exports nothing: module + offset.
  const ModuleRef exe{programs_dir() + "/chain.strip-all", middle.build_id};
  const SymbolizedAddress in_exe = symbolizer.symbolize_one(exe, middle.relative(), AddressKind::return_address);
  EXPECT_EQ(symbolizer.open(exe).status, ModuleStatus::ok);
  EXPECT_EQ(in_exe.source, Source::none);
  EXPECT_TRUE(in_exe.frames.empty());
  EXPECT_EQ(in_exe.address, middle.relative());
}

TEST(Symbolizer, SeparateDebugFileFoundByBuildId) {
  const testing::Capture& leaf = capture("leaf");
  TempDir root;
  install_debug_file(root.path, leaf.build_id, programs_dir() + "/libmtsym_chain.so.debug");
  Options options;
  options.debug_dirs = {root.path.string()};
  Symbolizer symbolizer(options);
  const ModuleRef lib{programs_dir() + "/libmtsym_chain.so.strip-all", leaf.build_id};
  const SymbolizedAddress result = symbolizer.symbolize_one(lib, leaf.relative(), AddressKind::return_address);
  const ModuleInfo& info = symbolizer.open(lib);
  EXPECT_TRUE(info.has_dwarf);
  EXPECT_EQ(fs::path(info.debug_file).filename(), to_hex(leaf.build_id).substr(2) + ".debug");
  EXPECT_EQ(result.source, Source::dwarf);
  ASSERT_EQ(result.frames.size(), 2u);
  expect_frame(result.frames[0], kLeaf, "chain_lib.cpp", marker_line("chain_lib.cpp", "leaf_call"), true);
  expect_frame(result.frames[1], kMiddle, "chain_lib.cpp", marker_line("chain_lib.cpp", "inline_site"), false);
}

// `objcopy ARGS`, asserting it ran.
void objcopy(const std::string& args) {
  const std::string cmd = std::string("'") + MEMTRACK_OBJCOPY + "' " + args;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

// Whether the debuginfod client library is mapped in this process.
bool debuginfod_client_loaded() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find("libdebuginfod") != std::string::npos) return true;
  return false;
}

// A stripped module whose .gnu_debuglink names its debug file: found in the module's .debug/ directory and
// under a debug root (<root><module dir>/<name>), with no build-id search able to find it. The search is
// local: without a debuginfod server configured, the debuginfod client library is never loaded (libdwfl's
// own search loads it for its last step whether or not a server is set).
TEST(Symbolizer, SeparateDebugFileFoundByItsDebuglink) {
  ::unsetenv("DEBUGINFOD_URLS");
  const testing::Capture& leaf = capture("leaf");
  TempDir work, root;
  const fs::path module = work.path / "libmtsym_chain.so";
  fs::copy_file(programs_dir() + "/libmtsym_chain.so.strip-all", module);
  fs::create_directories(work.path / ".debug");
  const fs::path beside = work.path / ".debug" / "chain.dbg";
  fs::copy_file(programs_dir() + "/libmtsym_chain.so.debug", beside);
  objcopy("--add-gnu-debuglink='" + beside.string() + "' '" + module.string() + "'");
  const ModuleRef lib{module.string(), leaf.build_id};
  {
    Symbolizer symbolizer(no_system_debug_dirs());
    const SymbolizedAddress result = symbolizer.symbolize_one(lib, leaf.relative(), AddressKind::return_address);
    EXPECT_EQ(symbolizer.open(lib).debug_file, beside.string());
    ASSERT_EQ(result.frames.size(), 2u);
    expect_frame(result.frames[0], kLeaf, "chain_lib.cpp", marker_line("chain_lib.cpp", "leaf_call"), true);
    expect_frame(result.frames[1], kMiddle, "chain_lib.cpp", marker_line("chain_lib.cpp", "inline_site"), false);
  }
  // Under a root instead.
  const fs::path under_root = fs::path(root.path.string() + work.path.string()) / "chain.dbg";
  fs::create_directories(under_root.parent_path());
  fs::rename(beside, under_root);
  {
    Options options;
    options.debug_dirs = {root.path.string()};
    Symbolizer symbolizer(options);
    const SymbolizedAddress result = symbolizer.symbolize_one(lib, leaf.relative(), AddressKind::return_address);
    EXPECT_EQ(symbolizer.open(lib).debug_file, under_root.string());
    EXPECT_EQ(result.frames.size(), 2u);
  }
  // A module with neither: no DWARF, dynsym names, and still no debuginfod client.
  {
    Symbolizer symbolizer(no_system_debug_dirs());
    const ModuleRef stripped{programs_dir() + "/libmtsym_chain.so.strip-all", leaf.build_id};
    const SymbolizedAddress result = symbolizer.symbolize_one(stripped, leaf.relative(), AddressKind::return_address);
    EXPECT_FALSE(symbolizer.open(stripped).has_dwarf);
    EXPECT_NE(result.source, Source::dwarf);
  }
  EXPECT_FALSE(debuginfod_client_loaded());
}

// The file a debuglink names is taken only if it describes the module: another build's debug file (another
// build-id) under the same name is passed over.
TEST(Symbolizer, DebuglinkToAnotherBuildIsNotTaken) {
  const testing::Capture& leaf = capture("leaf");
  TempDir work;
  const fs::path module = work.path / "libmtsym_chain.so";
  fs::copy_file(programs_dir() + "/libmtsym_chain.so.strip-all", module);
  const fs::path named = work.path / "chain.dbg";
  objcopy("--only-keep-debug '" + programs_dir() + "/libmtsym_chain_other.so' '" + named.string() + "'");
  objcopy("--add-gnu-debuglink='" + named.string() + "' '" + module.string() + "'");
  Symbolizer symbolizer(no_system_debug_dirs());
  const ModuleRef lib{module.string(), leaf.build_id};
  const SymbolizedAddress result = symbolizer.symbolize_one(lib, leaf.relative(), AddressKind::return_address);
  const ModuleInfo& info = symbolizer.open(lib);
  EXPECT_FALSE(info.has_dwarf);
  EXPECT_TRUE(info.debug_file.empty()) << info.debug_file;
  EXPECT_NE(result.source, Source::dwarf);
}

// Debian's debug files have compressed .debug sections: the first session finds the file, leaves an
// uncompressed copy in the cache, named by build-id, and reads the copy; a later session finds the copy at
// once; both give the same frames.
TEST(Symbolizer, CompressedDebugFileIsReadThroughItsCachedCopy) {
  const testing::Capture& leaf = capture("leaf");
  TempDir root, cache, work;
  const fs::path compressed = work.path / "libmtsym_chain.so.debug";
  const std::string cmd = std::string("'") + MEMTRACK_OBJCOPY + "' --compress-debug-sections=zlib '" + programs_dir() +
                          "/libmtsym_chain.so.debug' '" + compressed.string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  install_debug_file(root.path, leaf.build_id, compressed);
  Options options;
  options.debug_dirs = {root.path.string()};
  options.debug_cache_dir = (cache.path / "debug").string();
  const fs::path copy = cache.path / "debug" / (to_hex(leaf.build_id) + ".debug");
  const ModuleRef lib{programs_dir() + "/libmtsym_chain.so.strip-all", leaf.build_id};
  for (const bool cached : {false, true}) {
    SCOPED_TRACE(cached ? "the second session" : "the first session");
    Symbolizer symbolizer(options);
    const SymbolizedAddress result = symbolizer.symbolize_one(lib, leaf.relative(), AddressKind::return_address);
    const ModuleInfo& info = symbolizer.open(lib);
    EXPECT_TRUE(info.has_dwarf);
    // The first session too reads the copy it has just written (not the compressed file: that would inflate
    // its sections a second time).
    EXPECT_EQ(info.debug_file, copy.string());
    EXPECT_TRUE(fs::exists(copy));
    EXPECT_GT(fs::file_size(copy), fs::file_size(compressed));
    ASSERT_EQ(result.frames.size(), 2u);
    expect_frame(result.frames[0], kLeaf, "chain_lib.cpp", marker_line("chain_lib.cpp", "leaf_call"), true);
    expect_frame(result.frames[1], kMiddle, "chain_lib.cpp", marker_line("chain_lib.cpp", "inline_site"), false);
  }
  // No cache: the compressed file is read, nothing written.
  options.debug_cache_dir.clear();
  fs::remove(copy);
  Symbolizer symbolizer(options);
  const SymbolizedAddress result = symbolizer.symbolize_one(lib, leaf.relative(), AddressKind::return_address);
  EXPECT_EQ(result.frames.size(), 2u);
  EXPECT_FALSE(fs::exists(copy));
}

TEST(Symbolizer, DeletedModuleIsModuleOffsetWithTheReason) {
  const testing::Capture& leaf = capture("leaf");
  TempDir dir;
  const fs::path copy = dir.path / "libmtsym_chain.so";
  fs::copy_file(testing::lib_path(), copy);
  fs::remove(copy);
  Symbolizer symbolizer(no_system_debug_dirs());
  const ModuleRef ref{copy.string(), leaf.build_id};
  const SymbolizedAddress result = symbolizer.symbolize_one(ref, leaf.relative(), AddressKind::return_address);
  EXPECT_EQ(result.source, Source::none);
  EXPECT_TRUE(result.frames.empty());
  const ModuleInfo& info = symbolizer.open(ref);
  EXPECT_EQ(info.status, ModuleStatus::missing);
  EXPECT_EQ(info.message, "cannot open " + copy.string() + ": No such file or directory");
}

TEST(Symbolizer, DeletedModuleResolvedFromItsDebugFile) {
  const testing::Capture& leaf = capture("leaf");
  TempDir root;
  install_debug_file(root.path, leaf.build_id, programs_dir() + "/libmtsym_chain.so.debug");
  Options options;
  options.debug_dirs = {root.path.string()};
  Symbolizer symbolizer(options);
  const ModuleRef ref{(root.path / "gone" / "libmtsym_chain.so").string(), leaf.build_id};
  const SymbolizedAddress result = symbolizer.symbolize_one(ref, leaf.relative(), AddressKind::return_address);
  const ModuleInfo& info = symbolizer.open(ref);
  EXPECT_EQ(info.status, ModuleStatus::missing);
  EXPECT_NE(info.message.find("symbols from " + root.path.string() + "/.build-id/"), std::string::npos) << info.message;
  EXPECT_EQ(result.source, Source::dwarf);
  ASSERT_EQ(result.frames.size(), 2u);
  EXPECT_EQ(result.frames[0].function, kLeaf);
  EXPECT_EQ(result.frames[1].function, kMiddle);
}

TEST(Symbolizer, BuildIdMismatchIsDetectedAndNotSymbolized) {
  const testing::Capture& leaf = capture("leaf");
  Symbolizer symbolizer(no_system_debug_dirs());
  // Another build of the same library at the recorded path.
  const std::string other = programs_dir() + "/libmtsym_chain_other.so";
  const ModuleRef replaced{other, leaf.build_id};
  const SymbolizedAddress result = symbolizer.symbolize_one(replaced, leaf.relative(), AddressKind::return_address);
  EXPECT_EQ(result.source, Source::none);
  EXPECT_TRUE(result.frames.empty());
  const ModuleInfo& info = symbolizer.open(replaced);
  EXPECT_EQ(info.status, ModuleStatus::build_id_mismatch);
  EXPECT_EQ(to_hex(info.file_build_id), "00112233445566778899aabbccddeeff00112233");
  EXPECT_EQ(info.message, "build-id mismatch for " + other + ": recorded " + to_hex(leaf.build_id) +
                              ", file has 00112233445566778899aabbccddeeff00112233");
  // A recorded id differing in one byte is as much a mismatch.
  ModuleRef flipped = leaf.ref();
  flipped.build_id.bytes[flipped.build_id.size - 1] ^= 1;
  EXPECT_EQ(symbolizer.open(flipped).status, ModuleStatus::build_id_mismatch);
  EXPECT_EQ(symbolizer.symbolize_one(flipped, leaf.relative()).source, Source::none);
  // Without a recorded id there is nothing to check.
  const ModuleRef unchecked{other, BuildId{}};
  EXPECT_EQ(symbolizer.open(unchecked).status, ModuleStatus::ok);
  EXPECT_EQ(symbolizer.symbolize_one(unchecked, leaf.relative(), AddressKind::return_address).frames.size(), 2u);
}

TEST(Symbolizer, NotAnElfFile) {
  TempDir dir;
  const fs::path text = dir.path / "libnot.so";
  std::FILE* out = std::fopen(text.c_str(), "w");
  ASSERT_NE(out, nullptr);
  std::fputs("not an ELF file\n", out);
  std::fclose(out);
  Symbolizer symbolizer(no_system_debug_dirs());
  const ModuleRef ref{text.string(), BuildId{}};
  EXPECT_EQ(symbolizer.open(ref).status, ModuleStatus::not_elf);
  EXPECT_NE(symbolizer.open(ref).message.find(text.string()), std::string::npos);
  EXPECT_EQ(symbolizer.symbolize_one(ref, 0x1000).source, Source::none);
}

TEST(Symbolizer, EachModuleIsOpenedOnceAndRepeatedAddressesAgree) {
  const testing::Capture& leaf = capture("leaf");
  Symbolizer symbolizer(no_system_debug_dirs());
  std::vector<std::uint64_t> addresses;
  for (int i = 0; i < 3; ++i) {
    addresses.push_back(leaf.relative());
    addresses.push_back(leaf.relative() - 1);
  }
  const std::vector<SymbolizedAddress> first = symbolizer.symbolize(leaf.ref(), addresses);
  const std::vector<SymbolizedAddress> second = symbolizer.symbolize(leaf.ref(), addresses);
  EXPECT_EQ(symbolizer.modules_open(), 1u);
  ASSERT_EQ(first.size(), addresses.size());
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].address, addresses[i]);
    ASSERT_EQ(first[i].frames.size(), first[i % 2].frames.size());
    for (std::size_t f = 0; f < first[i].frames.size(); ++f) {
      EXPECT_EQ(first[i].frames[f].function, first[i % 2].frames[f].function);
      EXPECT_EQ(first[i].frames[f].line, second[i].frames[f].line);
    }
  }
}

TEST(Symbolizer, ProgressIsReportedAndCanStopTheRun) {
  const testing::Capture& leaf = capture("leaf");
  Options options = no_system_debug_dirs();
  options.progress_interval = 10;
  Symbolizer symbolizer(options);
  std::vector<std::uint64_t> addresses;
  for (std::uint64_t i = 0; i < 95; ++i) addresses.push_back(leaf.relative() - i % 8);
  std::vector<std::size_t> seen;
  symbolizer.symbolize(leaf.ref(), addresses, AddressKind::return_address, [&](const Progress& p) {
    EXPECT_EQ(p.total, 95u);
    EXPECT_EQ(p.module, leaf.module);
    seen.push_back(p.done);
    return true;
  });
  EXPECT_EQ(seen, (std::vector<std::size_t>{10, 20, 30, 40, 50, 60, 70, 80, 90, 95}));
  const std::vector<SymbolizedAddress> stopped = symbolizer.symbolize(
      leaf.ref(), addresses, AddressKind::return_address, [](const Progress& p) { return p.done < 30; });
  ASSERT_EQ(stopped.size(), 95u);
  EXPECT_EQ(stopped[29].source, Source::dwarf);
  EXPECT_EQ(stopped[30].source, Source::none);
  EXPECT_EQ(stopped[94].address, addresses[94]);
}

TEST(Symbolizer, ReadBuildIdFromFile) {
  const testing::Capture& leaf = capture("leaf");
  BuildId id;
  std::string error;
  ASSERT_TRUE(read_build_id(testing::lib_path(), id, &error)) << error;
  EXPECT_EQ(id, leaf.build_id);
  // Stripping keeps the note; so does the debug file.
  ASSERT_TRUE(read_build_id(programs_dir() + "/libmtsym_chain.so.strip-all", id));
  EXPECT_EQ(id, leaf.build_id);
  EXPECT_FALSE(read_build_id(programs_dir() + "/no-such-file", id, &error));
  EXPECT_EQ(error, "cannot open " + programs_dir() + "/no-such-file: No such file or directory");
  EXPECT_TRUE(id.empty());
  EXPECT_FALSE(read_build_id(testing::sources_dir() + "/chain_lib.cpp", id, &error));
  EXPECT_EQ(error, testing::sources_dir() + "/chain_lib.cpp: not an ELF file");
}

TEST(Symbolizer, Demangle) {
  EXPECT_EQ(demangle("_ZN6symlib6middleEPNS_8RecorderEi"), kMiddle);
  EXPECT_EQ(demangle("main"), "main");
  EXPECT_EQ(demangle("_Znot a name"), "_Znot a name");
}

// Runs binutils' addr2line, an independent DWARF reader, for the function and file:line chain at `pc`.
std::vector<std::string> addr2line(const std::string& module, std::uint64_t pc) {
  char command[1024];
  std::snprintf(command, sizeof command, "addr2line -i -f -C -e '%s' 0x%llx", module.c_str(),
                static_cast<unsigned long long>(pc));
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> pipe(::popen(command, "r"), ::pclose);
  std::vector<std::string> lines;
  if (!pipe) return lines;
  std::array<char, 4096> buffer;
  while (std::fgets(buffer.data(), buffer.size(), pipe.get()) != nullptr) {
    std::string line = buffer.data();
    if (!line.empty() && line.back() == '\n') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

// The frames of `result` (qsort's caller in libc) are addr2line's: names, file names and lines.
void expect_agrees_with_addr2line(const testing::Capture& in_libc, const SymbolizedAddress& result) {
  EXPECT_EQ(result.source, Source::dwarf);
  const std::vector<std::string> expected = addr2line(in_libc.module, in_libc.relative() - 1);
  ASSERT_EQ(expected.size(), 2 * result.frames.size());
  for (std::size_t i = 0; i < result.frames.size(); ++i) {
    EXPECT_EQ(result.frames[i].function, expected[2 * i]);
    // addr2line prints the path as recorded ("./stdlib/./stdlib/msort.c:64"); compare the file name and line.
    std::string where = expected[2 * i + 1];
    where = where.substr(0, where.find(" ("));  // " (discriminator N)"
    const std::string file = where.substr(0, where.rfind(':'));
    EXPECT_EQ(fs::path(result.frames[i].file).filename(), fs::path(file).filename());
    EXPECT_EQ(std::to_string(result.frames[i].line), where.substr(where.rfind(':') + 1));
  }
}

TEST(Symbolizer, LibcWithItsDebugPackageAgreesWithAddr2line) {
  const testing::Capture& in_libc = capture("qsort");
  const std::string hex = to_hex(in_libc.build_id);
  const std::string debug = "/usr/lib/debug/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
  if (!fs::exists(debug)) GTEST_SKIP() << "no debug file for " << in_libc.module << " (install libc6-dbg)";
  // The system's debug directory: without a cache, then with one (a first session finds the package's file
  // and, if the file is compressed, writes the copy and reads it; a second one reads the copy at once).
  TempDir cache;
  const std::string copy = cache.path.string() + "/" + hex + ".debug";
  for (const int pass : {0, 1, 2}) {
    SCOPED_TRACE("pass " + std::to_string(pass));
    Options options;
    options.debug_cache_dir = pass == 0 ? std::string() : cache.path.string();
    Symbolizer symbolizer(options);
    const SymbolizedAddress result =
        symbolizer.symbolize_one(in_libc.ref(), in_libc.relative(), AddressKind::return_address);
    const ModuleInfo& info = symbolizer.open(in_libc.ref());
    EXPECT_EQ(info.status, ModuleStatus::ok) << info.message;
    EXPECT_EQ(info.debug_file, pass != 0 && fs::exists(copy) ? copy : debug);
    expect_agrees_with_addr2line(in_libc, result);
  }
}

// Every call's return address in `module`, from objdump -d: the address of the instruction after the call.
std::vector<std::uint64_t> call_return_addresses(const std::string& module) {
  const std::string command = "objdump -d --no-show-raw-insn '" + module + "'";
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  std::vector<std::uint64_t> addresses;
  if (!pipe) return addresses;
  std::array<char, 4096> buffer;
  bool after_call = false;
  while (std::fgets(buffer.data(), buffer.size(), pipe.get()) != nullptr) {
    unsigned long long address = 0;
    char tab = 0;
    // "  2a3f4:\tcall   2a100 <foo>"
    if (std::sscanf(buffer.data(), " %llx:%c", &address, &tab) != 2 || tab != '\t') continue;
    if (after_call) addresses.push_back(address);
    after_call = std::strstr(buffer.data(), ":\tcall") != nullptr;
  }
  return addresses;
}

// binutils' addr2line for many addresses at once: per address, the (function, line) chain, innermost first.
std::vector<std::vector<std::pair<std::string, std::uint32_t>>> addr2line_chains(
    const std::string& module, const std::vector<std::uint64_t>& pcs) {
  TempDir dir;
  const fs::path input = dir.path / "pcs";
  {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(std::fopen(input.c_str(), "w"), std::fclose);
    for (std::uint64_t pc : pcs) std::fprintf(out.get(), "%llx\n", static_cast<unsigned long long>(pc));
  }
  // -a prints each address before its frames, which delimits the chains.
  const std::string command = "addr2line -a -i -f -C -e '" + module + "' < '" + input.string() + "'";
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  std::vector<std::vector<std::pair<std::string, std::uint32_t>>> chains;
  std::array<char, 8192> function;
  std::array<char, 8192> where;
  while (pipe && std::fgets(function.data(), function.size(), pipe.get()) != nullptr) {
    std::string line = function.data();
    if (line.rfind("0x", 0) == 0) {
      chains.emplace_back();
      continue;
    }
    if (std::fgets(where.data(), where.size(), pipe.get()) == nullptr || chains.empty()) break;
    line.pop_back();
    std::string location = where.data();
    location = location.substr(0, location.find(" ("));  // " (discriminator N)"
    const std::string number = location.substr(location.rfind(':') + 1);
    chains.back().emplace_back(line, static_cast<std::uint32_t>(std::strtoul(number.c_str(), nullptr, 10)));
  }
  return chains;
}

TEST(Symbolizer, LibcCallSitesAgreeWithAddr2line) {
  const testing::Capture& in_libc = capture("qsort");
  const std::string hex = to_hex(in_libc.build_id);
  if (!fs::exists("/usr/lib/debug/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug")) {
    GTEST_SKIP() << "no debug file for " << in_libc.module << " (install libc6-dbg)";
  }
  std::vector<std::uint64_t> all = call_return_addresses(in_libc.module);
  ASSERT_GT(all.size(), 1000u);
  // 500 call sites spread over the library.
  std::vector<std::uint64_t> addresses;
  for (std::size_t i = 0; i < all.size(); i += all.size() / 500) addresses.push_back(all[i]);
  std::vector<std::uint64_t> pcs;
  for (std::uint64_t a : addresses) pcs.push_back(a - 1);
  const auto expected = addr2line_chains(in_libc.module, pcs);
  ASSERT_EQ(expected.size(), addresses.size());

  Symbolizer symbolizer;
  const std::vector<SymbolizedAddress> results = symbolizer.symbolize(in_libc.ref(), addresses);
  std::size_t inlined = 0;
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    std::vector<std::pair<std::string, std::uint32_t>> got;
    for (const Frame& frame : results[i].frames) {
      got.emplace_back(frame.function, frame.line);
      inlined += frame.inlined ? 1 : 0;
    }
    // Without a line (symbol table only) addr2line prints "??:?"; two aliases of one address may differ.
    if (results[i].source != Source::dwarf) continue;
    if (got != expected[i]) {
      ++mismatches;
      ADD_FAILURE() << std::hex << "0x" << addresses[i] << ": " << (got.empty() ? "" : got[0].first) << ":" << std::dec
                    << (got.empty() ? 0 : got[0].second) << " (" << got.size() << " frames), addr2line "
                    << (expected[i].empty() ? "" : expected[i][0].first) << ":"
                    << (expected[i].empty() ? 0 : expected[i][0].second) << " (" << expected[i].size() << ")";
    }
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_GT(inlined, 50u);  // the comparison covered inlined frames
}

}  // namespace
}  // namespace memtrack::symbolize
