// Field readers the foreign formats need beyond common/jsonl.h (the LMCache kvio semantic trace, the NVMe
// io_uring_cmd monitor JSONL): numbers written as strings, user_data in hex, timestamps in seconds or ns.
#pragma once
#include <cstdint>
#include <string>

#include "common/jsonl.h"

namespace kvio::validate {

/// A non-negative integer written as a JSON integer, a decimal string ("42") or a hex string with "0x" and
/// optional '_' between digit groups ("0x0000002a_00000005", the LMCache illustrations' user_data).
/// Throws "FILE:LINE: field 'F': expected ..." otherwise or when it does not fit in 64 bits.
uint64_t get_u64_lenient(const json& obj, const char* field, const JsonSource& src);

/// A CLOCK_MONOTONIC time as ns: a JSON integer is ns, a fraction (or any JSON float) is seconds
/// (rounded to the nearest ns). Throws for negative, non-numeric or out-of-range values (above 2^64 ns).
uint64_t get_time_ns(const json& obj, const char* field, const JsonSource& src);

/// A field that, when present, must be a string (checked, value unused). Throws "field 'F': expected a string".
void check_string_opt(const json& obj, const char* field, const JsonSource& src);
/// A field that, when present, must be a non-negative integer (checked). Throws as get_u64.
void check_u64_opt(const json& obj, const char* field, const JsonSource& src);

}  // namespace kvio::validate
