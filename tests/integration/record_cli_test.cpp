// `memtrack record`'s command line never loses or mixes data (issue 16): CMD's own options stay CMD's,
// the artifact is written beside its target and renamed, a killed recorder leaves a findable prefix, bad
// outputs fail before CMD runs, and a command that cannot start exits 127/126. Each case checks the exit
// status, the stderr line and that no earlier file lost a byte.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;

const std::string kMemtrack = MEMTRACK_BIN_DIR "/memtrack";
const std::string kPrograms = MEMTRACK_PROGRAMS_DIR;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

int shell(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// Removes a test's scratch directory when the test passed; a failed test leaves its files to look at.
struct CliScratchCleanup : testing::EmptyTestEventListener {
  void OnTestEnd(const testing::TestInfo& info) override {
    if (info.result()->Passed() && !current.empty()) fs::remove_all(current);
    current.clear();
  }
  static inline fs::path current;
};

const bool kCleanupInstalled = [] {
  testing::UnitTest::GetInstance()->listeners().Append(new CliScratchCleanup);
  return true;
}();

fs::path scratch_dir() {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir =
      fs::path(testing::TempDir()) / (std::string("memtrack_cli_") + info->name() + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  CliScratchCleanup::current = dir;
  return dir;
}

struct CliRun {
  int status = -1;
  std::string out, err;
};

// Runs `args` (a shell fragment) as `memtrack record ARGS` in `dir`.
CliRun record_in(const fs::path& dir, const std::string& args) {
  CliRun r;
  r.status = shell("cd '" + dir.string() + "' && '" + kMemtrack + "' record " + args + " > out.txt 2> err.txt");
  r.out = slurp(dir / "out.txt");
  r.err = slurp(dir / "err.txt");
  return r;
}

// Events in an artifact, by decoding it with memtrack (exit status checked by the caller through `status`).
std::size_t decoded_events(const fs::path& artifact, int* status = nullptr, std::string* err = nullptr) {
  const fs::path out = artifact.string() + ".jsonl", errf = artifact.string() + ".err";
  const int rc = shell("'" + kMemtrack + "' decode '" + artifact.string() + "' > '" + out.string() + "' 2> '" +
                       errf.string() + "'");
  if (status != nullptr) *status = rc;
  if (err != nullptr) *err = slurp(errf);
  const std::string text = slurp(out);
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

std::uint64_t summary_events(const std::string& err) {
  const auto at = err.find("memtrack record: ");
  if (at == std::string::npos) return 0;
  return std::strtoull(err.c_str() + at + 17, nullptr, 10);
}

std::vector<fs::path> files_matching(const fs::path& dir, const std::string& suffix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().ends_with(suffix)) out.push_back(e.path());
  return out;
}

TEST(RecordCli, OptionsAfterTheCommandAreTheCommands) {
  const fs::path dir = scratch_dir();
  write_file(dir / "world", "an earlier file\n");
  // Without --: `-o world` belongs to echo, and the artifact takes the default name.
  CliRun r = record_in(dir, "/bin/echo hello -o world");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "hello -o world\n");
  EXPECT_EQ(slurp(dir / "world"), "an earlier file\n");
  EXPECT_EQ(files_matching(dir, ".MemtrackArtifact.msgpack").size(), 1u) << r.err;
  // record's options before the command, the command's after it, with or without --.
  for (const std::string args : {"-o a.art /bin/echo -o world -q", "-o a.art -- /bin/echo -o world -q"}) {
    r = record_in(dir, args);
    EXPECT_EQ(r.status, 0) << args << ": " << r.err;
    EXPECT_EQ(r.out, "-o world -q\n") << args;
    EXPECT_NE(r.err.find("artifact a.art"), std::string::npos) << r.err;  // -q went to echo
    EXPECT_EQ(slurp(dir / "world"), "an earlier file\n");
    EXPECT_GT(decoded_events(dir / "a.art"), 0u);
  }
  // An unknown option before the command is still a usage error, and nothing ran.
  r = record_in(dir, "--frobnicate /bin/echo hi");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "memtrack record: unknown option --frobnicate (see 'memtrack record --help')\n");
  EXPECT_EQ(r.out, "");
}

// The artifact a summary names ("artifact PATH (").
std::string summary_artifact(const std::string& err) {
  const auto at = err.find(", artifact ");
  if (at == std::string::npos) return {};
  const auto end = err.find(" (", at + 11);
  return err.substr(at + 11, end - at - 11);
}

