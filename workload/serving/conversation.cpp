#include "workload/serving/conversation.h"

#include <nlohmann/json.hpp>

namespace kvio::serving {

void ConversationManager::make_room() {
    if (max_conversations_ > 0 && table_.size() >= size_t(max_conversations_)) {
        auto oldest = table_.begin();
        for (auto it = table_.begin(); it != table_.end(); ++it)
            if (it->second.last_access < oldest->second.last_access) oldest = it;
        table_.erase(oldest);
        ++dropped_;
    }
}

std::string ConversationManager::start_conversation(const std::string& user_id) {
    std::lock_guard lk(mu_);
    make_room();
    std::string id = id_prefix_ + user_id + "_" + std::to_string(++per_user_count_[user_id]);
    table_[id].last_access = ++clock_;
    ++started_;
    return id;
}

std::optional<Turn> ConversationManager::add_turn(const std::string& conv_id, int64_t context_tokens) {
    std::lock_guard lk(mu_);
    auto it = table_.find(conv_id);
    if (it == table_.end()) return std::nullopt;
    Conversation& c = it->second;
    Turn t;
    t.turn_number = int(c.turns.size()) + 1;
    t.cache_key = conv_id + "_turn_" + std::to_string(t.turn_number);
    t.context_tokens = context_tokens;
    c.turns.push_back(t);
    c.last_access = ++clock_;
    return t;
}

int ConversationManager::turn_count(const std::string& conv_id) const {
    std::lock_guard lk(mu_);
    auto it = table_.find(conv_id);
    return it == table_.end() ? 0 : int(it->second.turns.size());
}

std::vector<Turn> ConversationManager::previous_turns(const std::string& conv_id,
                                                      const std::string& current_key) const {
    std::lock_guard lk(mu_);
    std::vector<Turn> out;
    auto it = table_.find(conv_id);
    if (it == table_.end()) return out;
    for (const auto& t : it->second.turns)
        if (t.cache_key != current_key) out.push_back(t);
    return out;
}

void ConversationManager::end_conversation(const std::string& conv_id) {
    std::lock_guard lk(mu_);
    auto it = table_.find(conv_id);
    if (it != table_.end()) it->second.ended = true;
}

bool ConversationManager::adopt(const std::string& conv_id, const std::vector<Turn>& turns) {
    std::lock_guard lk(mu_);
    std::vector<Turn> merged = turns;
    if (auto it = table_.find(conv_id); it != table_.end()) {
        if (!it->second.ended) return false;
        // This client handed it off (and ended it): it comes back with the turns added since. A turn added here is
        // this client's own (only its prefill sizes and writes it, maybe still to come), and a turn sized here has
        // its size known here even when the message carries it unsized.
        for (Turn& t : merged)
            for (const Turn& mine : it->second.turns)
                if (mine.cache_key == t.cache_key && (!mine.handed_over || (mine.sized && !t.sized))) t = mine;
        table_.erase(it);
    }
    make_room();
    Conversation& c = table_[conv_id];
    c.turns = std::move(merged);
    c.last_access = ++clock_;
    return true;
}

void ConversationManager::set_turn_tokens(const std::string& conv_id, const std::string& key, int64_t tokens) {
    std::lock_guard lk(mu_);
    auto it = table_.find(conv_id);
    if (it == table_.end()) return;
    for (Turn& t : it->second.turns)
        if (t.cache_key == key) t.context_tokens = tokens, t.sized = true;
}

std::vector<Turn> ConversationManager::turns(const std::string& conv_id) const {
    std::lock_guard lk(mu_);
    auto it = table_.find(conv_id);
    return it == table_.end() ? std::vector<Turn>{} : it->second.turns;
}

size_t ConversationManager::size() const {
    std::lock_guard lk(mu_);
    return table_.size();
}
uint64_t ConversationManager::started() const {
    std::lock_guard lk(mu_);
    return started_;
}
uint64_t ConversationManager::dropped() const {
    std::lock_guard lk(mu_);
    return dropped_;
}

TurnRead turn_read(const Turn& t) {
    if (!t.handed_over) return TurnRead::Local;
    return t.sized ? TurnRead::Shared : TurnRead::Skip;
}

std::string handoff_message(const std::string& conv_id, const std::vector<Turn>& turns) {
    nlohmann::json list = nlohmann::json::array();
    for (const Turn& t : turns) list.push_back({t.cache_key, t.context_tokens, t.sized});
    return nlohmann::json{{"conv", conv_id}, {"turns", list}}.dump();
}

std::optional<HandedConversation> parse_handoff_message(const std::string& text) {
    try {
        const nlohmann::json j = nlohmann::json::parse(text);
        HandedConversation h;
        h.conv_id = j.at("conv").get<std::string>();
        for (const auto& t : j.at("turns")) {
            Turn turn;
            turn.turn_number = int(h.turns.size()) + 1;
            turn.cache_key = t.at(0).get<std::string>();
            turn.context_tokens = t.at(1).get<int64_t>();
            turn.sized = t.at(2).get<bool>();
            turn.handed_over = true;
            h.turns.push_back(std::move(turn));
        }
        return h;
    } catch (const nlohmann::json::exception&) {
        return std::nullopt;
    }
}

}  // namespace kvio::serving
