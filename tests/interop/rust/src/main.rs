//! Reads a MemtrackArtifact as CodSpeed's runner does and reports what it read, for
//! tests/interop/interop_test.cpp.
//!
//!     memtrack-interop-reader ARTIFACT RAW_OUT
//!
//! The struct and the reader are CodSpeed's (crates/runner-shared/src/artifacts/memtrack.rs in
//! CodSpeedHQ/runner): `zstd::Decoder::new` (the streaming decoder, which reads every frame and skips
//! skippable ones) under `rmp_serde::Deserializer::new`, one `MemtrackEvent::deserialize` per event. The
//! artifact is read twice:
//!
//! 1. with CodSpeed's `MemtrackEventStream` exactly as written there: its iterator ends on the first
//!    error (`.ok()`), so a context frame that confused it would show as fewer events, not as an error;
//! 2. strictly: the same decoder and deserializer, but an error is an error unless it is the end of the
//!    stream at an event boundary (no decompressed byte consumed since the last whole event).
//!
//! Both counts are printed; the test requires them equal. Every event of the strict read is written to
//! RAW_OUT as a 48-byte raw record (docs/FORMAT.md, "The raw record"), so the test compares it byte for
//! byte with `memtrack decode --format raw`. On stdout:
//!
//!     codspeed_events N
//!     events N
//!     kind NAME COUNT BYTES        (the eight kinds, in raw-record order; BYTES sums `size`)
//!     bytes_allocated N            (Malloc + Calloc + Realloc + AlignedAlloc sizes, as `memtrack stats`)
//!     brk_bytes N
//!     pid PID EVENTS               (ascending pid)
//!
//! Exit status 1 with one line on stderr naming the artifact and the event index on any failure.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};

// ---- CodSpeed's types, as in crates/runner-shared/src/artifacts/memtrack.rs (pid_t is i32 on Linux;
// libc is left out to keep the dependency list to the three crates the brief names). ----

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct MemtrackEvent {
    pub pid: i32,
    pub tid: i32,
    pub timestamp: u64,
    pub addr: u64,
    #[serde(flatten)]
    pub kind: MemtrackEventKind,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "type")]
pub enum MemtrackEventKind {
    Malloc {
        size: u64,
    },
    Free,
    Realloc {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        old_addr: Option<u64>,
        size: u64,
    },
    Calloc {
        size: u64,
    },
    AlignedAlloc {
        size: u64,
    },
    Mmap {
        size: u64,
    },
    Munmap {
        size: u64,
    },
    Brk {
        size: u64,
    },
}

pub struct MemtrackArtifact;

impl MemtrackArtifact {
    pub fn decode_streamed<R: Read>(
        reader: R,
    ) -> std::io::Result<MemtrackEventStream<zstd::Decoder<'static, BufReader<R>>>> {
        let decoder = zstd::Decoder::new(reader)?;
        Ok(MemtrackEventStream {
            deserializer: rmp_serde::Deserializer::new(decoder),
        })
    }
}

pub struct MemtrackEventStream<R: Read> {
    deserializer: rmp_serde::Deserializer<rmp_serde::decode::ReadReader<R>>,
}

impl<R: Read> Iterator for MemtrackEventStream<R> {
    type Item = MemtrackEvent;

    fn next(&mut self) -> Option<Self::Item> {
        MemtrackEvent::deserialize(&mut self.deserializer).ok()
    }
}

// ---- The strict read. ----

/// Counts the decompressed bytes rmp_serde takes, so the end of the stream can be told from a
/// truncated or rejected event: only an end-of-stream error with nothing taken since the last whole
/// event is a clean end.
struct Counting<R> {
    inner: R,
    taken: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.taken += n as u64;
        Ok(n)
    }
}

fn is_end_of_stream(e: &rmp_serde::decode::Error) -> bool {
    use rmp_serde::decode::Error;
    match e {
        Error::InvalidMarkerRead(io) => io.kind() == std::io::ErrorKind::UnexpectedEof,
        _ => false,
    }
}