// Two recorders on one target: the first to finish takes it; the second finds a file that appeared after it
// started, leaves it alone, keeps its recording beside it and says where. No recording is lost.
TEST(RecordCli, TwoRecordersOnOneTargetKeepBothRecordings) {
  const fs::path dir = scratch_dir();
  const std::string cd = "cd '" + dir.string() + "' && ";
  // Different sizes, so each artifact tells which recorder wrote it. b starts once a's recording file exists
  // and a's command waits for b's end (b.done, at most 30 s), so the two recordings overlap whatever the
  // machine's load (a fixed sleep let a end before b began on a loaded machine).
  const std::string a = "'" + kMemtrack + "' record -o same.art -- sh -c \"'" + kPrograms +
                        "/churn' 1 1500000; i=0; while [ ! -e b.done ] && [ $i -lt 600 ]; do sleep 0.05; "
                        "i=$((i+1)); done\" > a.out 2> a.err";
  const std::string b = "'" + kMemtrack + "' record -o same.art -- '" + kPrograms + "/churn' 1 200000 > b.out 2> b.err";
  const std::string wait_for_a =
      "i=0; while ! ls same.art.*.partial > /dev/null 2>&1 && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; ";
  ASSERT_EQ(shell(cd + "{ " + a + " & " + wait_for_a + b + "; touch b.done; wait; }"), 0);
  const std::string ea_text = slurp(dir / "a.err"), eb_text = slurp(dir / "b.err");
  const std::uint64_t ea = summary_events(ea_text), eb = summary_events(eb_text);
  ASSERT_GT(ea, 1500000u) << ea_text;
  ASSERT_GT(eb, 200000u) << eb_text;
  const std::string pa = summary_artifact(ea_text), pb = summary_artifact(eb_text);
  ASSERT_NE(pa, pb) << ea_text << eb_text;
  // One of them took the target, the other is beside it, named in its summary with the target.
  const bool a_beside = pa != "same.art";
  const std::string& beside = a_beside ? pa : pb;
  const std::string& beside_err = a_beside ? ea_text : eb_text;
  EXPECT_TRUE(pa == "same.art" || pb == "same.art") << pa << " " << pb;
  EXPECT_TRUE(beside.starts_with("same.") && beside.ends_with(".art")) << beside;
  EXPECT_NE(beside_err.find("memtrack record: same.art appeared during the recording (another recorder's?) and is "
                            "left as it is; this recording is " +
                            beside + "\n"),
            std::string::npos)
      << beside_err;
  for (const auto& [path, events] : {std::pair{pa, ea}, std::pair{pb, eb}}) {
    int status = -1;
    std::string err;
    EXPECT_EQ(decoded_events(dir / path, &status, &err), events) << path;
    EXPECT_EQ(status, 0) << err;
  }
  EXPECT_TRUE(files_matching(dir, ".partial").empty());
}

// A file the user named that existed before the recording is replaced, as before (no note).
TEST(RecordCli, AnEarlierTargetIsReplaced) {
  const fs::path dir = scratch_dir();
  write_file(dir / "old.art", "an earlier artifact");
  const CliRun r = record_in(dir, "-o old.art -- /bin/true");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(summary_artifact(r.err), "old.art") << r.err;
  EXPECT_EQ(r.err.find("appeared during"), std::string::npos) << r.err;
  EXPECT_NE(slurp(dir / "old.art"), "an earlier artifact");
}

