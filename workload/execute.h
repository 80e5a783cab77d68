// Executes object ops on an engine: splits each op into transfers of at most max_io_bytes, keeps up to
// qd transfers in flight, fills stores with the fake pattern (workload/pattern.h) and verifies loads
// against it (stamps by default, every byte with Verify::Full).
#pragma once
#include <csignal>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "workload/engine.h"
#include "workload/pattern.h"
#include "workload/record.h"

namespace kvio::workload {

/// What happened to one object op. Times are CLOCK_MONOTONIC ns.
struct OpResult {
    uint64_t ts_start = 0;   ///< before the op's first transfer was queued
    uint64_t ts = 0;         ///< after its last transfer completed (and fsync, buffered stores)
    uint64_t bytes = 0;      ///< bytes transferred (store: header + payload)
    uint32_t transfers = 0;  ///< engine transfers the op was split into
    uint64_t checksum = 0;   ///< checksum(..., ExecOptions::verify) of the payload written / read (see pattern.h)
    std::string error;       ///< empty on success; a load whose bytes differ from the pattern fails here
};

struct ExecOptions {
    uint64_t max_io_bytes = 512 * 1024;  ///< transfer cap (multiple of the LBA size)
    uint32_t qd = 1;  ///< transfers in flight at most (the buffer pool holds 2 × qd when that fits in 1 GiB)
    /// How loads are checked (pattern.h): stamps (32 bytes per 4 KiB) or every byte; also what
    /// OpResult::checksum covers. A store's pattern generation is its trace_id; a load expects the
    /// generation of the latest store of its object before it (none: whatever it reads first).
    Verify verify = Verify::Stamps;
    /// I/O buffers in the pool, at least qd: 0 = 2 × qd when they fit in 1 GiB (a store then never has to
    /// refill a buffer a load dirtied), else qd.
    uint32_t buffers = 0;
    /// Called when an op finished, with the fd its bytes went through still open (for FIEMAP).
    std::function<void(size_t index, const ObjectOp&, OpResult&, int fd)> on_done;
    /// Polled between transfers (a signal handler's flag): once non-zero no new op starts, and the ops already
    /// started run to their last transfer, so every op either completed whole or never issued a byte. nullptr: never.
    const volatile sig_atomic_t* stop = nullptr;
    /// Polled like `stop` (the user's second stop signal, StopSignal::insist_flag()): once non-zero no transfer is
    /// queued any more; the transfers in flight complete and the ops they belong to end unfinished (cut: ts_start
    /// set, ts 0, on_done not called). Bounds a stop on a stalled device to the transfers in flight. nullptr: never.
    const volatile sig_atomic_t* cut = nullptr;
    /// Per op (same length as the ops, or nullptr): ns after the schedule's anchor before which the op must not
    /// start (a replay's schedule). The anchor is the first op's start less its own offset, so a run that opens its
    /// target late on a busy machine shifts the whole schedule and keeps the gaps between ops. Ops still start in
    /// order; with transfers in flight the executor keeps reaping, so a start can be late by up to one transfer
    /// (OpResult::ts_start - offset - anchor; the anchor is the least ts_start - offset over the ops).
    const std::vector<uint64_t>* not_before = nullptr;
};

/// The slot header a store writes at the slot start (zero-padded to header_bytes).
struct SlotHeader {
    char magic[8];  ///< "KVIOSLT1"
    uint64_t object_id;
    uint64_t payload_bytes;
    uint64_t io_bytes;
    uint64_t checksum;  ///< pattern_checksum(object_id, trace_id, io_bytes, Verify::Stamps)
    uint32_t trace_id;  ///< the store's trace_id = the payload's pattern generation
    uint32_t key_len;
    char key[192];
};

/// CLOCK_MONOTONIC in ns (the clock bpf_ktime_get_ns() reads).
uint64_t monotonic_ns();

/// Runs `ops` in order on `engine`. `target` is the device/file (slots) or the directory (files).
/// A load waits for earlier ops on the same object to finish. Returns one result per op (same order); an op
/// that never started because ExecOptions::stop was set keeps ts_start 0; one cut by ExecOptions::cut keeps ts 0.
/// Throws kvio::Error when the target or a file cannot be opened or the engine fails; per-transfer
/// errors and pattern mismatches are reported in OpResult::error.
std::vector<OpResult> execute(const std::vector<ObjectOp>& ops, Engine& engine, const std::string& target,
                              Layout layout, const ExecOptions& opt);

}  // namespace kvio::workload
