// The rules that read the kvio.trace/1 summary: command sizes at max_sectors_kb, fsync, queue wait, requeues,
// merges (docs/diagnose.md).
#include <algorithm>
#include <cctype>

#include "diagnose/diagnose_format.h"
#include "diagnose/rules.h"

namespace kvio::diagnose {

using nlohmann::json;

HistSum hist_sum(const json& hs, const std::string& name) {
    if (!hs.is_object() || !hs.contains(name) || !hs[name].is_object()) return {};
    const json& h = hs[name];
    return {h.value("count", uint64_t(0)), h.value("sum", uint64_t(0))};
}

namespace {

uint64_t u64(const json& j, const char* k) { return j.is_object() ? j.value(k, uint64_t(0)) : 0; }

/// The block_events entry of device `dev` ("MAJ:MIN"), null when the trace has none.
json block_events_of(const json& trace, const std::string& dev) {
    for (const auto& e : trace.value("block_events", json::array()))
        if (e.value("dev", "") == dev) return e;
    return json();
}

/// Commands of size `limit` in bssplit histogram `h` when the log2 bucket holding `limit` can hold no other size a
/// command may have (limit a power of two: the bucket is [limit, 2 limit) and no command exceeds the limit); else 0.
uint64_t at_limit_from_bssplit(const json& h, uint64_t limit) {
    if (!limit || (limit & (limit - 1)) || !h.is_object()) return 0;
    for (const auto& b : h.value("buckets", json::array()))
        if (b[0].get<uint64_t>() == limit) return b[2].get<uint64_t>();
    return 0;
}

/// A command-size limit exactly: "1 MiB", "1280 KiB" (iec_bytes would round 1280 KiB to "1.2 MiB", and the advice is
/// to size I/O as a multiple of it).
std::string limit_text(uint64_t limit) {
    if (limit && limit % (1 << 20) == 0) return std::to_string(limit >> 20) + " MiB";
    if (limit && limit % 1024 == 0) return std::to_string(limit >> 10) + " KiB";
    return std::to_string(limit) + " B";
}

/// What to change for a split finding at `limit` bytes (`by_segments`: the max_segments cap) of device `d`.
std::string split_action(const json& d, uint64_t limit, bool by_segments) {
    const uint64_t limit_kb = u64(d, "max_sectors_kb"), hw_kb = u64(d, "max_hw_sectors_kb");
    if (by_segments)
        return "The driver takes at most max_segments (" + std::to_string(u64(d, "max_segments")) +
               ") segments per command and these pages were not physically contiguous, so raising max_sectors_kb "
               "does not help: physically contiguous buffers (huge pages, large folios) let a command carry more; "
               "else size the I/O as a multiple of " +
               limit_text(limit) + " and keep enough of them in flight.";
    if (hw_kb > limit_kb)
        return "Raise the limit to the device's own (max_hw_sectors_kb " + std::to_string(hw_kb) + "): echo " +
               std::to_string(hw_kb) + " > /sys/block/" + d.value("disk", "") +
               "/queue/max_sectors_kb (a udev rule keeps it across reboots); larger commands cost fewer "
               "completions per byte.";
    return "This is the device's own limit (max_hw_sectors_kb = max_sectors_kb; on NVMe the controller's "
           "MDTS): transfers above it are always split. Size the application's I/O as a multiple of " +
           limit_text(limit) + " and keep enough of them in flight.";
}

/// split_by_max_sectors (or, `by_segments`, split_by_max_segments: then only from the events' facts) of device `d`
/// and direction `op`; true when found.
bool split_one(const json& d, const json& ev, const CommandFacts* cf, const std::string& op, bool by_segments,
               std::vector<Finding>& out) {
    const CommandCaps caps = command_caps(d);
    const uint64_t limit = by_segments ? caps.segments : caps.sectors;
    const CapChains* ch = cf ? (by_segments ? &cf->segments : &cf->sectors) : nullptr;
    if (!limit || (by_segments && !ch)) return false;
    const json hs = d.value("histograms", json::object());
    const uint64_t cmds = u64(d.value(op, json::object()), "cmds");
    const uint64_t at_limit = ch ? ch->at_limit : at_limit_from_bssplit(hs.value("bssplit_" + op, json()), limit);
    const uint64_t splits = ev.is_object() ? u64(ev.value(op, json::object()), "splits") : 0;
    const double chained_share = ch && cf->bytes ? double(ch->chained_bytes) / double(cf->bytes) : 0;
    // docs/diagnose.md, split_by_max_sectors: most commands at the cap, and evidence the transfers were larger.
    if (cmds < 16 || double(at_limit) < 0.5 * double(cmds)) return false;
    if (splits * 4 < at_limit && chained_share < 0.5) return false;
    Finding f{by_segments ? "split_by_max_segments" : "split_by_max_sectors",
              d.value("disk", ""),
              op,
              "",
              "",
              json::object()};
    f.figures = {{"cmds", cmds},
                 {"cmds_at_limit", at_limit},
                 {"limit_bytes", limit},
                 {"max_sectors_kb", u64(d, "max_sectors_kb")},
                 {"max_hw_sectors_kb", u64(d, "max_hw_sectors_kb")},
                 {"splits", ev.is_object() ? json(splits) : json()}};
    if (by_segments) f.figures["max_segments"] = u64(d, "max_segments");
    std::string s =
        fixed(100.0 * double(at_limit) / double(cmds), 1) + " % of the " + op + "s (" + std::to_string(at_limit) +
        " of " + std::to_string(cmds) + ") are " + limit_text(limit) +
        (by_segments ? " commands, max_segments (" + std::to_string(u64(d, "max_segments")) +
                           ") pages of 4 KiB, below max_sectors_kb (" + std::to_string(u64(d, "max_sectors_kb")) + ")"
                     : " commands, the max_sectors_kb limit");
    if (ev.is_object()) s += "; " + std::to_string(splits) + " bios were split (block_split)";
    if (ch && ch->chains) {
        const double transfer = double(ch->chained_bytes) / double(ch->chains);
        f.figures["transfer_bytes_mean"] = transfer;
        f.figures["chained_share_pct"] = 100.0 * chained_share;
        s += "; " + fixed(100.0 * chained_share, 1) + " % of the bytes came in runs of contiguous commands issued " +
             "before the previous one completed, " + iec_bytes(transfer) + " a run on average: the application's " +
             "transfers, cut at the limit";
    }
    f.summary = s + ".";
    f.action = split_action(d, limit, by_segments);
    out.push_back(std::move(f));
    return true;
}

}  // namespace

CommandCaps command_caps(const json& d) {
    const uint64_t sectors = u64(d, "max_sectors_kb") * 1024, segments = u64(d, "max_segments") * 4096;
    return {sectors, sectors && segments < sectors ? segments : 0};
}

void split_rule(const json& trace, const CommandFactsMap& facts, std::vector<Finding>& out) {
    for (const auto& d : trace.value("devices", json::array())) {
        const std::string dev = d.value("dev", "");
        const json ev = block_events_of(trace, dev);
        for (const char* op : {"read", "write"}) {
            const CommandFacts* cf = nullptr;
            if (auto it = facts.find(dev); it != facts.end())
                if (auto jt = it->second.find(op); jt != it->second.end()) cf = &jt->second;
            if (!split_one(d, ev, cf, op, false, out)) split_one(d, ev, cf, op, true, out);
        }
    }
}

void fsync_rule(const json& trace, std::vector<Finding>& out) {
    const json ph = trace.value("process", json::object());
    const HistSum fs = hist_sum(ph, "fsync"), vw = hist_sum(ph, "vfs_write");
    // docs/diagnose.md, fsync_dominated_writes: at least 16 fsyncs, as much time in them as in the writes, and
    // one for every 8 writes or fewer.
    if (fs.count < 16 || fs.sum < vw.sum || vw.count > 8 * fs.count) return;
    uint64_t dev_write = 0, flushes = 0;
    for (const auto& d : trace.value("devices", json::array())) {
        dev_write += u64(d.value("write", json::object()), "bytes");
        flushes += hist_sum(d.value("histograms", json::object()), "flush_cmds").count;
    }
    const double share = 100.0 * double(fs.sum) / double(fs.sum + vw.sum);
    Finding f{"fsync_dominated_writes", "", "write", "", "", json::object()};
    f.figures = {{"fsync_calls", fs.count},  {"fsync_ns", fs.sum},
                 {"write_calls", vw.count},  {"write_ns", vw.sum},
                 {"fsync_share_pct", share}, {"device_write_bytes", dev_write},
                 {"flush_cmds", flushes},    {"device_write_bytes_per_fsync", double(dev_write) / double(fs.count)}};
    f.summary = std::to_string(fs.count) + " fsync/fdatasync calls took " + duration_ns(double(fs.sum)) + ", " +
                fixed(share, 1) + " % of the time in write and fsync calls (" + std::to_string(vw.count) + " writes, " +
                fixed(double(vw.count) / double(fs.count), 1) + " per fsync, mean fsync " + duration_ns(fs.mean()) +
                "); the device wrote " + iec_bytes(double(dev_write) / double(fs.count)) + " per fsync and got " +
                std::to_string(flushes) + " flush commands.";
    f.action =
        "Sync per object or per batch of objects, not per write: one fdatasync after an object's last write "
        "(or O_DIRECT writes and one fdatasync per object). Each fsync waits for the device, and on a drive "
        "with a volatile write cache it is a cache flush.";
    out.push_back(std::move(f));
}

namespace {

/// queue_wait of one device and direction: the block layer's wait before issue against D2C.
void queue_wait_one(const json& d, const std::string& op, std::vector<Finding>& out) {
    const json hs = d.value("histograms", json::object());
    const HistSum q2c = hist_sum(hs, "bt_q2c_" + op);
    uint64_t n = 0, wait = 0, device = 0;
    std::string biggest = "Q2D";
    uint64_t biggest_sum = 0;
    json stages = json::object();
    if (q2c.count >= 16) {  // --breakdown: the stages of the same requests
        for (const char* st : {"q2g", "g2i", "i2d", "g2d"}) {
            const HistSum s = hist_sum(hs, std::string("bt_") + st + "_" + op);
            wait += s.sum;
            stages[std::string(st) + "_ns"] = s.sum;
            if (s.sum > biggest_sum) biggest_sum = s.sum, biggest = st;
        }
        n = q2c.count, device = hist_sum(hs, "bt_d2c_" + op).sum;
    } else {  // Q2D of the inserted requests against D2C of all
        const HistSum q2d = hist_sum(hs, "q2d_" + op), d2c = hist_sum(hs, "d2c_" + op);
        if (q2d.count < 16 || !d2c.count) return;
        n = q2d.count, wait = q2d.sum, device = uint64_t(d2c.mean() * double(q2d.count));
    }
    // docs/diagnose.md, queue_wait: the requests waited longer before issue than the device took.
    if (n < 16 || wait <= device) return;
    for (auto& c : biggest) c = char(std::toupper(static_cast<unsigned char>(c)));
    Finding f{"queue_wait", d.value("disk", ""), op, "", "", json::object()};
    f.figures = {{"requests", n},
                 {"wait_ns_mean", double(wait) / double(n)},
                 {"d2c_ns_mean", double(device) / double(n)},
                 {"largest_stage", biggest},
                 {"nr_requests", d.value("nr_requests", json())}};
    if (!stages.empty()) f.figures["stages"] = stages;
    f.summary = op + "s waited " + duration_ns(double(wait) / double(n)) + " on average in the block layer before " +
                "issue (" + (stages.empty() ? "Q2D" : "Q2G + G2I + I2D + G2D, most in " + biggest) + ", " +
                std::to_string(n) + " requests) against " + duration_ns(double(device) / double(n)) +
                " at the device (D2C): more time queued than served.";
    if (biggest == "Q2G")
        f.action = "Requests waited for a free tag: more I/O was submitted than the queue holds (nr_requests " +
                   (d.contains("nr_requests") ? std::to_string(u64(d, "nr_requests")) : std::string("?")) +
                   "). The device is saturated at this depth: submit less at once, or raise nr_requests if the "
                   "device queues deeper.";
    else
        f.action =
            "The I/O scheduler or a plug held the requests: for a device that queues internally (NVMe) set "
            "echo none > /sys/block/" +
            f.device + "/queue/scheduler, and keep submission depth near what the device serves.";
    out.push_back(std::move(f));
}

/// requeues and merged_small_io of one device (block_events entry `ev`).
void block_event_findings(const json& d, const json& ev, std::vector<Finding>& out) {
    const std::string disk = d.value("disk", "");
    uint64_t requeues = 0, cmds = 0;
    for (const char* op : {"read", "write", "other"}) requeues += u64(ev.value(op, json::object()), "requeues");
    for (const char* op : {"read", "write"}) cmds += u64(d.value(op, json::object()), "cmds");
    if (requeues > 0) {  // docs/diagnose.md, requeues: any
        Finding f{"requeues", disk, "", "", "", json::object()};
        f.figures = {{"requeues", requeues},
                     {"read", u64(ev.value("read", json::object()), "requeues")},
                     {"write", u64(ev.value("write", json::object()), "requeues")},
                     {"cmds", cmds}};
        f.summary = std::to_string(requeues) + " requests were requeued (block_rq_requeue) over " +
                    std::to_string(cmds) +
                    " commands: the driver refused what it was given and the block layer "
                    "sent it again.";
        f.action =
            "The driver ran out of room (a full hardware queue, a busy or resetting device, a path "
            "failover): keep the submission depth within what the device queues, and read the kernel log "
            "for resets.";
        out.push_back(std::move(f));
    }
    for (const char* op : {"read", "write"}) {
        const json e = ev.value(op, json::object());
        const uint64_t merges = u64(e, "rq_merges") + u64(e, "bio_backmerges") + u64(e, "bio_frontmerges");
        const uint64_t n = u64(d.value(op, json::object()), "cmds"), bytes = u64(d.value(op, json::object()), "bytes");
        // docs/diagnose.md, merged_small_io: at least one merge per command.
        if (n < 16 || merges < n) continue;
        Finding f{"merged_small_io", disk, op, "", "", json::object()};
        f.figures = {{"merges", merges},
                     {"cmds", n},
                     {"bios_per_cmd", double(merges + n) / double(n)},
                     {"bio_bytes_mean", double(bytes) / double(merges + n)},
                     {"cmd_bytes_mean", double(bytes) / double(n)}};
        f.summary = std::to_string(merges) + " " + op + " bios were merged into " + std::to_string(n) + " commands (" +
                    fixed(double(merges + n) / double(n), 1) + " bios a command, ~" +
                    iec_bytes(double(bytes) / double(merges + n)) + " a bio, " + iec_bytes(double(bytes) / double(n)) +
                    " a command): the submitter's I/O is smaller than what reaches the device.";
        f.action = "Submit larger I/O (the merged size, " + iec_bytes(double(bytes) / double(n)) +
                   ") where the application controls it: the device sees the same commands, the host spends less "
                   "CPU per byte on bios and merges.";
        out.push_back(std::move(f));
    }
}

}  // namespace

void queue_rules(const json& trace, std::vector<Finding>& out) {
    for (const auto& d : trace.value("devices", json::array())) {
        for (const char* op : {"read", "write"}) queue_wait_one(d, op, out);
        const json ev = block_events_of(trace, d.value("dev", ""));
        if (ev.is_object()) block_event_findings(d, ev, out);
    }
}

}  // namespace kvio::diagnose
