// The command line never destroys its input or an earlier artifact, and the small things a new user tries
// work (issue 16): an output that is the input, binary on a terminal, `help CMD`, the version spellings,
// `--workers 0`, and error wording. Each case checks the exit status, the stderr line, and that the input
// is byte-for-byte what it was.
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <string>
#include <vector>

#include "common/fixtures.h"
#include "common/run.h"

namespace memtrack::testing {
namespace {

std::string mt() { return memtrack_bin(); }
std::string tmp(const std::string& name) { return scratch_dir() + "/" + name; }
void write_bytes(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// Runs argv with a fresh pseudo-terminal as stdin, stdout and stderr, types `typed` on it, and returns
// everything the terminal showed (echo included) with the exit status.
RunResult run_on_terminal(const std::vector<std::string>& argv, const std::string& typed) {
  RunResult r;
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) return r;
  if (pid == 0) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  if (!typed.empty()) (void)!::write(master, typed.data(), typed.size());
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n > 0) {
      r.out.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;  // EIO: the last process holding the terminal's other side has exited
  }
  ::close(master);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

TEST(Hardening, EncodeRefusesAnOutputThatIsItsInput) {
  const std::string raw = slurp(data_path("events.raw"));
  write_bytes(tmp("in.raw"), raw);
  ASSERT_EQ(::symlink(tmp("in.raw").c_str(), tmp("link.raw").c_str()), 0);
  ASSERT_EQ(::link(tmp("in.raw").c_str(), tmp("hard.raw").c_str()), 0);
  const std::string see = " (see 'memtrack encode --help')\n";
  struct Case {
    std::string args, err;
  } cases[] = {
      {"-i " + tmp("in.raw") + " -o " + tmp("in.raw"),
       tmp("in.raw") + " is the input " + tmp("in.raw") + " (same file): writing it would destroy it"},
      {"-i " + tmp("in.raw") + " -o " + tmp("link.raw"),
       tmp("link.raw") + " is the input " + tmp("in.raw") + " (same file): writing it would destroy it"},
      {"-i " + tmp("link.raw") + " -o " + tmp("hard.raw"),
       tmp("hard.raw") + " is the input " + tmp("link.raw") + " (same file): writing it would destroy it"},
      {"-i " + tmp("in.raw") + " >> " + tmp("in.raw"),
       "stdout is the input " + tmp("in.raw") + " (same file): writing it would destroy it"},
      {"< " + tmp("in.raw") + " -o " + tmp("in.raw"),
       tmp("in.raw") + " is the input stdin (same file): writing it would destroy it"},
  };
  for (const Case& c : cases) {
    const auto r = run(mt() + " encode " + c.args);
    EXPECT_EQ(r.status, 2) << c.args;
    EXPECT_EQ(r.err, "memtrack encode: " + c.err + see) << c.args;
    EXPECT_EQ(slurp(tmp("in.raw")), raw) << c.args << ": the input was damaged";
  }
  // Two different files are fine, and /dev/null may be both.
  EXPECT_EQ(run(mt() + " encode -i " + tmp("in.raw") + " -o " + tmp("out.zst")).status, 0);
  EXPECT_EQ(run(mt() + " encode -i /dev/null -o /dev/null").status, 0);
}

TEST(Hardening, DecodeRefusesAnOutputThatIsItsInput) {
  ASSERT_EQ(run(mt() + " encode -i " + data_path("events.raw") + " -o " + tmp("a.zst")).status, 0);
  const std::string artifact = slurp(tmp("a.zst"));
  ASSERT_FALSE(artifact.empty());
  ASSERT_EQ(::symlink(tmp("a.zst").c_str(), tmp("a-link.zst").c_str()), 0);
  for (const std::string& out : {tmp("a.zst"), tmp("a-link.zst")}) {
    for (const std::string format : {"jsonl", "raw"}) {
      const auto r = run(mt() + " decode " + tmp("a.zst") + " --format " + format + " -o " + out);
      EXPECT_EQ(r.status, 2) << out;
      EXPECT_EQ(r.err, "memtrack decode: " + out + " is the input " + tmp("a.zst") +
                           " (same file): writing it would destroy it (see 'memtrack decode --help')\n");
      EXPECT_EQ(slurp(tmp("a.zst")), artifact) << out << ": the artifact was damaged";
    }
  }
  const auto r = run(mt() + " decode " + tmp("a-link.zst") + " >> " + tmp("a.zst"));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "memtrack decode: stdout is the input " + tmp("a-link.zst") +
                       " (same file): writing it would destroy it (see 'memtrack decode --help')\n");
  EXPECT_EQ(slurp(tmp("a.zst")), artifact);
  // The same artifact decodes as before.
  const auto ok = run(mt() + " decode " + tmp("a-link.zst") + " --format raw -o " + tmp("a.raw"));
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(slurp(tmp("a.raw")), slurp(data_path("events.raw")));
}

TEST(Hardening, EncodeRefusesATerminalOutputAndHintsOnATerminalInput) {
  const std::string raw = slurp(data_path("events.raw"));
  write_bytes(tmp("t.raw"), raw);
  const auto refused = run_on_terminal({mt(), "encode", "-i", tmp("t.raw")}, "");
  EXPECT_EQ(refused.status, 2) << refused.out;
  EXPECT_EQ(refused.out,
            "memtrack encode: refusing to write a binary artifact to a terminal; use -o FILE (see 'memtrack encode "
            "--help')\r\n");
  EXPECT_EQ(slurp(tmp("t.raw")), raw);
  // stdin on the terminal: one hint line, then Ctrl-D ends the input (an empty, valid artifact).
  const auto hinted = run_on_terminal({mt(), "encode", "-o", tmp("t.zst")}, "\x04");
  EXPECT_EQ(hinted.status, 0) << hinted.out;
  EXPECT_NE(hinted.out.find("memtrack encode: reading raw records from the terminal (end with Ctrl-D); use -i FILE "
                            "or a pipe\r\n"),
            std::string::npos)
      << hinted.out;
  const auto d = run(mt() + " decode " + tmp("t.zst"));
  EXPECT_EQ(d.status, 0) << d.err;
  EXPECT_EQ(d.out, "");
  // Text on a terminal is fine: decode writes JSON lines there.
  const auto text = run_on_terminal({mt(), "decode", data_path("events.single-stream.zst")}, "");
  EXPECT_EQ(text.status, 0);
  EXPECT_NE(text.out.find("\"type\":\"Malloc\""), std::string::npos);
}

TEST(Hardening, HelpCommandIsTheCommandsHelp) {
  for (const std::string cmd : {"encode", "decode", "record", "stats"}) {
    const auto help = run(mt() + " help " + cmd);
    const auto flag = run(mt() + " " + cmd + " --help");
    EXPECT_EQ(help.status, 0) << cmd;
    EXPECT_EQ(help.err, "");
    EXPECT_EQ(help.out, flag.out) << cmd;
    EXPECT_EQ(help.out.rfind("usage: memtrack " + cmd + " ", 0), 0u) << help.out;
  }
  const auto general = run(mt() + " help");
  EXPECT_EQ(general.status, 0);
  EXPECT_NE(general.out.find("'memtrack help <command>'"), std::string::npos);
  const auto unknown = run(mt() + " help frobnicate");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_EQ(unknown.err.substr(0, unknown.err.find('\n')), "memtrack: unknown command 'frobnicate'");
}

TEST(Hardening, VersionHasThreeSpellings) {
  for (const std::string spelling : {"--version", "-V", "version"}) {
    const auto r = run(mt() + " " + spelling);
    EXPECT_EQ(r.status, 0) << spelling;
    EXPECT_EQ(r.out, std::string("memtrack ") + MEMTRACK_VERSION + "\n") << spelling;
    EXPECT_EQ(r.err, "");
  }
}

TEST(Hardening, WorkersZeroMeansHardwareThreadsForEncodeAsForRecord) {
  const auto zero = run(mt() + " encode --workers 0 -i " + data_path("realistic-140k.raw") + " -o " + tmp("w0.zst"));
  ASSERT_EQ(zero.status, 0) << zero.err;
  ASSERT_EQ(run(mt() + " encode --workers 1 -i " + data_path("realistic-140k.raw") + " -o " + tmp("w1.zst")).status, 0);
  EXPECT_EQ(slurp(tmp("w0.zst")), slurp(tmp("w1.zst")));
  for (const std::string cmd : {"encode", "record"}) {
    EXPECT_NE(run(mt() + " " + cmd + " --help").out.find("0..1024 (default 0: hardware threads)"), std::string::npos)
        << cmd;
  }
  const auto bad = run(mt() + " encode --workers -1 -i /dev/null -o /dev/null");
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err, "memtrack encode: --workers: -1 is outside 0..1024 (see 'memtrack encode --help')\n");
}

