// One inference request of the serving simulation (benchmark benchmark.py:InferenceRequest, docs/mlperf-benchmark.md,
// "Users and the request stream").
#pragma once
#include <cstdint>
#include <string>

#include "workload/serving/arrivals/users.h"

namespace kvio::serving {

/// PREFILL: write only (context >= 10000 tokens); PREFILL_DECODE ("both"): write then decode reads;
/// DECODE: reads only (RAG side requests, decode-only mode).
enum class RequestPhase { Prefill, PrefillDecode, Decode };
/// "prefill" | "prefill_decode" | "decode".
const char* phase_name(RequestPhase p);

struct InferenceRequest {
    std::string request_id;  ///< "req_<user_id>_<req_id:06d>"
    std::string user_id;
    QosClass qos = QosClass::Batch;
    RequestPhase phase = RequestPhase::PrefillDecode;
    int64_t context_tokens = 0;
    int64_t generate_tokens = 0;
    std::string cache_key;        ///< "<conv_id>_turn_<n>" | "<user_id>_req_<req_id:06d>" | "rag_<doc>" | ...
    std::string conversation_id;  ///< "" without multi-turn
    int turn_number = 1;
    uint64_t seq = 0;        ///< global request counter (req_id), FIFO tie-break within a class
    uint64_t submit_ns = 0;  ///< CLOCK_MONOTONIC at creation (the L1 start)
    bool is_rag = false;
    std::string rag_doc_id;  ///< RAG side request: the document
};

}  // namespace kvio::serving
