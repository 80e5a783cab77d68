// --config: the benchmark's config.yaml (docs/mlperf-benchmark.md, "config.yaml", kv_cache/config.py's schema) loaded
// strictly with yaml-cpp, and the settings echoed as JSON. One table of leaves drives the loader, the "valid keys"
// messages and the echo.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <set>

#include <yaml-cpp/yaml.h>

#include "common/error.h"
#include "redis/url.h"
#include "workload/serving/config.h"

namespace kvio::serving {

namespace {

using OJson = nlohmann::ordered_json;

struct Where {
    const std::string& file;
    std::string at(const YAML::Node& n) const { return file + ":" + std::to_string(n.Mark().line + 1); }
};

[[noreturn]] void type_error(const Where& w, const YAML::Node& n, const std::string& key, const std::string& want) {
    std::string got = n.IsScalar()     ? "'" + n.Scalar() + "'"
                      : n.IsSequence() ? "a list"
                      : n.IsMap()      ? "a mapping"
                                       : "null";
    throw Error(w.at(n) + ": key '" + key + "': expected " + want + ", got " + got);
}

bool plain(const YAML::Node& n) { return n.IsScalar() && n.Tag() == "?"; }

bool looks_bool_or_null(const std::string& s) {
    static const std::set<std::string> words = {"true", "True", "TRUE", "false", "False", "FALSE", "yes",
                                                "Yes",  "no",   "No",   "on",    "On",    "off",   "Off",
                                                "null", "Null", "NULL", "~",     ""};
    return words.count(s) > 0;
}

bool parse_int(const YAML::Node& n, int64_t& out) {
    if (!plain(n)) return false;
    const std::string& s = n.Scalar();
    if (s.empty()) return false;
    size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
    if (i == s.size()) return false;
    for (size_t k = i; k < s.size(); ++k)
        if (s[k] < '0' || s[k] > '9') return false;
    errno = 0;
    out = std::strtoll(s.c_str(), nullptr, 10);
    return errno == 0;
}

bool parse_num(const YAML::Node& n, double& out) {
    int64_t i;
    if (parse_int(n, i)) {
        out = double(i);
        return true;
    }
    if (!plain(n) || looks_bool_or_null(n.Scalar())) return false;
    try {
        out = n.as<double>();
        return true;
    } catch (const YAML::Exception&) {
        return false;
    }
}

int64_t get_int(const Where& w, const YAML::Node& n, const std::string& key) {
    int64_t v;
    if (!parse_int(n, v)) type_error(w, n, key, "an integer");
    return v;
}
double get_num(const Where& w, const YAML::Node& n, const std::string& key) {
    double v;
    if (!parse_num(n, v)) type_error(w, n, key, "a number");
    return v;
}
std::string get_str(const Where& w, const YAML::Node& n, const std::string& key) {
    double d;
    if (!n.IsScalar() || (plain(n) && (looks_bool_or_null(n.Scalar()) || parse_num(n, d))))
        type_error(w, n, key, "a string");
    return n.Scalar();
}
template <class T, class F>
std::pair<T, T> get_range(const Where& w, const YAML::Node& n, const std::string& key, F one, const char* want) {
    if (!n.IsSequence() || n.size() != 2) type_error(w, n, key, std::string("a list [min, max] of ") + want);
    T lo = one(w, n[0], key), hi = one(w, n[1], key);
    if (lo > hi) throw Error(w.at(n) + ": key '" + key + "': min is larger than max");
    return {lo, hi};
}

/// One leaf of the schema: its dotted path, how to set it from YAML and how to echo it.
struct Leaf {
    std::string path;
    std::function<void(YamlSettings&, const Where&, const YAML::Node&)> set;
    std::function<OJson(const YamlSettings&)> get;
};

UserTemplate& tmpl(YamlSettings& y, const std::string& name) {
    for (auto& [n, t] : y.user_templates)
        if (n == name) return t;
    y.user_templates.push_back({name, {}});
    return y.user_templates.back().second;
}
const UserTemplate* tmpl(const YamlSettings& y, const std::string& name) {
    for (const auto& [n, t] : y.user_templates)
        if (n == name) return &t;
    return nullptr;
}

template <class T>
Leaf int_leaf(std::string path, T YamlSettings::*m) {
    return {path,
            [path, m](YamlSettings& y, const Where& w, const YAML::Node& n) {
                int64_t v = get_int(w, n, path);
                if (v < 0 && std::is_unsigned_v<T>) type_error(w, n, path, "a non-negative integer");
                y.*m = T(v);
            },
            [m](const YamlSettings& y) { return OJson(y.*m); }};
}
Leaf num_leaf(std::string path, double YamlSettings::*m) {
    return {path, [path, m](YamlSettings& y, const Where& w, const YAML::Node& n) { y.*m = get_num(w, n, path); },
            [m](const YamlSettings& y) { return OJson(y.*m); }};
}
Leaf str_leaf(std::string path, std::string YamlSettings::*m) {
    return {path, [path, m](YamlSettings& y, const Where& w, const YAML::Node& n) { y.*m = get_str(w, n, path); },
            [m](const YamlSettings& y) { return OJson(y.*m); }};
}

/// user_templates.<name>.<field>: a [min, max] list into the template's IntRange or FloatRange.
template <class R, class F>
Leaf range_leaf(const std::string& name, const std::string& path, R UserTemplate::*m, F one, const char* want) {
    using T = decltype(R::lo);
    return {path,
            [=](YamlSettings& y, const Where& w, const YAML::Node& n) {
                auto [lo, hi] = get_range<T>(w, n, path, one, want);
                tmpl(y, name).*m = {lo, hi};
            },
            [=](const YamlSettings& y) {
                const auto* t = tmpl(y, name);
                return t ? OJson::array({(t->*m).lo, (t->*m).hi}) : OJson();
            }};
}

const std::vector<Leaf>& schema() {
    using Y = YamlSettings;
    static const std::vector<Leaf> leaves = [] {
        std::vector<Leaf> v;
        for (const char* name : {"chatbot", "coding", "document"}) {
            const std::string base = std::string("user_templates.") + name + ".";
            const std::string nm = name;
            v.push_back(range_leaf(nm, base + "context_range", &UserTemplate::context_range, get_int, "integers"));
            v.push_back(
                range_leaf(nm, base + "generation_range", &UserTemplate::generation_range, get_int, "integers"));
            v.push_back(
                range_leaf(nm, base + "think_time_range", &UserTemplate::think_time_range, get_num, "numbers (s)"));
        }
        v.push_back(num_leaf("generation_timing.none", &Y::generation_timing_none));
        v.push_back(num_leaf("generation_timing.fast", &Y::generation_timing_fast));
        v.push_back(num_leaf("generation_timing.realistic", &Y::generation_timing_realistic));
        for (const char* cls : {"interactive", "responsive", "batch"}) {
            const std::string base = std::string("qos_profiles.") + cls + ".";
            const std::string c = cls;
            using Q = QosProfile;
            for (const auto& fm : std::initializer_list<std::pair<const char*, double Q::*>>{
                     {"target_latency_p95_ms", &Q::target_latency_p95_ms},
                     {"target_latency_p99_ms", &Q::target_latency_p99_ms},
                     {"target_latency_p999_ms", &Q::target_latency_p999_ms},
                     {"target_latency_p9999_ms", &Q::target_latency_p9999_ms}}) {
                const auto m = fm.second;  // a named copy: clang 14 cannot capture a structured binding
                const std::string p = base + fm.first;
                v.push_back(
                    {p,
                     [c, p, m](Y& y, const Where& w, const YAML::Node& n) { y.qos_profiles[c].*m = get_num(w, n, p); },
                     [c, m](const Y& y) {
                         auto it = y.qos_profiles.find(c);
                         return it == y.qos_profiles.end() ? OJson() : OJson(it->second.*m);
                     }});
            }
            const std::string p = base + "priority";
            v.push_back({p,
                         [c, p](Y& y, const Where& w, const YAML::Node& n) {
                             y.qos_profiles[c].priority = int(get_int(w, n, p));
                         },
                         [c](const Y& y) {
                             auto it = y.qos_profiles.find(c);
                             return it == y.qos_profiles.end() ? OJson() : OJson(it->second.priority);
                         }});
        }
        v.push_back(num_leaf("qos_distribution.interactive_probability", &Y::interactive_probability));
        v.push_back(num_leaf("qos_distribution.responsive_threshold", &Y::responsive_threshold));
        v.push_back(int_leaf("eviction.max_recursion_depth", &Y::max_recursion_depth));
        v.push_back(num_leaf("eviction.target_usage_ratio", &Y::target_usage_ratio));
        v.push_back(num_leaf("eviction.large_entry_limit_ratio", &Y::large_entry_limit_ratio));
        v.push_back(int_leaf("eviction.max_evictions_hard_cap", &Y::max_evictions_hard_cap));
        v.push_back(int_leaf("eviction.max_evictions_min", &Y::max_evictions_min));
        v.push_back(num_leaf("gpu_backend.memory_fraction", &Y::gpu_memory_fraction));
        v.push_back(int_leaf("gpu_backend.max_eviction_attempts", &Y::gpu_max_eviction_attempts));
        v.push_back(num_leaf("gpu_backend.free_memory_threshold", &Y::gpu_free_memory_threshold));
        v.push_back(int_leaf("prefix_cache.min_prefix_length", &Y::min_prefix_length));
        v.push_back(int_leaf("prefix_cache.max_prefix_entries", &Y::max_prefix_entries));
        v.push_back(num_leaf("prefix_cache.system_prompt_hit_probability", &Y::system_prompt_hit_probability));
        v.push_back(int_leaf("rag.chunk_size_tokens", &Y::rag_chunk_size_tokens));
        v.push_back(int_leaf("rag.top_k_chunks", &Y::rag_top_k_chunks));
        v.push_back(int_leaf("rag.max_chunk_bytes", &Y::rag_max_chunk_bytes));
        v.push_back(num_leaf("rag.request_probability", &Y::rag_request_probability));
        v.push_back(str_leaf("rag.retrieval_distribution", &Y::rag_retrieval_distribution));
        v.push_back(int_leaf("rag.max_documents", &Y::rag_max_documents));
        v.push_back(int_leaf("rag.large_model_doc_tokens_min", &Y::rag_large_model_doc_tokens_min));
        v.push_back(int_leaf("rag.large_model_doc_tokens_max", &Y::rag_large_model_doc_tokens_max));
        v.push_back(int_leaf("rag.small_model_doc_tokens_min", &Y::rag_small_model_doc_tokens_min));
        v.push_back(int_leaf("rag.small_model_doc_tokens_max", &Y::rag_small_model_doc_tokens_max));
        v.push_back(int_leaf("conversation.max_conversations", &Y::max_conversations));
        v.push_back(int_leaf("conversation.max_turns_per_conv", &Y::max_turns_per_conv));
        v.push_back(num_leaf("conversation.end_conversation_probability", &Y::end_conversation_probability));
        v.push_back(int_leaf("autoscaler.min_users", &Y::autoscaler_min_users));
        v.push_back(int_leaf("autoscaler.max_users", &Y::autoscaler_max_users));
        v.push_back(num_leaf("autoscaler.scale_up_factor", &Y::autoscaler_scale_up_factor));
        v.push_back(num_leaf("autoscaler.scale_down_factor", &Y::autoscaler_scale_down_factor));
        v.push_back(int_leaf("autoscaler.consecutive_samples_required", &Y::autoscaler_consecutive_samples_required));
        v.push_back(int_leaf("decode.batch_size", &Y::decode_batch_size));
        v.push_back(int_leaf("sharegpt.max_context_tokens", &Y::sharegpt_max_context_tokens));
        v.push_back(int_leaf("sharegpt.max_generation_tokens", &Y::sharegpt_max_generation_tokens));
        v.push_back(int_leaf("sharegpt.chars_per_token_estimate", &Y::sharegpt_chars_per_token));
        v.push_back(
            num_leaf("saturation_detection.read_latency_p95_threshold_ms", &Y::sat_read_latency_p95_threshold_ms));
        v.push_back(
            num_leaf("saturation_detection.write_latency_p95_threshold_ms", &Y::sat_write_latency_p95_threshold_ms));
        v.push_back(int_leaf("saturation_detection.queue_depth_threshold", &Y::sat_queue_depth_threshold));
        v.push_back(int_leaf("saturation_detection.history_window_size", &Y::sat_history_window_size));
        for (const char* k : {"max_users", "max_duration_seconds", "max_gpu_memory_gb", "max_cpu_memory_gb"}) {
            const std::string p = std::string("validation_limits.") + k, key = k;
            v.push_back(
                {p,
                 [p, key](Y& y, const Where& w, const YAML::Node& n) { y.validation_limits[key] = get_int(w, n, p); },
                 [key](const Y& y) {
                     return y.validation_limits.contains(key) ? OJson(y.validation_limits[key]) : OJson();
                 }});
        }
        return v;
    }();
    return leaves;
}

constexpr const char* kModelKeys[] = {"name",         "num_layers",      "hidden_dim", "num_heads",
                                      "kv_heads",     "kv_dim_per_head", "dtype",      "attention_type",
                                      "kv_lora_rank", "qk_rope_head_dim"};

/// Next path components below `prefix` ("" = top level), in schema order; model_configs is a top-level key.
std::vector<std::string> keys_below(const std::string& prefix) {
    std::vector<std::string> out;
    auto add = [&](const std::string& k) {
        for (const auto& o : out)
            if (o == k) return;
        out.push_back(k);
    };
    if (prefix.empty()) add("model_configs");
    for (const auto& l : schema()) {
        if (!prefix.empty() && l.path.rfind(prefix + ".", 0) != 0) continue;
        const std::string rest = prefix.empty() ? l.path : l.path.substr(prefix.size() + 1);
        add(rest.substr(0, rest.find('.')));
    }
    return out;
}

[[noreturn]] void unknown_key(const Where& w, const YAML::Node& key_node, const std::string& path,
                              const std::vector<std::string>& valid) {
    std::string list;
    for (const auto& k : valid) list += (list.empty() ? "" : ", ") + k;
    throw Error(w.at(key_node) + ": unknown configuration key '" + path + "' (valid keys at this level: " + list + ")");
}

uint32_t get_u32(const Where& w, const YAML::Node& n, const std::string& key) {
    int64_t v = get_int(w, n, key);
    if (v < 0 || v > int64_t(UINT32_MAX)) type_error(w, n, key, "a non-negative 32-bit integer");
    return uint32_t(v);
}

/// model_configs.<name>: the benchmark's field names into a ModelConfig. head_dim = kv_dim_per_head when > 0,
/// else hidden_dim / num_heads; kv_heads defaults to num_heads; dtype float16 when absent.
workload::ModelConfig model_from_yaml(const Where& w, const std::string& key, const YAML::Node& n) {
    const std::string base = "model_configs." + key;
    if (!n.IsMap()) type_error(w, n, base, "a mapping of model fields");
    std::vector<std::string> valid(std::begin(kModelKeys), std::end(kModelKeys));
    workload::ModelConfig m;
    m.name = key;
    std::string display = key, dtype = "float16", attention = "mha";
    uint32_t kv_dim = 0;
    bool kv_heads_set = false;
    for (auto it = n.begin(); it != n.end(); ++it) {
        const std::string f = it->first.as<std::string>(), p = base + "." + f;
        const YAML::Node v = it->second;
        if (f == "name")
            display = get_str(w, v, p);
        else if (f == "num_layers")
            m.num_layers = get_u32(w, v, p);
        else if (f == "hidden_dim")
            m.hidden_size = get_u32(w, v, p);
        else if (f == "num_heads")
            m.num_attention_heads = get_u32(w, v, p);
        else if (f == "kv_heads")
            m.num_kv_heads = get_u32(w, v, p), kv_heads_set = true;
        else if (f == "kv_dim_per_head")
            kv_dim = get_u32(w, v, p);
        else if (f == "dtype")
            dtype = get_str(w, v, p);
        else if (f == "attention_type")
            attention = get_str(w, v, p);
        else if (f == "kv_lora_rank")
            m.kv_lora_rank = get_u32(w, v, p);
        else if (f == "qk_rope_head_dim")
            m.qk_rope_head_dim = get_u32(w, v, p);
        else
            unknown_key(w, it->first, p, valid);
    }
    // The benchmark's bytes_per_element: float32 4, float16/bfloat16 2, int8 1. int8 maps to kvio's 1-byte Fp8.
    if (dtype == "int8")
        m.dtype = workload::KvDtype::Fp8;
    else {
        try {
            m.dtype = workload::parse_dtype(dtype);
        } catch (const Error&) {
            throw Error(w.at(n) + ": key '" + base + ".dtype': unknown dtype '" + dtype +
                        "' (known: float32, float16, bfloat16, int8)");
        }
    }
    if (attention == "mla")
        m.attention = workload::AttentionKind::Mla;
    else if (attention != "mha" && attention != "gqa")
        throw Error(w.at(n) + ": key '" + base + ".attention_type': '" + attention + "' is not one of mha, gqa, mla");
    if (m.num_layers == 0) throw Error(w.at(n) + ": key '" + base + ".num_layers': missing or 0");
    if (!kv_heads_set) m.num_kv_heads = m.num_attention_heads;
    if (m.attention == workload::AttentionKind::Mla) {
        if (m.kv_lora_rank + m.qk_rope_head_dim == 0)
            throw Error(w.at(n) + ": key '" + base + "': attention_type mla needs kv_lora_rank and qk_rope_head_dim");
    } else {
        if (kv_dim == 0 && (m.num_attention_heads == 0 || m.hidden_size == 0))
            throw Error(w.at(n) + ": key '" + base + "': needs kv_dim_per_head, or hidden_dim and num_heads");
        if (m.num_kv_heads == 0) throw Error(w.at(n) + ": key '" + base + ".kv_heads': missing or 0");
    }
    m.head_dim = kv_dim ? kv_dim : (m.num_attention_heads ? m.hidden_size / m.num_attention_heads : 0);
    m.source = "config.yaml model_configs." + key + " (\"" + display + "\")";
    return m;
}

OJson yaml_to_json(const YAML::Node& n) {
    if (n.IsMap()) {
        OJson o = OJson::object();
        for (auto it = n.begin(); it != n.end(); ++it) o[it->first.as<std::string>()] = yaml_to_json(it->second);
        return o;
    }
    if (n.IsSequence()) {
        OJson a = OJson::array();
        for (const auto& e : n) a.push_back(yaml_to_json(e));
        return a;
    }
    if (!n.IsScalar()) return nullptr;
    if (!plain(n)) return n.Scalar();
    const std::string& s = n.Scalar();
    int64_t i;
    double d;
    if (parse_int(n, i)) return i;
    if (s == "~" || s == "null" || s == "Null" || s == "NULL" || s.empty()) return nullptr;
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
    if (parse_num(n, d)) return d;
    return s;
}

void walk(YamlSettings& y, const Where& w, const YAML::Node& map, const std::string& prefix) {
    const auto valid = keys_below(prefix);
    for (auto it = map.begin(); it != map.end(); ++it) {
        const std::string k = it->first.as<std::string>(), path = prefix.empty() ? k : prefix + "." + k;
        bool known = false;
        for (const auto& v : valid) known = known || v == k;
        if (!known) unknown_key(w, it->first, path, valid);
        const YAML::Node v = it->second;
        if (path == "model_configs") {
            if (v.IsNull()) continue;
            if (!v.IsMap()) type_error(w, v, path, "a mapping of model names");
            for (auto m = v.begin(); m != v.end(); ++m) {
                const std::string name = m->first.as<std::string>();
                y.model_configs[name] = model_from_yaml(w, name, m->second);
            }
            continue;
        }
        const Leaf* leaf = nullptr;
        for (const auto& l : schema())
            if (l.path == path) leaf = &l;
        if (leaf) {
            leaf->set(y, w, v);
        } else {
            if (!v.IsMap())
                type_error(
                    w, v, path, "a mapping (valid keys: " + [&] {
                        std::string s;
                        for (const auto& c : keys_below(path)) s += (s.empty() ? "" : ", ") + c;
                        return s;
                    }() + ")");
            walk(y, w, v, path);
        }
    }
}

}  // namespace

void load_yaml_config(const std::string& path, SimConfig& c) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw Error(path + ": --config: cannot open: " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) throw Error(path + ": --config: is a directory");
    YAML::Node root;
    try {
        root = YAML::LoadFile(path);
    } catch (const YAML::ParserException& e) {
        throw Error(path + ":" + std::to_string(e.mark.line + 1) + ": YAML syntax error: " + e.msg);
    } catch (const YAML::BadFile&) {
        throw Error(path + ": --config: cannot read: " + std::strerror(errno ? errno : EIO));
    }
    const Where w{path};
    YamlSettings y = default_yaml_settings();
    if (root.IsNull()) {  // an empty file is an empty mapping (yaml.safe_load(f) or {})
        y.raw = OJson::object();
        c.yaml = std::move(y);
        return;
    }
    if (!root.IsMap()) type_error(w, root, "(top level)", "a mapping of configuration sections");
    walk(y, w, root, "");
    y.raw = yaml_to_json(root);
    c.yaml = std::move(y);
}