TEST(Hardening, FramesOutsideTheIndexCountsFramesInGoodEnglish) {
  ASSERT_EQ(run(mt() + " encode -i " + data_path("events.raw") + " -o " + tmp("one.zst")).status, 0);
  const auto one = run(mt() + " decode " + tmp("one.zst") + " --frames 5:6");
  EXPECT_EQ(one.status, 2);  // a range the artifact cannot serve is a usage error (README: exit 2)
  EXPECT_EQ(one.err, "memtrack decode: " + tmp("one.zst") + ": --frames 5:6 is outside the 1 frame of the index\n");
  ASSERT_EQ(run(mt() + " encode --frame-events 100 -i " + data_path("events.raw") + " -o " + tmp("many.zst")).status,
            0);
  const auto many = run(mt() + " decode " + tmp("many.zst") + " --frames 9:");
  EXPECT_EQ(many.status, 2);
  EXPECT_NE(many.err.find("--frames 9: is outside the 6 frames of the index\n"), std::string::npos) << many.err;
}

TEST(Hardening, AWriteErrorNamesTheFramesEventRange) {
  // /dev/full: the first frame's write fails; the message says which events that frame held.
  const auto r = run(mt() + " encode --frame-events 100 -i " + data_path("events.raw") + " -o /dev/full");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("frame 0 (events 0 to 99): "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("events from"), std::string::npos) << r.err;
}

