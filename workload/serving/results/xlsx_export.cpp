#include "workload/serving/results/xlsx_export.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#ifndef KVIO_NO_XLSXWRITER
#include <xlsxwriter.h>
#endif

#include "common/csv.h"
#include "common/error.h"
#include "common/jsonl.h"
#include "common/output_file.h"

namespace kvio::serving {

namespace {

using J = nlohmann::ordered_json;

/// summary[k1][k2]... or null when any step is missing (the benchmark's get_nested → None → empty cell).
J nested(const J& root, std::initializer_list<const char*> keys) {
    const J* v = &root;
    for (const char* k : keys) {
        if (!v->is_object() || !v->contains(k)) return nullptr;
        v = &(*v)[k];
    }
    return *v;
}

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::pair<std::string, J>> run_parameters(const SimConfig& c, const std::string& timestamp) {
    const unsigned cpus = std::thread::hardware_concurrency();
    return {
        {"Timestamp", timestamp},
        {"Model", c.model},
        {"Num Users", c.num_users},
        {"Duration (s)", c.duration},
        {"GPU Memory per Card (GiB)", c.gpu_mem_gb},
        {"Num GPUs", c.num_gpus},
        {"Tensor Parallel", c.tensor_parallel},
        {"Total GPU Memory (GiB)", c.gpu_mem_gb * double(c.num_gpus)},
        {"CPU Memory (GiB)", c.cpu_mem_gb},
        {"Generation Mode", c.generation_mode},
        {"Performance Profile", c.performance_profile},
        {"Multi-turn", !c.disable_multi_turn},
        {"Prefix Caching", !c.disable_prefix_caching},
        {"RAG Enabled", c.enable_rag},
        {"Autoscaling", c.enable_autoscaling},
        {"Seed", c.seed ? J(*c.seed) : J(nullptr)},
        {"Max Concurrent Allocs", c.max_concurrent_allocs},
        {"Request Rate", c.request_rate},
        {"Max Requests", c.max_requests},
        {"Dataset Path", c.dataset_path.empty() ? std::string("N/A") : c.dataset_path},
        {"Cache Dir", c.cache_dir.empty() ? std::string("temp") : c.cache_dir},
        {"Storage Capacity (GiB)", c.storage_capacity_gb},
        {"Precondition", c.precondition},
        {"Precondition Size (GiB)", c.precondition_size_gb},
        {"Precondition Threads", c.precondition_threads > 0 ? c.precondition_threads : int64_t(cpus ? cpus : 4)},
        {"Trace Speedup", c.trace_speedup},
        {"Replay Cycles", c.replay_cycles},
    };
}

std::vector<std::pair<std::string, J>> performance_metrics(const J& s) {
    std::vector<std::pair<std::string, J>> m = {
        {"Total Requests", nested(s, {"total_requests"})},
        {"Total Tokens", nested(s, {"total_tokens"})},
        {"Elapsed Time (s)", nested(s, {"elapsed_time"})},
        {"Avg Throughput (tok/s)", nested(s, {"avg_throughput_tokens_per_sec"})},
        {"Storage Throughput (tok/s)", nested(s, {"storage_throughput_tokens_per_sec"})},
        {"Requests/sec", nested(s, {"requests_per_second"})},
    };
    const std::pair<const char*, const char*> pcts[] = {{"Mean", "mean"}, {"P50", "p50"},    {"P95", "p95"},
                                                        {"P99", "p99"},   {"P99.9", "p999"}, {"P99.99", "p9999"}};
    for (auto [label, key] : {std::pair{"E2E Latency", "end_to_end_latency_ms"},
                              {"Storage Latency", "storage_io_latency_ms"},
                              {"Gen Latency", "generation_latency_ms"}}) {
        const bool gen = std::string(key) == "generation_latency_ms";  // the benchmark stops Gen at P99
        for (size_t i = 0; i < (gen ? 4u : 6u); ++i)
            m.emplace_back(std::string(label) + " " + pcts[i].first + " (ms)", nested(s, {key, pcts[i].second}));
    }
    for (auto [kind, infix] : {std::pair{"Total", ""}, {"Device", "_device"}, {"Host", "_host"}})
        for (auto [op, opkey] : {std::pair{"Read", "read"}, {"Write", "write"}})
            for (size_t i = 1; i < 6; ++i) {
                const std::string key = std::string("storage_") + opkey + infix + "_" + pcts[i].second + "_ms";
                m.emplace_back(std::string("Storage Tier ") + op + " " + kind + " " + pcts[i].first + " (ms)",
                               nested(s, {"cache_stats", key.c_str()}));
            }
    m.emplace_back("Cache Hit Rate", nested(s, {"cache_stats", "cache_hit_rate"}));
    m.emplace_back("Read/Write Ratio", nested(s, {"cache_stats", "read_write_ratio"}));
    m.emplace_back("Total Read (GiB)", nested(s, {"cache_stats", "total_read_gb"}));
    m.emplace_back("Total Write (GiB)", nested(s, {"cache_stats", "total_write_gb"}));
    // The benchmark's tiers; a run with --remote-tier adds the remote tier's columns after them (kvio: a run without
    // it keeps the benchmark's columns exactly).
    std::vector<std::pair<const char*, const char*>> tiers = {{"GPU", "gpu"}, {"CPU", "cpu"}, {"Storage", "storage"}};
    if (!nested(s, {"cache_stats", "tier_remote_kv_bytes_written_gb"}).is_null())
        tiers.emplace_back("Remote", "remote");
    for (const char* dir : {"Written", "Read"})
        for (auto [T, t] : tiers) {
            const std::string key =
                std::string("tier_") + t + "_kv_bytes_" + (dir[0] == 'W' ? "written" : "read") + "_gb";
            m.emplace_back(std::string("Tier ") + T + " KV Bytes " + dir + " (GiB)",
                           nested(s, {"cache_stats", key.c_str()}));
        }
    for (auto [T, t] : tiers)
        for (const char* op : {"Read", "Write"}) {
            const std::string key =
                std::string("tier_") + t + "_" + (op[0] == 'R' ? "read" : "write") + "_bandwidth_gbps";
            m.emplace_back(std::string("Tier ") + T + " " + op + " Bandwidth (GiB/s)",
                           nested(s, {"cache_stats", key.c_str()}));
        }
    for (auto [T, t] : tiers) {
        const std::string key = std::string(t) + "_entries";
        m.emplace_back(std::string(T) + " Entries", nested(s, {"cache_stats", key.c_str()}));
    }
    m.emplace_back("Multi-turn Hit Rate", nested(s, {"multi_turn_stats", "hit_rate"}));
    return m;
}

Sheet key_value_sheet(const char* name, const char* key_column, const std::vector<std::pair<std::string, J>>& kv) {
    Sheet sh{name, {key_column, "Value"}, {}};
    for (const auto& [k, v] : kv) sh.rows.push_back({J(k), v});
    return sh;
}

// The benchmark's device-tracing rows, from kvio's per-device histograms (kvio.trace/1 buckets [lo, hi, count]).
struct TraceHist {
    const char* key;
    const char* label;
    const char* description;
    double divisor;  // kvio's unit → the benchmark's (ns → us, bytes → KiB / GiB)
};
constexpr TraceHist kTraceHists[] = {
    {"d2c_read", "D2C Read (us)", "Device hardware time", 1e3},
    {"d2c_write", "D2C Write (us)", "Device hardware time", 1e3},
    {"q2d_read", "Q2D Read (us)", "I/O scheduler queue", 1e3},
    {"q2d_write", "Q2D Write (us)", "I/O scheduler queue", 1e3},
    {"bssplit_read", "Block Size Read (KiB)", "I/O size distribution", 1024},
    {"bssplit_write", "Block Size Write (KiB)", "I/O size distribution", 1024},
    {"qd_read", "Queue Depth Read", "Instantaneous QD at dispatch", 1},
    {"qd_write", "Queue Depth Write", "Instantaneous QD at dispatch", 1},
    {"lba_read", "LBA Heatmap Read (GiB)", "Spatial I/O distribution", double(1ull << 30)},
    {"lba_write", "LBA Heatmap Write (GiB)", "Spatial I/O distribution", double(1ull << 30)},
};

// The lower edge of the bucket where the cumulative count reaches pct % (the benchmark's hist_pct).
double bucket_percentile(const J& buckets, uint64_t total, double pct) {
    const double target = double(total) * pct / 100.0;
    uint64_t cum = 0;
    for (const auto& b : buckets) {
        cum += b[2].get<uint64_t>();
        if (double(cum) >= target) return b[0].get<double>();
    }
    return buckets.back()[0].get<double>();
}

void add_trace_sheets(const J& results, std::vector<Sheet>& out) {
    const J devices = nested(results, {"device_latency_tracing", "devices"});
    if (!devices.is_array()) return;
    Sheet tr{
        "Device Tracing", {"Metric", "Description", "Samples", "P50", "P95", "P99", "Min Bucket", "Max Bucket"}, {}};
    Sheet raw{"Trace Histograms", {"Histogram", "Bucket Low", "Bucket High", "Count"}, {}};
    for (const auto& d : devices) {
        const std::string prefix = devices.size() > 1 ? d.value("disk", std::string("?")) + " " : "";
        for (const TraceHist& h : kTraceHists) {
            const J buckets = nested(d, {"histograms", h.key, "buckets"});
            if (!buckets.is_array() || buckets.empty()) continue;
            uint64_t total = 0;
            for (const auto& b : buckets) total += b[2].get<uint64_t>();
            if (total == 0) continue;
            const std::string label = prefix + h.label;
            tr.rows.push_back(
                {label, h.description, total, bucket_percentile(buckets, total, 50) / h.divisor,
                 bucket_percentile(buckets, total, 95) / h.divisor, bucket_percentile(buckets, total, 99) / h.divisor,
                 buckets.front()[0].get<double>() / h.divisor, buckets.back()[1].get<double>() / h.divisor});
            for (const auto& b : buckets)
                raw.rows.push_back({label, b[0].get<double>() / h.divisor, b[1].get<double>() / h.divisor, b[2]});
        }
    }
    if (tr.rows.empty()) return;
    out.push_back(std::move(tr));
    out.push_back(std::move(raw));
}

std::string csv_cell(const J& v) {
    if (v.is_null()) return "";
    if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
    if (v.is_string()) return csv_field(v.get<std::string>());
    if (v.is_number_float()) {
        char b[32];
        auto r = std::to_chars(b, b + sizeof b, v.get<double>());
        return std::string(b, r.ptr);
    }
    return v.dump();
}

#ifndef KVIO_NO_XLSXWRITER
void write_xlsx(const std::vector<Sheet>& sheets, const std::string& path) {
    PendingRename pending(path);  // whole or absent: libxlsxwriter writes the zip at close, into PATH.tmp-PID
    lxw_workbook* wb = workbook_new(pending.write_path().c_str());
    if (!wb) throw Error("--xlsx-output " + path + ": cannot create the workbook: " + std::strerror(errno));
    lxw_format* bold = workbook_add_format(wb);
    format_set_bold(bold);
    lxw_error err = LXW_NO_ERROR;
    auto check = [&](lxw_error e) {
        if (e != LXW_NO_ERROR && err == LXW_NO_ERROR) err = e;
    };
    for (const Sheet& sh : sheets) {
        lxw_worksheet* ws = workbook_add_worksheet(wb, sh.name.c_str());
        if (!ws) {
            workbook_close(wb);
            throw Error("--xlsx-output " + path + ": cannot add sheet '" + sh.name + "'");
        }
        for (size_t c = 0; c < sh.columns.size(); ++c)
            check(worksheet_write_string(ws, 0, lxw_col_t(c), sh.columns[c].c_str(), bold));
        for (size_t r = 0; r < sh.rows.size(); ++r)
            for (size_t c = 0; c < sh.rows[r].size(); ++c) {
                const J& v = sh.rows[r][c];
                const auto row = lxw_row_t(r + 1);
                const auto col = lxw_col_t(c);
                if (v.is_boolean())
                    check(worksheet_write_boolean(ws, row, col, v.get<bool>(), nullptr));
                else if (v.is_number())
                    check(worksheet_write_number(ws, row, col, v.get<double>(), nullptr));
                else if (v.is_string())
                    check(worksheet_write_string(ws, row, col, v.get<std::string>().c_str(), nullptr));
            }
    }
    const lxw_error close_err = workbook_close(wb);
    if (err != LXW_NO_ERROR) throw Error("--xlsx-output " + path + ": " + lxw_strerror(err));
    if (close_err != LXW_NO_ERROR)
        throw Error("--xlsx-output " + path + ": " + lxw_strerror(close_err) +
                    (errno ? std::string(" (") + std::strerror(errno) + ")" : ""));
    pending.commit();
}
#endif

}  // namespace

bool xlsx_supported() {
#ifdef KVIO_NO_XLSXWRITER
    return false;
#else
    return true;
#endif
}

std::vector<Sheet> results_sheets(const nlohmann::ordered_json& results, const SimConfig& c,
                                  const std::string& timestamp) {
    const J summary = results.contains("summary") ? results["summary"] : J::object();
    const auto params = run_parameters(c, timestamp);
    const auto metrics = performance_metrics(summary);
    std::vector<Sheet> out;
    Sheet sum{"Summary", {}, {{}}};
    for (const auto* kv : {&params, &metrics})
        for (const auto& [k, v] : *kv) {
            sum.columns.push_back(k);
            sum.rows[0].push_back(v);
        }
    out.push_back(std::move(sum));
    out.push_back(key_value_sheet("Run Parameters", "Parameter", params));
    out.push_back(key_value_sheet("Performance Metrics", "Metric", metrics));

    Sheet qos{"QoS Metrics",
              {"QoS Level", "Total Requests", "Latency P95 (ms)", "Latency P99 (ms)", "SLA Met", "SLA Compliance"},
              {}};
    const bool throughput = c.performance_profile == "throughput";
    if (summary.contains("qos_metrics"))
        for (auto it = summary["qos_metrics"].begin(); it != summary["qos_metrics"].end(); ++it) {
            const J& q = it.value();
            if (!q.is_object() || q.value("no_data", false)) continue;
            const J na = "N/A (throughput mode)";
            qos.rows.push_back({it.key(), nested(q, {"total_requests"}), nested(q, {"latency_ms", "p95"}),
                                nested(q, {"latency_ms", "p99"}), throughput ? na : nested(q, {"sla", "met"}),
                                throughput ? na : nested(q, {"sla", "compliance"})});
        }
    if (!qos.rows.empty()) out.push_back(std::move(qos));
    add_trace_sheets(results, out);
    return out;
}

void write_sheet_csv(const Sheet& sheet, const std::string& path) {
    std::ostringstream f;
    for (size_t i = 0; i < sheet.columns.size(); ++i) f << (i ? "," : "") << csv_field(sheet.columns[i]);
    f << "\n";
    for (const auto& row : sheet.rows) {
        for (size_t i = 0; i < row.size(); ++i) f << (i ? "," : "") << csv_cell(row[i]);
        f << "\n";
    }
    try {
        write_text_file(path, f.str());  // whole or absent, "PATH: write failed: REASON"
    } catch (const Error& e) {
        throw Error(std::string("--xlsx-output: ") + e.what());
    }
}

std::string export_results_xlsx(const nlohmann::ordered_json& results, const SimConfig& c, const std::string& path) {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    localtime_r(&t, &tm);
    char ts[32];
    std::strftime(ts, sizeof ts, "%Y-%m-%d %H:%M:%S", &tm);
    const std::vector<Sheet> sheets = results_sheets(results, c, ts);
#ifndef KVIO_NO_XLSXWRITER
    if (ends_with(path, ".xlsx")) {
        write_xlsx(sheets, path);
        return path;
    }
#endif
    std::string csv = path;
    if (ends_with(csv, ".xlsx"))
        csv.replace(csv.size() - 5, 5, ".csv");
    else if (!ends_with(csv, ".csv"))
        csv += ".csv";
    write_sheet_csv(sheets.front(), csv);
    return csv;
}

}  // namespace kvio::serving
