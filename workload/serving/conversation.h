// Multi-turn conversations of the serving simulation (benchmark conversation.py:ConversationManager,
// docs/mlperf-benchmark.md, "Users and the request stream" step 2 and docs/mlperf-benchmark.md, "Multi-turn, prefix and
// RAG reuse"): per-user conversations, their turns and cache keys, the table cap.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace kvio::serving {

/// One turn added to a conversation: its number (1-based) and cache key "<conv_id>_turn_<n>".
struct Turn {
    int turn_number = 0;
    std::string cache_key;
    int64_t context_tokens = 0;  ///< the turn's entry size in tokens (kvio: per-request byte accounting)
    /// context_tokens is the size the turn's prefill writes (set_turn_tokens ran, here or on the client that handed
    /// the turn over); false until its request reaches its prefill: the drawn size, which a system prompt's tokens
    /// may still shrink (docs/simulate.md, "Remote tier", handoff).
    bool sized = false;
    bool handed_over = false;  ///< came with a conversation another client handed to this one
};

/// How a request reads an earlier turn of its conversation (docs/simulate.md, "Remote tier", "Which tiers a turn is
/// read from").
enum class TurnRead {
    Skip,    ///< handed over before its prefill: the size the other client writes is not known here, so it is not read
    Local,   ///< this client's own turn: only this client writes it, so only this client's tiers are asked. Its size
             ///< may still change (the prefill takes the system prompt's tokens off the drawn size), and the server
             ///< could hold nothing of it but this client's own write in flight
    Shared,  ///< handed over sized: its size is the one its writer wrote; the server is asked when this client's tiers
             ///< do not hold it (another client wrote it)
};
/// turn_read(t): Skip for a turn handed over unsized, Shared for one handed over sized, Local otherwise.
TurnRead turn_read(const Turn& t);

/// Thread-safe table of conversations. Ids are "conv_<user_id>_<n>" with n a per-user counter from 1 (the
/// benchmark appends int(time.time()*1000), which makes keys differ run to run; the counter keeps
/// same-seed runs comparable). Ended conversations stay in the table as in the benchmark; when it holds
/// `max_conversations` the one with the oldest last access is dropped first (metadata only).
class ConversationManager {
public:
    /// `id_prefix` starts every conversation id ("conv_"; with --remote-handoff-probability "hconv_c<client>_", so
    /// that ids are unique across the clients of a run and their turns are shared remote entries: remote_tier.h).
    explicit ConversationManager(int max_conversations = 1000, std::string id_prefix = "conv_")
        : max_conversations_(max_conversations), id_prefix_(std::move(id_prefix)) {}

    /// start_conversation(user_id): a new open conversation, returns its id.
    std::string start_conversation(const std::string& user_id);
    /// add_turn(conv_id): turn_number += 1, key appended to the conversation's key list. Empty when the id is
    /// not in the table (dropped by the cap; the benchmark raises ValueError there and the user thread dies —
    /// kvio's caller starts a new conversation instead).
    std::optional<Turn> add_turn(const std::string& conv_id, int64_t context_tokens);
    /// Turns so far (0 for an unknown id).
    int turn_count(const std::string& conv_id) const;
    /// get_all_previous_turn_keys(conv_id, current_key): every turn of the conversation except `current_key`,
    /// in turn order — including turns added after it (the benchmark's quirk, docs/mlperf-benchmark.md, "Multi-turn,
    /// prefix and RAG reuse", "Upstream bugs kvio fixes or keeps").
    std::vector<Turn> previous_turns(const std::string& conv_id, const std::string& current_key) const;
    /// Marks a conversation ended (it stays in the table).
    void end_conversation(const std::string& conv_id);
    /// A conversation another client handed to this one (docs/simulate.md, "Remote tier", handoff): `conv_id` with
    /// its `turns` so far enters the table open (the cap applies as for a new one); an ended conversation of that id
    /// (this client handed it off before: it comes back) is replaced; false when the id is there and open.
    bool adopt(const std::string& conv_id, const std::vector<Turn>& turns);
    /// The tokens turn `key` of `conv_id` is written with (the prefill's, after a system prompt's tokens came off),
    /// set before that write: what a client that takes the conversation over reads; the turn is sized from then on.
    /// No-op for an unknown id or key.
    void set_turn_tokens(const std::string& conv_id, const std::string& key, int64_t tokens);
    /// All turns of a conversation (empty for an unknown id).
    std::vector<Turn> turns(const std::string& conv_id) const;

    size_t size() const;
    uint64_t started() const;
    uint64_t dropped() const;  ///< conversations dropped by the cap

private:
    struct Conversation {
        std::vector<Turn> turns;
        uint64_t last_access = 0;  ///< logical clock (a counter): the drop order without wall-clock ties
        bool ended = false;
    };
    void make_room();  ///< drops the oldest conversation when the table is full (mu_ held)
    int max_conversations_;
    std::string id_prefix_;
    mutable std::mutex mu_;
    std::map<std::string, Conversation> table_;
    std::map<std::string, uint64_t> per_user_count_;
    uint64_t clock_ = 0, started_ = 0, dropped_ = 0;
};

/// A conversation handed to another client (docs/simulate.md, "Remote tier", handoff).
struct HandedConversation {
    std::string conv_id;
    std::vector<Turn> turns;  ///< in turn order, each handed_over; numbers and keys as the sender had them
};
/// The message a client RPUSHes for the next one: {"conv": ID, "turns": [[KEY, TOKENS, SIZED], ...]}.
std::string handoff_message(const std::string& conv_id, const std::vector<Turn>& turns);
/// Reads handoff_message's text; nullopt when it is not one (not JSON, another shape).
std::optional<HandedConversation> parse_handoff_message(const std::string& text);

}  // namespace kvio::serving