TEST(Hardening, RecordHelpSaysWhatSignalsDoAndWhereTheArtifactGoes) {
  const auto r = run(mt() + " record --help");
  EXPECT_EQ(r.status, 0);
  for (const char* needle : {"SIGINT from the terminal reaches CMD", "SIGTERM, SIGHUP or SIGINT sent to the recorder",
                             "are passed on to CMD while it runs", "once CMD has exited they\nend the recording at once", "FILE.<recorder pid>.partial", "'-' is refused",
                             "127 when CMD is\nnot found, 126 when it", "-q, --quiet", "--python-malloc"}) {
    EXPECT_NE(r.out.find(needle), std::string::npos) << needle;
  }
}

// An input that is no artifact leaves an existing output as it was (issue 23): report and decode write beside
// the output and rename only a result; a good input replaces the file, keeping its mode, and leaves no
// temporary behind.
TEST(Hardening, AnUnreadableInputLeavesAnExistingOutputAsItWas) {
  write_bytes(tmp("text.txt"), "not an artifact\n");
  write_bytes(tmp("existing.html"), "an earlier page");
  write_bytes(tmp("existing.jsonl"), "earlier lines");
  const auto report = run(mt() + " report " + tmp("text.txt") + " -o " + tmp("existing.html"));
  EXPECT_EQ(report.status, 1);
  EXPECT_EQ(report.err, "memtrack report: " + tmp("text.txt") + ": frame 0 at byte 0: not a zstd frame (magic " +
                            "0x20746f6e)\n");
  EXPECT_EQ(slurp(tmp("existing.html")), "an earlier page");
  const auto decode = run(mt() + " decode " + tmp("text.txt") + " -o " + tmp("existing.jsonl"));
  EXPECT_EQ(decode.status, 1);
  EXPECT_EQ(decode.err, "memtrack decode: " + tmp("text.txt") + ": frame 0 at byte 0: not a zstd frame (magic " +
                            "0x20746f6e)\n");
  EXPECT_EQ(slurp(tmp("existing.jsonl")), "earlier lines");
  const auto csv = run(mt() + " decode " + tmp("text.txt") + " --format csv -o " + tmp("new.csv"));
  EXPECT_EQ(csv.status, 1);
  EXPECT_NE(::access(tmp("new.csv").c_str(), F_OK), 0) << "no output file for an input that gave nothing";

  ASSERT_EQ(::chmod(tmp("existing.jsonl").c_str(), 0640), 0);
  const auto good = run(mt() + " decode " + data_path("events.single-stream.zst") + " -o " + tmp("existing.jsonl"));
  EXPECT_EQ(good.status, 0) << good.err;
  EXPECT_EQ(slurp(tmp("existing.jsonl")), run(mt() + " decode " + data_path("events.single-stream.zst")).out);
  struct stat st {};
  ASSERT_EQ(::stat(tmp("existing.jsonl").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  const auto listed = run("ls -A " + scratch_dir() + " | grep '^\\.' || true");
  EXPECT_EQ(listed.out, "") << "temporary files left behind";
}

TEST(Hardening, BinaryOutputsRefuseATerminal) {
  const auto pprof = run_on_terminal({mt(), "export", data_path("realistic-140k.frames.zst"), "--format", "pprof"}, "");
  EXPECT_EQ(pprof.status, 2) << pprof.out;
  EXPECT_EQ(pprof.out,
            "memtrack export: refusing to write a binary pprof profile to a terminal; use -o FILE or a pipe (see "
            "'memtrack export --help')\r\n");
  const auto raw = run_on_terminal({mt(), "decode", data_path("events.single-stream.zst"), "--format", "raw"}, "");
  EXPECT_EQ(raw.status, 2) << raw.out;
  EXPECT_EQ(raw.out,
            "memtrack decode: refusing to write raw records to a terminal; use -o FILE or a pipe (see 'memtrack "
            "decode --help')\r\n");
}

TEST(Hardening, MessagesNameOptionsAsTyped) {
  const std::string file = data_path("events.single-stream.zst");
  struct Case {
    std::string args, err;
  } cases[] = {
      {"top " + file + " -n x", "memtrack top: -n: 'x' is not a whole number (see 'memtrack top --help')\n"},
      {"top " + file + " --pid x", "memtrack top: --pid: 'x' is not a whole number (see 'memtrack top --help')\n"},
      {"top " + file + " --pid 99999999999999999999",
       "memtrack top: --pid: 99999999999999999999 is outside -2147483648..2147483647 (see 'memtrack top --help')\n"},
      {"ctl x end", "memtrack ctl: PID: 'x' is not a whole number (see 'memtrack ctl --help')\n"},
      {"encode --level 1x -i /dev/null -o /dev/null",
       "memtrack encode: --level: '1x' is not a whole number (see 'memtrack encode --help')\n"},
      {"decode " + file + " --context --context-only",
       "memtrack decode: --context and --context-only exclude each other (--context-only: the records alone) "
       "(see 'memtrack decode --help')\n"},
  };
  for (const Case& c : cases) {
    const auto r = run(mt() + " " + c.args);
    EXPECT_EQ(r.status, 2) << c.args;
    EXPECT_EQ(r.err, c.err) << c.args;
  }
}

TEST(Hardening, CtlNamesAProcessThatDoesNotExist) {
  // pid_max is at most 2^22: this pid cannot exist.
  const auto r = run(mt() + " ctl 2147483647 end");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "memtrack ctl: no process 2147483647\n");
  const auto help = run(mt() + " ctl --help");
  EXPECT_NE(help.out.find("close the innermost region opened with begin or mark (if any) and open NAME"),
            std::string::npos)
      << help.out;
}

}  // namespace
}  // namespace memtrack::testing
