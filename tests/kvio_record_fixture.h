// Test fixture: a kvio_record.json of the reference kvio tooling (schema_version 1), written from the field list
// of the foreign-input work: source, model, geometry, device_geometry{engine, use_uring_cmd, mdts_bytes, block_align,
// header_bytes, slot_bytes, capacity_bytes}, access_pattern "store-all-then-load-all", objects[{index, part,
// payload_bytes, ops}]. Index 0 has a k and a v part; index 1 one kv part whose ops are objects.
#pragma once
#include <cstdint>

#include <nlohmann/json.hpp>

namespace kvio::test {

inline nlohmann::json kvio_record_fixture(uint64_t payload = 1 << 20, const char* engine = "io_uring",
                                          bool use_uring_cmd = false) {
    const uint64_t slot = 4096 + payload;
    return {
        {"schema_version", 1},
        {"source", "lmcache-kvio"},
        {"model", "llama3.1-8b"},
        {"geometry",
         {{"num_layers", 32}, {"num_kv_heads", 8}, {"head_dim", 128}, {"dtype", "bfloat16"}, {"chunk_size", 256}}},
        {"device_geometry",
         {{"engine", engine},
          {"use_uring_cmd", use_uring_cmd},
          {"mdts_bytes", 131072},
          {"block_align", 4096},
          {"header_bytes", 4096},
          {"slot_bytes", slot},
          {"capacity_bytes", 64ull << 20}}},
        {"access_pattern", "store-all-then-load-all"},
        {"objects",
         {{{"index", 0}, {"part", "k"}, {"payload_bytes", payload}, {"ops", {"store", "load"}}},
          {{"index", 0}, {"part", "v"}, {"payload_bytes", payload}, {"ops", {"store", "load"}}},
          {{"index", 1}, {"part", "kv"}, {"payload_bytes", payload}, {"ops", {{{"op", "store"}}, {{"op", "load"}}}}}}}};
}

}  // namespace kvio::test
