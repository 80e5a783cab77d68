// `kvio distill`: trace -> fio job (+ exact iolog), and the closed-loop fidelity check (--verify).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include <unistd.h>

#include "common/devinfo.h"
#include "common/error.h"
#include "common/jsonl.h"
#include "distiller/events.h"
#include "distiller/fidelity.h"
#include "distiller/fio_job.h"
#include "distiller/iolog.h"
#include "distiller/profile.h"
#include "distiller/phased_job.h"
#include "distiller/timeline.h"
#include "distiller/verify.h"
#include "userspace/commands.h"

namespace kvio::cli {

namespace {
struct DistillArgs {
    std::string events, trace_json, dev, comm, out, filename, iolog, json_out, mode = "count";
    uint32_t pid = 0, runtime = 0, nr_requests = 0, max_phases = 16;
    double max_tv = -1;
    bool verify = false;
};

void write_file(const std::string& path, const std::string& text) {
    std::ofstream f(path);
    f << text;
    f.flush();
    if (!f) throw Error("distill: cannot write " + path);
}

// Fails before any work when an output cannot be written (a bad path must not cost a traced replay).
void probe_writable(const std::string& path) {
    if (path.empty() || path == "-") return;
    std::ofstream f(path, std::ios::app);
    if (!f) throw Error("distill: cannot write " + path + ": " + std::strerror(errno));
}

void run_distill(const DistillArgs& a) {
    using namespace kvio::distiller;
    // Before anything is read or written: the replay runs under `kvio trace` (BPF) and writes a raw device.
    if (a.verify && ::geteuid() != 0)
        throw Error("distill --verify needs root: it runs the job under `kvio trace` (BPF) on a block device; run it with "
                    "sudo (nothing was written)");
    if (a.events.empty() && a.trace_json.empty())
        throw Error("distill: give the trace with --events FILE (kvio.events/1, preferred) or --trace-json FILE (kvio.trace/1)");
    if (a.filename.empty() && (a.verify || !a.iolog.empty()))
        throw Error(std::string("distill ") + (a.verify ? "--verify" : "--iolog") +
                    ": needs --filename TARGET (the device the job runs on / the iolog names)");
    if (a.max_tv >= 0 && !a.verify) throw Error("distill --max-tv: needs --verify (it bounds the replay's size TV)");
    const bool json_stdout = a.json_out == "-";
    probe_writable(a.json_out);
    EventTrace ev;
    Profile p;
    if (!a.events.empty()) {
        ev = load_events(a.events, EventFilter{a.dev, a.pid, a.comm});
        p = profile_events(ev);
        if (!ev.has_summary)
            std::fprintf(stderr, "kvio distill: warning: %s has no summary record: the trace was cut off, its last "
                                 "commands are missing and its loss check could not be made\n", a.events.c_str());
    } else {
        if (a.pid || !a.comm.empty())
            throw Error("distill: --pid/--comm need --events (kvio.trace/1 histograms are per device, not per process)");
        p = profile_trace_json(a.trace_json, a.dev);
    }

    JobOptions jo;
    jo.filename = a.filename;
    jo.target_is_block = !a.filename.empty() && is_block_device(a.filename);
    jo.mode = a.mode == "time" || a.runtime ? JobMode::Time : JobMode::Count;
    jo.runtime_s = a.runtime;
    if (a.nr_requests) {
        jo.nr_requests = a.nr_requests;
        jo.nr_requests_source = "--nr-requests";
    } else if (p.nr_requests) {
        jo.nr_requests = p.nr_requests;
        jo.nr_requests_source = "recorded in the trace";
    } else if (auto d = parse_dev_string(p.dev)) {
        // The trace's device on this machine, when it is the same disk (name matches).
        try {
            auto info = block_dev_info(*d);
            if (info.nr_requests && (p.disk.empty() || info.name == p.disk)) {
                jo.nr_requests = info.nr_requests;
                jo.nr_requests_source = "/sys/block/" + info.name + "/queue/nr_requests";
            }
        } catch (const Error&) {
        }
    }
    PhaseOptions po;
    po.max_phases = a.max_phases;
    PhasePlan plan;
    FioJob job = a.events.empty() ? make_fio_job(p, jo) : make_phased_job(ev, p, jo, po, &plan);
    // Both outputs are opened before either is written: a bad --iolog path leaves no job behind.
    std::ofstream iolog;
    if (!a.iolog.empty()) {
        if (a.events.empty()) throw Error("distill --iolog: needs --events (histograms hold no individual commands)");
        iolog.open(a.iolog);
        if (!iolog) throw Error("distill: cannot write " + a.iolog + ": " + std::strerror(errno));
    }
    if (!a.out.empty()) write_file(a.out, job.text);

    size_t iolog_lines = 0;
    if (iolog.is_open()) {
        iolog_lines = write_iolog(iolog, ev.cmds, a.filename);
        if (!iolog.flush()) throw Error("distill: cannot write " + a.iolog);
    }

    nlohmann::json j = {{"schema", "kvio.distill/1"}, {"source", p.source}, {"format", p.format}, {"dev", p.dev}, {"disk", p.disk},
                        {"cmds", {{"read", p.read.cmds}, {"write", p.write.cmds}, {"other", p.other_cmds}}}};
    j["job"] = job_json(job);
    j["not_inferred"] = job.not_inferred;
    if (!a.events.empty()) j["phases"] = phases_json(plan);
    if (!a.out.empty()) j["job_file"] = a.out;
    if (!a.iolog.empty()) j["iolog"] = {{"file", a.iolog}, {"ios", iolog_lines}};

    bool missed = false;
    if (a.verify) {
        if (a.events.empty()) throw Error("distill --verify: needs --events (the score compares per-command distributions)");
        std::string job_path = a.out.empty() ? "/tmp/kvio-distill-verify.ini" : a.out;
        if (a.out.empty()) write_file(job_path, job.text);
        VerifyOptions vo;
        vo.job_path = job_path;
        vo.target = a.filename;
        vo.events_out = job_path + ".replay.jsonl";
        vo.needs_bytes = job.needs_bytes();
        Replay r = run_replay(p, vo);
        Fidelity f = score(p, r.profile);
        TimeFidelity tf = score_over_time(plan.data, data_cmds(r.trace.cmds));  // the detector's own limits, not --max-phases
        j["verify"] = to_json(f);
        j["verify"]["time_resolved"] = to_json(tf);
        j["verify"]["replay_events"] = vo.events_out;
        j["verify"]["summary"] = summary_line(f, tf);
        const double worst_tv = std::max({f.size_tv_read, f.size_tv_write, tf.worst_size_tv});
        if (a.max_tv >= 0) {
            missed = worst_tv > a.max_tv;
            j["verify"]["max_tv"] = {{"limit", a.max_tv}, {"worst", worst_tv}, {"met", !missed}};
        }
        if (!json_stdout) {
            std::printf("fidelity of %s replayed on %s (replay trace %s):\n", job_path.c_str(), a.filename.c_str(),
                        vo.events_out.c_str());
            std::printf("                   whole run                     worst of %zu windows (by commands)\n", tf.windows);
            std::printf("  size TV          read %.4f  write %.4f      %.4f\n", f.size_tv_read, f.size_tv_write, tf.worst_size_tv);
            std::printf("  read share       %.1f -> %.1f %%, error %.2f    %.2f points\n", f.rwmix_orig, f.rwmix_replay, f.rwmix_err,
                        tf.worst_read_err);
            std::printf("  queue depth TV   %.4f                        %.4f\n", f.qd_tv, tf.worst_depth_tv);
            std::printf("  sequential share %.1f -> %.1f %%, error %.2f    %.2f points\n", f.seq_orig, f.seq_replay, f.seq_err,
                        tf.worst_seq_err);
            std::printf("  phases           %zu -> %zu, %s, volume error <= %.2f %%\n", tf.phases.orig, tf.phases.replay,
                        tf.phases.in_order ? "in order" : "NOT matching", tf.worst_volume_err);
            std::printf("  D2C replay/orig  p50 %.2f  p99 %.2f\n", f.d2c_p50_ratio, f.d2c_p99_ratio);
            std::printf("fidelity: %s\n", summary_line(f, tf).c_str());
            if (a.max_tv >= 0)
                std::printf("--max-tv %.4f: worst size TV %.4f, %s\n", a.max_tv, worst_tv, missed ? "MISSED" : "met");
        }
    }
    if (!a.json_out.empty()) {
        if (json_stdout) std::cout << j.dump(2) << "\n";
        else write_json_file(a.json_out, j);
    }
    if (!json_stdout) {
        if (a.out.empty() && !a.verify) {
            std::cout << job.text;
        } else if (!a.out.empty()) {
            std::printf("wrote %s:", a.out.c_str());
            if (!job.sections.empty()) std::printf(" %zu sections (%zu phases)", job.sections.size(), plan.phases.size());
            for (const char* k : {"rw", "rwmixread", "bssplit", "iodepth", "numjobs", "thinktime"})
                if (!job.get(k).empty()) std::printf(" %s=%s", k, job.get(k).c_str());
            std::printf("\n");
        }
        if (!a.iolog.empty()) std::printf("wrote %s: %zu I/Os (fio iolog v3)\n", a.iolog.c_str(), iolog_lines);
    }
    if (missed) {
        std::fprintf(stderr, "kvio distill: the replay's worst size TV exceeds --max-tv %.4f\n", a.max_tv);
        throw CLI::RuntimeError(1);
    }
}
}  // namespace

void add_distill_command(CLI::App& app) {
    auto a = std::make_shared<DistillArgs>();
    auto* sub = app.add_subcommand(
        "distill",
        "Turn a device trace into a fio job (and an exact fio iolog), and score how faithfully it replays.\n"
        "Every job value is derived from the trace; the job's header says from what, and what could not be inferred.\n"
        "Rules: docs/distill.md.");
    sub->add_option("--events", a->events, "kvio.events/1 JSONL (or a kvio.events.bin/1 capture) from `kvio trace --events` (preferred)");
    sub->add_option("--trace-json", a->trace_json, "kvio.trace/1 from `kvio trace --json` (histograms; used without --events)");
    sub->add_option("--dev", a->dev, "device to distill, \"MAJ:MIN\" or name (default: the only one in the trace)");
    sub->add_option("--pid", a->pid, "keep only commands submitted by this pid");
    sub->add_option("--comm", a->comm, "keep only commands submitted by tasks with this comm");
    sub->add_option("-o,--output", a->out, "write the fio job here (default: print it)");
    sub->add_option("--filename", a->filename,
                    "fio target (file or block device), never defaulted; without it the job sets no filename (give it on fio's "
                    "command line); needed by --verify and --iolog");
    sub->add_option("--mode", a->mode,
                    "how each section ends: count (the trace's number of commands, number_ios) or time (the trace's duration, runtime)")
        ->capture_default_str()
        ->check(CLI::IsMember({"count", "time"}));
    sub->add_option("--runtime", a->runtime, "the whole job's runtime in seconds (implies --mode time; phases get their share)")
        ->check(positive_integer());
    sub->add_option("--max-phases", a->max_phases, "at most this many phases (1: one flat section for the whole trace)")
        ->capture_default_str()
        ->check(positive_integer());
    sub->add_option("--nr-requests", a->nr_requests,
                    "the source device's tag count, caps iodepth (default: /sys/block/DISK/queue/nr_requests when the "
                    "traced disk exists here)");
    sub->add_option("--iolog", a->iolog, "also write an exact replay log in fio iolog v3 format (timestamps µs, offsets bytes)");
    sub->add_flag("--verify", a->verify,
                  "run the job with fio on --filename (a block device, not the traced one) under `kvio trace`, and print the "
                  "fidelity score, whole run and window by window: size TV per direction, read-share error, queue-depth TV, "
                  "sequential-share error, the phase sequence, D2C ratios");
    sub->add_option("--max-tv", a->max_tv,
                    "with --verify: exit 1 when the replay's worst size TV (whole run or any window) is above this (for CI)")
        ->check(CLI::Range(0.0, 1.0));
    sub->add_option("--json", a->json_out, "write the derived options, phases (and the fidelity numbers) as JSON to FILE; - = stdout "
                                           "(instead of the text output)");
    sub->callback([a] { run_distill(*a); });
}

}  // namespace kvio::cli
