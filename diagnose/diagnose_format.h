// Number formats of the diagnosis' sentences.
#pragma once
#include <cstdint>
#include <string>

namespace kvio::diagnose {

/// 1536 -> "1.5 KiB", 4194304 -> "4 MiB": bytes in powers of 1024, up to one decimal.
std::string iec_bytes(double bytes);
/// Bytes per second in decimal MB/s ("45.2 MB/s"), as fio and drive data sheets print them.
std::string mb_per_s(double bps);
/// "850 ns", "12.3 µs", "4.10 ms", "1.20 s".
std::string duration_ns(double ns);
/// "%.<prec>f".
std::string fixed(double v, int prec);

}  // namespace kvio::diagnose