nlohmann::ordered_json yaml_settings_to_json(const YamlSettings& y) {
    OJson o = OJson::object();
    for (const auto& l : schema()) {
        OJson* at = &o;
        size_t start = 0;
        for (size_t dot; (dot = l.path.find('.', start)) != std::string::npos; start = dot + 1)
            at = &(*at)[l.path.substr(start, dot - start)];
        OJson v = l.get(y);
        if (!v.is_null()) (*at)[l.path.substr(start)] = std::move(v);
    }
    OJson models = OJson::object();
    for (const auto& [name, m] : y.model_configs)
        models[name] = {{"source", m.source},
                        {"num_layers", m.num_layers},
                        {"hidden_dim", m.hidden_size},
                        {"num_heads", m.num_attention_heads},
                        {"kv_heads", m.num_kv_heads},
                        {"head_dim", m.head_dim},
                        {"dtype", workload::dtype_name(m.dtype)},
                        {"attention_type", m.attention == workload::AttentionKind::Mla ? "mla" : "mha"},
                        {"kv_lora_rank", m.kv_lora_rank},
                        {"qk_rope_head_dim", m.qk_rope_head_dim},
                        {"bytes_per_token", bytes_per_token(m)}};
    o["model_configs"] = std::move(models);
    return o;
}