// The summary's words: plurals, the process count stats gives, the crash, and the next command.
TEST(RecordCli, SummaryNamesACrashAndTheNextCommand) {
  const fs::path dir = scratch_dir();
  CliRun r = record_in(dir, "-o t.art -- /bin/true");
  EXPECT_EQ(r.status, 0) << r.err;
  // true allocates nothing here, but it ran: stats counts it, and so does the summary.
  EXPECT_NE(r.err.find(" from 1 process, artifact t.art ("), std::string::npos) << r.err;
  EXPECT_TRUE(
      r.err.ends_with("memtrack record: next: memtrack top t.art (the allocation sites), memtrack report "
                      "t.art (a page)\n"))
      << r.err;
  r = record_in(dir, "-o 'a b.art' -- sh -c 'kill -SEGV $$'");
  EXPECT_EQ(r.status, 139) << r.err;
  EXPECT_NE(r.err.find("memtrack record: sh killed by SIGSEGV\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("memtrack top 'a b.art'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(" 1 events"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(" 1 processes"), std::string::npos) << r.err;
  EXPECT_GT(decoded_events(dir / "a b.art"), 0u);
}

// A script without #! runs with /bin/sh, as execvp, env and time run it.
TEST(RecordCli, AScriptWithoutShebangRunsWithSh) {
  const fs::path dir = scratch_dir();
  write_file(dir / "script.sh", "echo from the script \"$1\"\nexit 3\n");
  fs::permissions(dir / "script.sh", fs::perms::owner_all);
  const CliRun r = record_in(dir, "-o s.art ./script.sh 'one arg'");
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_EQ(r.out, "from the script one arg\n");
  EXPECT_NE(r.err.find("artifact s.art"), std::string::npos) << r.err;
  EXPECT_GT(decoded_events(dir / "s.art"), 0u) << "the shell running it was recorded";
}

// An artifact that cannot be written: the error, and no success summary before it.
TEST(RecordCli, AFailedWriteGivesNoSuccessSummary) {
  const fs::path dir = scratch_dir();
  const CliRun r = record_in(dir, "-o /dev/full -- /bin/true");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err.find("artifact /dev/full"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("next:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/dev/full: write failed"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// memtrack record -- memtrack record -o inner -- CMD: the inner recording has CMD's events; the outer one
// has the inner recorder's own, and none of CMD's.
// In the AddressSanitizer build the inner recorder is an ASan program run with the preload first in its
// library list, which ASan refuses by default; verify_asan_link_order=0 lets it run (ASan's malloc is then
// the next one). Its leak check is off: behind a foreign interposer LeakSanitizer cannot see the blocks'
// callers nor every place a pointer is kept (it reports libc's own blocks); the recorder's leaks are checked
// by every other ASan test.
#if defined(__SANITIZE_ADDRESS__)
const std::string kInnerEnv = "env ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 ";
#else
const std::string kInnerEnv;
#endif
TEST(RecordCli, ANestedRecordRecordsItsOwnCommand) {
  const fs::path dir = scratch_dir();
  const CliRun r = record_in(
      dir, "-o outer.art -- " + kInnerEnv + "'" + kMemtrack + "' record -o inner.art -- '" + kPrograms + "/fork_exit'");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::size_t inner = summary_events(r.err);  // the inner summary comes first
  EXPECT_GE(inner, 6u) << r.err;                    // fork_exit's five blocks and frees
  EXPECT_EQ(decoded_events(dir / "inner.art"), inner);
  EXPECT_NE(r.err.find(" from 2 processes, artifact inner.art"), std::string::npos) << r.err;
#if !defined(__SANITIZE_THREAD__)
  // Not in the ThreadSanitizer build: there the inner recorder is a TSan program, whose runtime serves
  // malloc itself before any preload, so the outer recorder sees none of its allocations.
  EXPECT_GT(decoded_events(dir / "outer.art"), 0u) << "the inner recorder itself is recorded";
#else
  decoded_events(dir / "outer.art");  // still a valid artifact, and outer.art.jsonl for the check below
#endif
  // fork_exit's child allocates 1000159 bytes: in the inner recording, not in the outer. (The field, not the
  // digits: they also turn up inside timestamps and addresses of a large enough outer recording.)
  EXPECT_EQ(slurp(dir / "outer.art.jsonl").find("\"size\":1000159}"), std::string::npos);
  EXPECT_NE(slurp(dir / "inner.art.jsonl").find("\"size\":1000159}"), std::string::npos);
}

TEST(RecordCli, AKilledRecorderLeavesItsPrefixBesideTheTarget) {
  const fs::path dir = scratch_dir();
  write_file(dir / "k.art", "an earlier artifact");
  // The recorder runs in the scratch dir; the shell execs it, so the pid is the recorder's.
  const std::string cmd = "cd '" + dir.string() + "' && exec '" + kMemtrack + "' record -o k.art -- '" + kPrograms +
                          "/churn' 2 20000000 > /dev/null 2> err.txt";
  pid_t recorder = 0;
  std::vector<char*> argv = {const_cast<char*>("/bin/sh"), const_cast<char*>("-c"), const_cast<char*>(cmd.c_str()),
                             nullptr};
  ASSERT_EQ(::posix_spawn(&recorder, "/bin/sh", nullptr, nullptr, argv.data(), environ), 0);
  const fs::path partial = dir / ("k.art." + std::to_string(recorder) + ".partial");
  // Wait for a few frames to be written (65,536 events each), then SIGKILL the recorder.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::error_code ec;
  while (std::chrono::steady_clock::now() < deadline && (fs::file_size(partial, ec) < 1000000 || ec))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(::kill(recorder, SIGKILL), 0);
  int st = 0;
  ASSERT_EQ(::waitpid(recorder, &st, 0), recorder);
  ASSERT_TRUE(fs::exists(partial)) << "the recorder wrote no frame in 20 s";
  // The earlier artifact is untouched; the partial file decodes to a prefix of the recording.
  EXPECT_EQ(slurp(dir / "k.art"), "an earlier artifact");
  int status = -1;
  std::string err;
  const std::size_t n = decoded_events(partial, &status, &err);
  EXPECT_GE(n, 65536u) << err;
  if (status != 0) {  // cut inside a frame: the events before it, then one line naming the cut
    // The kill may land in a data frame or in a context (skippable) frame, each named as such.
    EXPECT_EQ(status, 1);
    EXPECT_TRUE(err.find("input ends inside the frame") != std::string::npos ||
                err.find("input ends inside a skippable frame") != std::string::npos)
        << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
  // The program itself notices the dead recorder, detaches and finishes untracked (docs/RUNTIME.md).
}

TEST(RecordCli, AnUnwritableDefaultOutputFailsBeforeTheProgramRuns) {
  const fs::path dir = scratch_dir();
  // /proc refuses new files even to root, as a read-only or foreign directory would.
  const std::string cmd = "cd /proc && '" + kMemtrack + "' record -- touch '" + (dir / "ran").string() + "' 2> '" +
                          (dir / "err.txt").string() + "'";
  EXPECT_EQ(shell(cmd), 1);
  const std::string err = slurp(dir / "err.txt");
  EXPECT_EQ(err.rfind("memtrack record: memtrack-record.", 0), 0u) << err;
  EXPECT_NE(err.find(".partial: cannot create (the current directory receives the artifact): "), std::string::npos)
      << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_FALSE(fs::exists(dir / "ran")) << "the program ran";
}

TEST(RecordCli, DashOutputIsRefused) {
  const fs::path dir = scratch_dir();
  const CliRun r = record_in(dir, "-o - /bin/echo hi");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "memtrack record: -o -: the artifact cannot go to stdout, which belongs to the program; use -o FILE "
            "(see 'memtrack record --help')\n");
  EXPECT_EQ(r.out, "");  // echo never ran
  EXPECT_FALSE(fs::exists(dir / "-"));
}

TEST(RecordCli, ACommandThatCannotStartExits127Or126) {
  const fs::path dir = scratch_dir();
  write_file(dir / "old.art", "an earlier artifact");
  CliRun r = record_in(dir, "-o old.art no-such-command-here");
  EXPECT_EQ(r.status, 127);
  EXPECT_EQ(r.err, "memtrack record: cannot run 'no-such-command-here': No such file or directory\n");
  write_file(dir / "not-executable", "#!/bin/sh\necho ran\n");
  r = record_in(dir, "-o old.art ./not-executable");
  EXPECT_EQ(r.status, 126);
  EXPECT_EQ(r.err, "memtrack record: cannot run './not-executable': Permission denied\n");
  EXPECT_EQ(r.out, "");
  r = record_in(dir, "no-such-command-here");  // default output: nothing is left either
  EXPECT_EQ(r.status, 127);
  EXPECT_EQ(slurp(dir / "old.art"), "an earlier artifact");
  EXPECT_TRUE(files_matching(dir, ".partial").empty());
  EXPECT_TRUE(files_matching(dir, ".MemtrackArtifact.msgpack").empty());
}

TEST(RecordCli, QuietLeavesOutTheSummary) {
  const fs::path dir = scratch_dir();
  CliRun r = record_in(dir, "-q -o q.art -- '" + kPrograms + "/churn' 1 1000");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.err, "");
  EXPECT_GT(decoded_events(dir / "q.art"), 1000u);
  r = record_in(dir, "--quiet -o q.art -- sh -c 'exit 3'");
  EXPECT_EQ(r.status, 3);
  EXPECT_EQ(r.err, "");
  // Errors still show.
  r = record_in(dir, "-q -o no/such/dir/q.art true");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("cannot create"), std::string::npos) << r.err;
}

TEST(RecordCli, WorkersZeroIsTheDefault) {
  const fs::path dir = scratch_dir();
  const CliRun r = record_in(dir, "--workers 0 -o w.art -- '" + kPrograms + "/churn' 1 1000");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(decoded_events(dir / "w.art"), summary_events(r.err));
}

TEST(RecordCli, ASymlinkTargetReplacesTheFileItNames) {
  const fs::path dir = scratch_dir();
  write_file(dir / "real.art", "old");
  fs::create_symlink("real.art", dir / "link.art");
  const CliRun r = record_in(dir, "-o link.art -- '" + kPrograms + "/churn' 1 1000");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(dir / "link.art"));
  EXPECT_EQ(decoded_events(dir / "real.art"), summary_events(r.err));
  // A device is written in place, not replaced.
  EXPECT_EQ(record_in(dir, "-o /dev/null true").status, 0);
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

}  // namespace
