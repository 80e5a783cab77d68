// `kvio simulate --xlsx-output` (docs/mlperf-benchmark.md, "Metrics and the results JSON", the benchmark's
// cli.py:export_results_to_xlsx): the results as a workbook with the benchmark's sheets and column names — "Summary"
// (one row: run parameters then metrics), "Run Parameters" (Parameter, Value), "Performance Metrics" (Metric, Value),
// "QoS Metrics" (one row per class with data), and with --enable-latency-tracing "Device Tracing" and "Trace
// Histograms" — written with libxlsxwriter. A path not ending in ".xlsx", or a build without libxlsxwriter
// (KVIO_NO_XLSXWRITER), gets the Summary row as CSV instead, as the benchmark does without openpyxl.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workload/serving/config.h"

namespace kvio::serving {

/// One sheet: column names and rows of cells. A cell is a JSON scalar: null (empty cell), bool, number, string.
struct Sheet {
    std::string name;
    std::vector<std::string> columns;
    std::vector<std::vector<nlohmann::ordered_json>> rows;
};

/// The benchmark's sheets for `results` (the --output document) of a run configured by `c`. `timestamp` is the
/// Run Parameters' "Timestamp" ("YYYY-mm-dd HH:MM:SS"). Values are the results' own (a key the run did not
/// produce is an empty cell); "Precondition Threads" 0 is shown as the online CPU count, as the benchmark does.
std::vector<Sheet> results_sheets(const nlohmann::ordered_json& results, const SimConfig& c,
                                  const std::string& timestamp);

/// Writes `sheet` as CSV (header row, then its rows; null → empty, bools True/False as pandas writes them,
/// numbers round-trip exact). Throws kvio::Error naming the file on failure.
void write_sheet_csv(const Sheet& sheet, const std::string& path);

/// Exports `results` to `path` (sheets as above) and returns the file written: `path` itself for an XLSX, else
/// the CSV path ("X.xlsx" → "X.csv" without libxlsxwriter; other names get ".csv" appended unless they end in it).
/// Throws kvio::Error naming the file when it cannot be written.
std::string export_results_xlsx(const nlohmann::ordered_json& results, const SimConfig& c, const std::string& path);

/// Whether this build writes XLSX (libxlsxwriter found by pkg-config at build time).
bool xlsx_supported();

}  // namespace kvio::serving
