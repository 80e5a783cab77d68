#include "workload/serving/arrivals/sharegpt.h"

#include <cstdio>
#include <iterator>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/input_file.h"

namespace kvio::serving {

namespace {

/// The file as a stream of chars for nlohmann's SAX parser, counting lines on the way: `token_line` is the line
/// of the last non-blank character the parser consumed, i.e. of the token it just reported.
struct LineCountingFile {
    std::FILE* f = nullptr;
    std::vector<char> buf = std::vector<char>(1 << 16);
    size_t pos = 0, len = 0;
    size_t line = 1, token_line = 1;
    bool eof = false;

    bool fill() {
        if (pos < len) return true;
        if (eof) return false;
        len = std::fread(buf.data(), 1, buf.size(), f);
        pos = 0;
        if (len == 0) eof = true;
        return len > 0;
    }
};

/// An input iterator over a LineCountingFile (all copies share the file; the default-constructed one is the end).
struct CharIter {
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;
    LineCountingFile* s = nullptr;

    bool at_end() const { return !s || !s->fill(); }
    reference operator*() const { return s->buf[s->pos]; }
    CharIter& operator++() {
        const char c = s->buf[s->pos++];
        if (c == '\n')
            ++s->line;
        else if (c != ' ' && c != '\t' && c != '\r')
            s->token_line = s->line;
        return *this;
    }
    CharIter operator++(int) {
        CharIter t = *this;
        ++*this;
        return t;
    }
    bool operator==(const CharIter& o) const { return at_end() == o.at_end(); }
    bool operator!=(const CharIter& o) const { return !(*this == o); }
};

int64_t code_points(const std::string& s) {
    int64_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

/// The SAX handler: a small state machine over list → conversation → conversations → turn.
class Handler : public nlohmann::json_sax<nlohmann::json> {
public:
    Handler(const std::string& file, LineCountingFile& in, int64_t max, const ShareGptLimits& lim, ShareGptDataset& out)
        : file_(file), in_(in), max_(max), lim_(lim), out_(out) {}

    bool stopped_early() const { return stopped_; }
    bool saw_top() const { return saw_top_; }

    bool null() override { return scalar("null", nullptr); }
    bool boolean(bool) override { return scalar("a boolean", nullptr); }
    bool number_integer(number_integer_t v) override {
        const std::string s = std::to_string(v);
        return scalar("a number", &s, true);
    }
    bool number_unsigned(number_unsigned_t v) override {
        const std::string s = std::to_string(v);
        return scalar("a number", &s, true);
    }
    bool number_float(number_float_t, const string_t&) override { return scalar("a fraction", nullptr); }
    bool string(string_t& v) override { return scalar("a string", &v, false, true); }
    bool binary(binary_t&) override { return scalar("binary", nullptr); }
    bool start_object(std::size_t) override { return open(true); }
    bool end_object() override { return close(); }
    bool start_array(std::size_t) override { return open(false); }
    bool end_array() override { return close(); }
    bool key(string_t& k) override {
        key_ = k;
        return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
        std::string what = ex.what();
        if (auto p = what.find("] "); p != std::string::npos) what.erase(0, p + 2);
        throw Error(file_ + ":" + std::to_string(in_.line) + ": not valid JSON (" + what + ")");
    }

private:
    enum class Frame { List, Conv, Turns, Turn, Skip };

    [[noreturn]] void fail(const std::string& msg, size_t line = 0) const {
        std::string where = file_ + ":" + std::to_string(line ? line : in_.token_line) + ": ";
        if (stack_.size() >= 2) where += "element " + std::to_string(out_.elements_read + 1) + ": ";
        throw Error(where + msg);
    }
    Frame top() const { return stack_.back(); }

    // A scalar value at the current place. `text`: its text for string/integer values (id, from, value).
    bool scalar(const char* kind, const std::string* text, bool is_int = false, bool is_string = false) {
        if (stack_.empty()) fail(std::string("the top level is ") + kind + ", not a list of conversations");
        switch (top()) {
            case Frame::List:
                fail(std::string("expected a conversation object, got ") + kind);
            case Frame::Turns:
                fail("field 'conversations': turn " + std::to_string(turns_.size() + 1) + ": expected an object, got " +
                     kind);
            case Frame::Conv:
                if (key_ == "conversations") fail(std::string("field 'conversations': expected a list, got ") + kind);
                if (key_ == "id") {
                    if (!is_string && !is_int)
                        fail(std::string("field 'id': expected a string or an integer, got ") + kind);
                    conv_.id = *text;
                }
                return true;
            case Frame::Turn:
                if (key_ == "from" || key_ == "value") {
                    if (!is_string) fail("field '" + key_ + "': expected a string, got " + kind);
                    if (key_ == "from") {
                        from_ = *text;
                        has_from_ = true;
                    } else {
                        chars_ = code_points(*text);
                        has_value_ = true;
                    }
                }
                return true;
            case Frame::Skip:
                return true;
        }
        return true;
    }

    bool open(bool object) {
        const char* kind = object ? "an object" : "a list";
        if (stack_.empty()) {
            if (object) fail("the top level is an object, not a list of conversations");
            saw_top_ = true;
            stack_.push_back(Frame::List);
            return true;
        }
        switch (top()) {
            case Frame::List:
                if (!object) fail("expected a conversation object, got a list");
                conv_ = {};
                conv_line_ = in_.token_line;
                has_turns_ = false;
                turns_.clear();
                stack_.push_back(Frame::Conv);
                return true;
            case Frame::Conv:
                if (key_ == "conversations") {
                    if (object) fail("field 'conversations': expected a list, got an object");
                    has_turns_ = true;
                    stack_.push_back(Frame::Turns);
                    return true;
                }
                if (key_ == "id") fail(std::string("field 'id': expected a string or an integer, got ") + kind);
                stack_.push_back(Frame::Skip);
                return true;
            case Frame::Turns:
                if (!object)
                    fail("field 'conversations': turn " + std::to_string(turns_.size() + 1) +
                         ": expected an object, got a list");
                has_from_ = has_value_ = false;
                turn_line_ = in_.token_line;
                stack_.push_back(Frame::Turn);
                return true;
            case Frame::Turn:
                if (key_ == "from" || key_ == "value") fail("field '" + key_ + "': expected a string, got " + kind);
                stack_.push_back(Frame::Skip);
                return true;
            case Frame::Skip:
                stack_.push_back(Frame::Skip);
                return true;
        }
        return true;
    }

    bool close() {
        const Frame f = top();
        if (f == Frame::Turn) {
            const std::string t = "field 'conversations': turn " + std::to_string(turns_.size() + 1) + ": ";
            if (!has_from_) fail(t + "field 'from': missing", turn_line_);
            if (!has_value_) fail(t + "field 'value': missing", turn_line_);
            turns_.push_back({from_, chars_});
        } else if (f == Frame::Conv && !has_turns_) {
            fail("field 'conversations': missing", conv_line_);
        }
        stack_.pop_back();
        if (f == Frame::Conv) {
            finish_conversation();
            if (int64_t(out_.elements_read) >= max_) {
                stopped_ = true;
                return false;  // --max-conversations: the rest of the file is not read
            }
        }
        return true;
    }

    int64_t tokens(int64_t chars, int64_t cap) const {
        const int64_t t = std::max<int64_t>(1, chars / std::max<int64_t>(1, lim_.chars_per_token));
        return std::min(t, cap);
    }

    void finish_conversation() {
        if (conv_.id.empty()) conv_.id = "conv_" + std::to_string(out_.elements_read);
        for (size_t i = 0; i + 1 < turns_.size(); i += 2) {
            if (turns_[i].from != "human" || turns_[i + 1].from != "gpt") {
                ++out_.pairs_skipped;
                continue;
            }
            conv_.turns.push_back({int(i / 2 + 1), tokens(turns_[i].chars, lim_.max_context_tokens),
                                   tokens(turns_[i + 1].chars, lim_.max_generation_tokens)});
        }
        ++out_.elements_read;
        if (conv_.turns.empty()) {
            ++out_.without_pairs;
            return;
        }
        out_.turns += conv_.turns.size();
        out_.conversations.push_back(std::move(conv_));
    }

    struct RawTurn {
        std::string from;
        int64_t chars;
    };
    const std::string& file_;
    LineCountingFile& in_;
    int64_t max_;
    ShareGptLimits lim_;
    ShareGptDataset& out_;
    std::vector<Frame> stack_;
    std::string key_, from_;
    ShareGptConversation conv_;
    std::vector<RawTurn> turns_;
    size_t conv_line_ = 0, turn_line_ = 0;
    int64_t chars_ = 0;
    bool has_turns_ = false, has_from_ = false, has_value_ = false, stopped_ = false, saw_top_ = false;
};

}  // namespace

int64_t estimate_tokens(const std::string& text, int64_t chars_per_token) {
    return std::max<int64_t>(1, code_points(text) / std::max<int64_t>(1, chars_per_token));
}

ShareGptDataset load_sharegpt(const std::string& path, int64_t max_conversations, const ShareGptLimits& limits) {
    LineCountingFile in;
    in.f = open_input(path);
    struct Closer {
        std::FILE* f;
        ~Closer() { std::fclose(f); }
    } closer{in.f};
    ShareGptDataset ds;
    Handler h(path, in, max_conversations, limits, ds);
    CharIter first{&in}, last{};
    const bool ok = nlohmann::json::sax_parse(first, last, &h);
    if (std::ferror(in.f)) throw Error(path + ": read error");
    if (!ok && !h.stopped_early()) throw Error(path + ": not valid JSON");
    if (!h.saw_top()) throw Error(path + ": empty file (expected a JSON list of conversations)");
    if (ds.conversations.empty())
        throw Error(path + ": no conversation with a human → gpt turn pair in the first " +
                    std::to_string(ds.elements_read) + " elements (nothing to replay)");
    return ds;
}

}  // namespace kvio::serving
