#include "memtrack/runtime/recorder.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "memtrack/analysis/live_heap.h"
#include "memtrack/pipeline/sink.h"
#include "memtrack/pipeline/stream_encoder.h"
#include "control_notes.h"
#include "output_file.h"
#include "preload_messages.h"
#include "proc.h"
#include "processes.h"
#include "lifecycle.h"
#include "live_server.h"
#include "memtrack/pipeline/context_channel.h"
#include "memtrack/runtime/image_check.h"
#include "recorder_internal.h"
#include "resident_sampler.h"
#include "ring_reader.h"
#include "stack_tables.h"
#include "supervisor.h"
#include "symbols_writer.h"
#include "shared_ring.h"
#include "sys_error.h"
#include "tsc_clock.h"

extern char** environ;

namespace memtrack::runtime {
namespace {

// The Recording's sections list (docs/FORMAT.md, "Versions and sections"): what this recording writes.
std::vector<std::string> recorded_sections(const RecordOptions& options) {
  std::vector<std::string> sections = {"lifecycle", "control"};
  if (options.resident) sections.insert(sections.end(), {"resident", "resident-pages"});
  if (options.stack_depth != 0) sections.insert(sections.end(), {"stacks", "modules", "symbols"});
  return sections;
}

// The reader thread's work: the ring's events, read straight into the encoder's frame buffers, encoded into
// the artifact. After an encoder failure, or in discard mode, it keeps draining the ring without encoding:
// the program must never block on us.
struct ReaderOutcome {
  codec::Status status;
  std::uint64_t artifact_bytes = 0;
};

void drain(RingReader& reader) {
  std::vector<codec::Event> scratch(8192);
  while (reader.read(scratch) != 0) {
  }
}

ReaderOutcome read_and_encode(RingReader& reader, SharedRing& ring, int fd, const RecordOptions& options, bool discard,
                              const std::string& output_path, pipeline::ContextChannel* context) {
  ReaderOutcome outcome;
  if (!discard) {
    try {
      pipeline::FdSink sink(fd, output_path);
      pipeline::EncoderOptions encoder;
      encoder.workers = options.workers;
      encoder.level = options.level;
      encoder.compact = options.compact;
      encoder.context = context;
      // Each data frame's stacks, right after it (built in the parallel encode stage).
      // (compact: in the data frame itself, compact version 5, but for an empty stream's one empty frame).
      if (options.stack_depth != 0) encoder.frame_context = event_stacks_records;
      encoder.compact_stacks = options.stack_depth != 0 && options.compact;
      pipeline::EncoderStats stats;
      outcome.status = pipeline::encode_stream(reader, sink, encoder, &stats);
      outcome.artifact_bytes = stats.bytes_out;
    } catch (const std::exception& e) {
      // The program is already running: let it go on untracked instead of waiting on a ring nobody encodes.
      outcome.status = {codec::Errc::io, std::string("cannot start the encoder: ") + e.what()};
      ring.header()->detached.store(1, std::memory_order_relaxed);
    }
  }
  drain(reader);
  return outcome;
}

// The recorder's environment plus LD_PRELOAD (ours first: the preload takes its first entry out again, and
// keeps the rest where the user's LD_PRELOAD was, so the program sees its native environment) and
// MEMTRACK_MESSAGES and MEMTRACK_RING (last; taken out by the preload).
std::vector<std::string> child_environment(const std::string& preload, const std::string& ring_path,
                                           const std::string& messages_path) {
  std::vector<std::string> env;
  bool have_preload = false;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view v = *e;
    if (v.starts_with("LD_PRELOAD=")) {
      if (have_preload) continue;
      have_preload = true;
      std::string entry = "LD_PRELOAD=" + preload;
      if (v.size() > 11) entry.append(":").append(v.substr(11));
      env.push_back(std::move(entry));
      continue;
    }
    if (v.starts_with(std::string(kEnvRing) + "=") || v.starts_with(std::string(kEnvMessages) + "=")) continue;
    env.emplace_back(v);
  }
  if (!have_preload) env.push_back("LD_PRELOAD=" + preload);
  env.push_back(std::string(kEnvMessages) + "=" + messages_path);
  env.push_back(std::string(kEnvRing) + "=" + ring_path);
  return env;
}

std::uint64_t clock_ns(clockid_t clock) {
  struct timespec ts;
  ::clock_gettime(clock, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

InternalRecordOptions InternalRecordOptions::from_environment() {
  InternalRecordOptions internal;
  const char* discard = std::getenv("MEMTRACK_RECORD_DISCARD");
  internal.discard = discard != nullptr && *discard == '1';
  return internal;
}

RecordResult record(const RecordOptions& options) { return record(options, InternalRecordOptions::from_environment()); }

RecordResult record(const RecordOptions& options, const InternalRecordOptions& internal) {
  if (options.command.empty()) throw std::runtime_error("no command to record");
  if (::access(options.preload_path.c_str(), R_OK) != 0) throw sys_error("preload library " + options.preload_path);

  // Every thread created from here on (reader, encoder workers) inherits a fully blocked mask.
  SignalScope signals;
  SharedRing ring(options.ring_slots);
  // The reference pair is taken before any producer exists, so every TSC value is after it.
  std::unique_ptr<TscClock> tsc;
  if (TscClock::usable()) tsc = std::make_unique<TscClock>();
  ring.header()->timestamp_tsc = tsc ? 1 : 0;
  ring.header()->stack_depth = options.stack_depth;

  // Descendants orphaned by their parents are re-parented to us, so we can wait for all of them and know
  // when no producer is left.
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) throw sys_error("prctl(PR_SET_CHILD_SUBREAPER)");

  // The output (named or default) is created before the command starts, so a bad path fails without
  // running it; it is written beside its target and renamed at the end (output_file.h).
  std::optional<OutputFile> out;
  if (!internal.discard || !options.output.empty()) out.emplace(options.output);
  int fd = out ? out->fd() : -1;

  // The context records (docs/FORMAT.md, "Context section"): the recording first, then the processes as
  // their notes arrive in the ring.
  pipeline::ContextChannel channel;
  channel.add(codec::RecordingInfo{MEMTRACK_VERSION,
                                   options.command,
                                   clock_ns(CLOCK_REALTIME),
                                   clock_ns(CLOCK_MONOTONIC),
                                   recorded_sections(options),
                                   static_cast<std::int32_t>(::getpid())});
  const std::string command_path = find_command(options.command[0]);
  const int command_untrackable = command_path.empty() ? 0 : image_untrackable(AT_FDCWD, command_path.c_str());

  PreloadMessages messages;
  std::vector<std::string> env = child_environment(options.preload_path, ring.path(), messages.path());
  std::vector<std::string> argv_strings = options.command;
  std::vector<char*> envp = c_strings(env);
  std::vector<char*> argv = c_strings(argv_strings);

  // record --paused: the pause is the first note, before any event of the command.
  if (options.paused) toggle_recording(ring.header(), true, static_cast<std::int32_t>(::getpid()), "start");

  // The live view's socket, before the command runs: a live recording that cannot serve it does not start.
  std::optional<LiveServer> live;
  std::string live_error;
  if (options.live_server) {
    try {
      live.emplace();
    } catch (const std::exception& e) {
      if (options.require_live) {
        if (out) out->abandon();
        throw;
      }
      live_error = e.what();
    }
  }

  // record --live: the command's output goes to a file, never to the view's terminal.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  int command_output = -1;
  if (!options.command_output.empty()) {
    command_output = ::open(options.command_output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (command_output < 0) {
      const std::string error = sys_error("the command's output file " + options.command_output).what();
      posix_spawn_file_actions_destroy(&actions);
      if (out) out->abandon();
      throw std::runtime_error(error);
    }
    posix_spawn_file_actions_adddup2(&actions, command_output, 1);
    posix_spawn_file_actions_adddup2(&actions, command_output, 2);
    if (::isatty(0) == 1) posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  }
  pid_t child = 0;
  const int spawn_error = spawn_command(argv, envp, signals, child, &actions);
  posix_spawn_file_actions_destroy(&actions);
  if (command_output >= 0) ::close(command_output);
  if (spawn_error != 0) {
    if (out) out->abandon();
    throw SpawnError(options.command[0], spawn_error);
  }
  // An untrackable command says nothing through the ring: the recorder notes it (before any event of it).
  if (command_untrackable != 0)
    ring.write_note(RingEventKind::NoteUntracked, child, static_cast<std::uint64_t>(command_untrackable), 0,
                    command_path);

  RecordResult result;
  result.output_path = options.output.empty() ? std::to_string(child) + ".MemtrackArtifact.msgpack" : options.output;
  if (out && options.output.empty()) out->name_default(result.output_path);

  // The summary line's peak comes from the same live-heap model as `memtrack stats`; the live view's books are
  // its client.
  LiveSites live_sites(options.stack_depth != 0);
  analysis::LiveHeap heap;
  if (live) heap.set_client(&live_sites);
  SeenProcesses processes;
  ProcessWatch watch;
  RingReader reader(ring, watch, processes, heap, tsc.get());
  Lifecycle lifecycle(channel, tsc.get(), &heap);
  reader.set_lifecycle(&lifecycle);
  StackTables stacks(channel);
  SymbolsWriter symbols_writer(::isatty(2) == 1 && !options.on_live);  // the live view has the terminal
  SymbolsSummary symbols;
  if (options.stack_depth != 0) {
    stacks.on_new_addresses([&](std::span<const StackTables::NewAddress> a) { symbols_writer.prefetch(a); });
    reader.set_stacks(&stacks, [&] { symbols = symbols_writer.write(stacks, channel); });
  }
  const bool reading = fd >= 0 || internal.discard;
  Supervisor supervisor(child, ring, reader, lifecycle, watch, reading);
  PageSnapshots page_snapshots;
  lifecycle.set_page_snapshots(&page_snapshots);
  std::optional<ResidentSampler> sampler;
  if (options.resident) sampler.emplace(ring, &page_snapshots);
  lifecycle.on_new_process([&](std::int32_t pid) {
    supervisor.watch(pid);
    if (sampler) sampler->watch(pid);
  });
  std::optional<LiveBooks> live_books;
  if (live) {
    live_books.emplace(*live, heap, live_sites, lifecycle, options.stack_depth != 0 ? &stacks : nullptr, ring,
                       options.resident);
    reader.set_tick([&] { live_books->tick(); });
    live->start(child);
  }
  ReaderOutcome outcome;
  std::thread reader_thread;
  if (reading)
    reader_thread = std::thread(
        [&] {
          outcome = read_and_encode(reader, ring, fd, options, internal.discard, result.output_path, &channel);
        });

  if (live && options.on_live) options.on_live(live->path(), child);
  signals.enter_wait();
  const WaitOutcome waited = supervisor.wait();
  const ResidentCost resident = sampler ? sampler->stop() : ResidentCost{};
  result.resident_polls = resident.polls;
  result.resident_cpu_seconds = resident.cpu_seconds;
  result.resident_wall_seconds = resident.wall_seconds;
  result.page_snapshot_bytes = resident.snapshot_bytes;
  result.page_snapshot_failures = resident.snapshot_failures;
  result.page_snapshot_cpu_seconds = resident.snapshot_cpu_seconds;
  result.page_snapshot_max_seconds = resident.snapshot_max_seconds;
  result.exit_status = waited.exit_status;
  result.command_signal = waited.command_signal;
  result.ended_by_signal = waited.ended_by_signal;
  result.left_running = waited.left_running;

  if (reader_thread.joinable()) {
    reader_thread.join();
    result.status = outcome.status;
    result.artifact_bytes = outcome.artifact_bytes;
  }
  if (live) live->finish(live_books->final_snapshot());
  result.live_error = live_error;
  if (out) {
    const codec::Status finished = out->finish();
    if (result.status.is_ok()) result.status = finished;
    if (finished.is_ok() && out->kept_beside()) {
      result.target_taken = result.output_path;
      result.output_path = out->final_path();
    }
  }
  result.events = reader.events();
  result.abandoned_slots = reader.abandoned();
  result.peak_heap_bytes = heap.total_peak_bytes();
  result.processes = heap.pids().size();  // as `memtrack stats` counts them
  for (const UntrackedProcess& u : lifecycle.untracked())
    if (u.reason != "left-running") result.untracked.push_back({u.pid, u.executable, u.reason});
  result.context_records = lifecycle.records() + 1;  // and the Recording record
  result.resident_samples = lifecycle.resident_samples();
  result.page_snapshots = lifecycle.page_snapshots();
  result.preload_messages = messages.collect();
  const StackSummary stack_summary = stacks.summary();
  result.stack_nodes = stack_summary.nodes;
  result.stack_modules = stack_summary.modules;
  result.stack_table_bytes = stack_summary.table_bytes;
  result.symbolized_addresses = symbols.addresses;
  result.symbolized_ahead = symbols.ahead;
  result.symbolize_ahead_cpu_seconds = symbols.ahead_cpu_seconds;
  result.symbolize_seconds_at_end = symbols.seconds_at_end;
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  return result;
}

}  // namespace memtrack::runtime
