// Property: RawRecordReader (memtrack::pipeline) reads valid 48-byte records back exactly (each event packs
// back to its input bytes), and the first invalid record (or a
// truncated tail) stops it with an error naming that record's index, after every record before it was
// returned. The expected result is computed here from the byte layout in docs/FORMAT.md, independently of
// validate_record.
//
// The first input byte is a recipe: how many records the caller asks for at a time, and whether the bytes
// come from a memfd (full reads) or a pipe fed by a thread in small chunks (short reads that split records,
// the path a real `memtrack encode < pipe` takes). The rest is the record stream.
#include <sys/mman.h>
#include <unistd.h>

#include <condition_variable>
#include <csignal>
#include <mutex>
#include <string>
#include <thread>

#include "fuzz/fuzz_common.h"
#include "memtrack/codec/raw_record.h"
#include "memtrack/pipeline/raw_record_reader.h"

namespace {

std::uint64_t load_u64(const std::uint8_t* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// The record layout: kind at 40 in 1..8; flags at 41 with only bit 0, and bit 0 only on Realloc (4);
// bytes 42..47 zero; a Free (2) has size 0; old_addr (24) is 0 unless the flag is set.
bool record_is_valid(const std::uint8_t* r) {
  const std::uint8_t kind = r[40], flags = r[41];
  if (kind < 1 || kind > 8) return false;
  if ((flags & ~1u) != 0) return false;
  if ((flags & 1u) != 0 && kind != 4) return false;
  for (int i = 42; i < 48; ++i) {
    if (r[i] != 0) return false;
  }
  if (kind == 2 && load_u64(r + 16) != 0) return false;
  if ((flags & 1u) == 0 && load_u64(r + 24) != 0) return false;
  return true;
}

void write_all(int fd, const std::uint8_t* p, std::size_t n, std::size_t chunk) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, std::min(n, chunk));
    if (w <= 0) return;  // the reader stopped early and closed its end (EPIPE): nothing more to deliver
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

// Feeds a pipe from one long-lived thread. A thread per input made the process grow by ~40 bytes of ASan
// thread bookkeeping per input until libFuzzer's 256 MB RSS limit stopped the first run (5.6 M inputs,
// an empty "oom" input: the harness's cost, not the reader's).
class PipeFeeder {
 public:
  static PipeFeeder& instance() {
    static PipeFeeder* feeder = new PipeFeeder;  // never destroyed: its thread waits for work until exit
    return *feeder;
  }

  // Writes bytes to fd in chunks on the feeder thread, then closes fd.
  void start(int fd, const std::uint8_t* bytes, std::size_t size, std::size_t chunk) {
    std::lock_guard lock(mutex_);
    job_ = {fd, bytes, size, chunk};
    pending_ = true;
    changed_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return !pending_; });
  }

 private:
  struct Job {
    int fd;
    const std::uint8_t* bytes;
    std::size_t size, chunk;
  };

  PipeFeeder() {
    std::thread([this] { run(); }).detach();
  }

  [[noreturn]] void run() {
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [this] { return pending_; });
        job = job_;
      }
      write_all(job.fd, job.bytes, job.size, job.chunk);
      ::close(job.fd);
      std::lock_guard lock(mutex_);
      pending_ = false;
      changed_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  Job job_{};
  bool pending_ = false;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using memtrack::codec::Errc;
  using memtrack::codec::Event;
  using memtrack::codec::kRawRecordSize;
  if (size == 0) return 0;
  const std::uint8_t control = data[0];
  const std::uint8_t* records = data + 1;
  const std::size_t n = size - 1;
  const std::size_t block = 1 + (control & 7);
  const bool use_pipe = (control & 8) != 0;
  const std::size_t chunk = 1 + (control >> 4) * 5;

  // What the reader must do.
  const std::size_t whole = n / kRawRecordSize;
  std::size_t valid = 0;
  while (valid < whole && record_is_valid(records + valid * kRawRecordSize)) ++valid;
  const bool truncated_tail = valid == whole && n % kRawRecordSize != 0;

  int fds[2] = {-1, -1};
  if (use_pipe) {
    std::signal(SIGPIPE, SIG_IGN);  // the reader may stop at a bad record and close its end first
    FUZZ_CHECK(::pipe(fds) == 0, "pipe failed");
    PipeFeeder::instance().start(fds[1], records, n, chunk);
  } else {
    fds[0] = ::memfd_create("raw_record_fuzz", 0);
    FUZZ_CHECK(fds[0] >= 0, "memfd_create failed");
    write_all(fds[0], records, n, n + 1);
    FUZZ_CHECK(::lseek(fds[0], 0, SEEK_SET) == 0, "lseek failed");
  }

  memtrack::pipeline::RawRecordReader reader(fds[0], "fuzz.raw");
  std::vector<Event> got, buf(block);
  while (std::size_t k = reader.read(buf)) {
    FUZZ_CHECK(k <= block, "read %zu into a block of %zu", k, block);
    got.insert(got.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(k));
  }
  ::close(fds[0]);
  if (use_pipe) PipeFeeder::instance().wait();

  FUZZ_CHECK(got.size() == valid, "read %zu records, %zu are valid before the first bad one", got.size(), valid);
  for (std::size_t i = 0; i < got.size() && i < valid; ++i) {
    std::byte packed[kRawRecordSize];
    memtrack::codec::pack_raw_record(got[i], packed);
    FUZZ_CHECK(std::memcmp(packed, records + i * kRawRecordSize, kRawRecordSize) == 0,
               "record %zu read back differs from the input", i);
  }
  FUZZ_CHECK(reader.records_read() == valid, "records_read() = %llu, expected %zu",
             static_cast<unsigned long long>(reader.records_read()), valid);

  const memtrack::codec::Status s = reader.status();
  if (valid < whole) {
    FUZZ_CHECK(s.code() == Errc::bad_record, "record %zu is invalid but status is '%s'", valid, s.message().c_str());
  } else if (truncated_tail) {
    FUZZ_CHECK(s.code() == Errc::truncated, "truncated tail but status is '%s'", s.message().c_str());
  } else {
    FUZZ_CHECK(s.is_ok(), "all %zu records valid but status is '%s'", valid, s.message().c_str());
    return 0;
  }
  const std::string expected = "fuzz.raw: record " + std::to_string(valid) + ": ";
  FUZZ_CHECK(s.message().rfind(expected, 0) == 0, "error '%s' does not start with '%s'", s.message().c_str(),
             expected.c_str());
  return 0;
}