/// The raw record of docs/FORMAT.md: kind numbers 1 Malloc, 2 Free, 3 Calloc, 4 Realloc,
/// 5 AlignedAlloc, 6 Mmap, 7 Munmap, 8 Brk; flags bit 0 when a Realloc has old_addr.
fn raw_record(e: &MemtrackEvent) -> [u8; 48] {
    use MemtrackEventKind::*;
    let (kind, size, old): (u8, u64, Option<u64>) = match e.kind {
        Malloc { size } => (1, size, None),
        Free => (2, 0, None),
        Calloc { size } => (3, size, None),
        Realloc { old_addr, size } => (4, size, old_addr),
        AlignedAlloc { size } => (5, size, None),
        Mmap { size } => (6, size, None),
        Munmap { size } => (7, size, None),
        Brk { size } => (8, size, None),
    };
    let mut r = [0u8; 48];
    r[0..8].copy_from_slice(&e.timestamp.to_le_bytes());
    r[8..16].copy_from_slice(&e.addr.to_le_bytes());
    r[16..24].copy_from_slice(&size.to_le_bytes());
    r[24..32].copy_from_slice(&old.unwrap_or(0).to_le_bytes());
    r[32..36].copy_from_slice(&e.pid.to_le_bytes());
    r[36..40].copy_from_slice(&e.tid.to_le_bytes());
    r[40] = kind;
    r[41] = u8::from(old.is_some());
    r
}

const KIND_NAMES: [&str; 8] = [
    "Malloc",
    "Free",
    "Calloc",
    "Realloc",
    "AlignedAlloc",
    "Mmap",
    "Munmap",
    "Brk",
];

fn run(artifact: &str, raw_out: &str) -> Result<(), String> {
    let open = || File::open(artifact).map_err(|e| format!("cannot open: {e}"));

    // 1. CodSpeed's reader, unchanged.
    let stream = MemtrackArtifact::decode_streamed(BufReader::new(open()?))
        .map_err(|e| format!("zstd::Decoder::new: {e}"))?;
    let codspeed_events = stream.count();

    // 2. The strict read.
    let decoder = zstd::Decoder::new(open()?).map_err(|e| format!("zstd::Decoder::new: {e}"))?;
    let mut de = rmp_serde::Deserializer::new(Counting {
        inner: decoder,
        taken: 0,
    });
    let mut out =
        BufWriter::new(File::create(raw_out).map_err(|e| format!("cannot create {raw_out}: {e}"))?);
    let mut count = 0u64;
    let mut kinds = [(0u64, 0u64); 8];
    let (mut allocated, mut brk) = (0u64, 0u64);
    let mut pids: BTreeMap<i32, u64> = BTreeMap::new();
    let mut at_last_event = 0u64;
    loop {
        match MemtrackEvent::deserialize(&mut de) {
            Ok(e) => {
                let r = raw_record(&e);
                out.write_all(&r)
                    .map_err(|e| format!("writing {raw_out}: {e}"))?;
                let k = usize::from(r[40] - 1);
                let size = u64::from_le_bytes(r[16..24].try_into().unwrap());
                // Saturating, as `memtrack stats` adds (the conformance fixtures hold u64::MAX sizes).
                kinds[k].0 += 1;
                kinds[k].1 = kinds[k].1.saturating_add(size);
                match e.kind {
                    MemtrackEventKind::Malloc { .. }
                    | MemtrackEventKind::Calloc { .. }
                    | MemtrackEventKind::Realloc { .. }
                    | MemtrackEventKind::AlignedAlloc { .. } => {
                        allocated = allocated.saturating_add(size)
                    }
                    MemtrackEventKind::Brk { .. } => brk = brk.saturating_add(size),
                    _ => {}
                }
                *pids.entry(e.pid).or_insert(0) += 1;
                count += 1;
                at_last_event = de.get_ref().taken;
            }
            Err(e) if is_end_of_stream(&e) && de.get_ref().taken == at_last_event => break,
            Err(e) => {
                return Err(format!(
                    "event {count} (decompressed offset {at_last_event}): {e}"
                ))
            }
        }
    }
    out.flush().map_err(|e| format!("writing {raw_out}: {e}"))?;

    let mut s = String::new();
    s += &format!("codspeed_events {codspeed_events}\nevents {count}\n");
    for (name, (n, bytes)) in KIND_NAMES.iter().zip(kinds.iter()) {
        s += &format!("kind {name} {n} {bytes}\n");
    }
    s += &format!("bytes_allocated {allocated}\nbrk_bytes {brk}\n");
    for (pid, n) in &pids {
        s += &format!("pid {pid} {n}\n");
    }
    std::io::stdout()
        .write_all(s.as_bytes())
        .map_err(|e| format!("stdout: {e}"))?;
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: memtrack-interop-reader ARTIFACT RAW_OUT");
        std::process::exit(2);
    }
    if let Err(e) = run(&args[1], &args[2]) {
        eprintln!("memtrack-interop-reader: {}: {e}", args[1]);
        std::process::exit(1);
    }
}
