// `kvio distill`: trace -> fio job (+ exact iolog), and the closed-loop fidelity check (--verify).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include <unistd.h>

#include "common/devinfo.h"
#include "common/error.h"
#include "distiller/events.h"
#include "distiller/fidelity.h"
#include "distiller/fio_job.h"
#include "distiller/iolog.h"
#include "distiller/profile.h"
#include "distiller/verify.h"
#include "userspace/commands.h"

namespace kvio::cli {

namespace {
struct DistillArgs {
    std::string events, trace_json, dev, comm, out, filename, iolog;
    uint32_t pid = 0, runtime = 0, nr_requests = 0;
    bool verify = false, json = false;
};

void write_file(const std::string& path, const std::string& text) {
    std::ofstream f(path);
    f << text;
    f.flush();
    if (!f) throw Error("distill: cannot write " + path);
}

void run_distill(const DistillArgs& a) {
    using namespace kvio::distiller;
    // Before anything is read or written: the replay runs under `kvio trace` (BPF) and writes a raw device.
    if (a.verify && ::geteuid() != 0)
        throw Error("distill --verify needs root: it runs the job under `kvio trace` (BPF) on a block device; run it with "
                    "sudo (nothing was written)");
    if (a.events.empty() && a.trace_json.empty())
        throw Error("distill: give the trace with --events FILE (kvio.events/1, preferred) or --trace-json FILE (kvio.trace/1)");
    if (a.filename.empty())
        throw Error("distill: --filename TARGET is required: the job's target is never a default device");
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
    jo.target_is_block = is_block_device(a.filename);
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
    FioJob job = make_fio_job(p, jo);
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
    nlohmann::json opts = nlohmann::json::object();
    for (const auto& [k, v] : job.options) opts[k] = v;
    j["job"] = opts;
    j["not_inferred"] = job.not_inferred;
    if (!a.out.empty()) j["job_file"] = a.out;
    if (!a.iolog.empty()) j["iolog"] = {{"file", a.iolog}, {"ios", iolog_lines}};

    if (a.verify) {
        if (a.events.empty()) throw Error("distill --verify: needs --events (the score compares per-command distributions)");
        std::string job_path = a.out.empty() ? "/tmp/kvio-distill-verify.ini" : a.out;
        if (a.out.empty()) write_file(job_path, job.text);
        VerifyOptions vo;
        vo.job_path = job_path;
        vo.target = a.filename;
        vo.events_out = job_path + ".replay.jsonl";
        vo.needs_bytes = job.needs_bytes();
        Profile r = run_replay(p, vo);
        Fidelity f = score(p, r);
        j["verify"] = to_json(f);
        j["verify"]["replay_events"] = vo.events_out;
        if (!a.json) {
            std::printf("fidelity of %s replayed on %s (replay trace %s):\n", job_path.c_str(), a.filename.c_str(),
                        vo.events_out.c_str());
            std::printf("  size TV          read %.4f  write %.4f   (0 = identical size distributions)\n",
                        f.size_tv_read, f.size_tv_write);
            std::printf("  rwmixread        %.1f -> %.1f %%  error %.2f points\n", f.rwmix_orig, f.rwmix_replay, f.rwmix_err);
            std::printf("  queue depth TV   %.4f   (time-weighted in-flight count)\n", f.qd_tv);
            std::printf("  sequential share %.1f -> %.1f %%  error %.2f points\n", f.seq_orig, f.seq_replay, f.seq_err);
            std::printf("  D2C replay/orig  p50 %.2f  p99 %.2f\n", f.d2c_p50_ratio, f.d2c_p99_ratio);
        }
    }
    if (a.json) {
        std::cout << j.dump(2) << "\n";
        return;
    }
    if (a.out.empty() && !a.verify) {
        std::cout << job.text;
    } else if (!a.out.empty()) {
        std::printf("wrote %s:", a.out.c_str());
        for (const char* k : {"rw", "rwmixread", "bssplit", "iodepth", "numjobs", "thinktime"})
            if (!job.get(k).empty()) std::printf(" %s=%s", k, job.get(k).c_str());
        std::printf("\n");
    }
    if (!a.iolog.empty()) std::printf("wrote %s: %zu I/Os (fio iolog v3)\n", a.iolog.c_str(), iolog_lines);
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
    sub->add_option("--filename", a->filename, "fio target (file or block device); required, never defaulted")->required();
    sub->add_option("--runtime", a->runtime, "job runtime in seconds (default: the trace span rounded up, at least 1)")
        ->check(positive_integer());
    sub->add_option("--nr-requests", a->nr_requests,
                    "the source device's tag count, caps iodepth (default: /sys/block/DISK/queue/nr_requests when the "
                    "traced disk exists here)");
    sub->add_option("--iolog", a->iolog, "also write an exact replay log in fio iolog v3 format (timestamps µs, offsets bytes)");
    sub->add_flag("--verify", a->verify,
                  "run the job with fio on --filename (a block device, not the traced one) under `kvio trace`, and print the "
                  "fidelity score: size TV per direction, rwmixread error, queue-depth TV, sequential-share error, D2C ratios");
    sub->add_flag("--json", a->json, "print the derived options (and the fidelity numbers) as JSON");
    sub->callback([a] { run_distill(*a); });
}

}  // namespace kvio::cli