nlohmann::ordered_json config_to_json(const SimConfig& c) {
    OJson flags = OJson::object();
    for (const auto& f : flag_table()) {
        std::visit(
            [&](auto member) {
                const auto& v = c.*member;
                if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::optional<int64_t>>)
                    flags[flag_dest(f)] = v ? OJson(*v) : OJson();
                else
                    flags[flag_dest(f)] = v;
            },
            f.target);
    }
    // The server's URL without its password (docs/simulate.md, "Remote tier"): results and rank files are shared.
    if (!c.remote_tier.empty()) flags["remote_tier"] = redis::recorded_url(c.remote_tier);
    // One client of several (client_config): the run's launcher and client count, not the client's own one-client
    // view of them (docs/mlperf-benchmark.md, "Multi-client runs").
    const bool one_of_many = c.client_count > 1 || c.client_of_mpi;
    if (one_of_many) {
        flags["num_clients"] = c.client_count;
        flags["mpi"] = c.client_of_mpi;
    }
    OJson o = OJson::object();
    o["flags"] = std::move(flags);
    if (one_of_many)
        o["client"] = {
            {"rank", c.client_index}, {"clients", c.client_count}, {"launcher", c.client_of_mpi ? "mpi" : "processes"}};
    o["yaml"] = yaml_settings_to_json(c.yaml);
    o["yaml_file"] = c.yaml.raw;
    return o;
}

}  // namespace kvio::serving
