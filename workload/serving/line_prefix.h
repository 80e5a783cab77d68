// An ostream that writes whole lines to another stream, each prefixed ("client 2: "), so that the progress lines
// of many clients sharing one stderr stay readable. Thread-safe per line.
#pragma once
#include <mutex>
#include <ostream>
#include <streambuf>
#include <string>

namespace kvio::serving {

class LinePrefixStream : public std::ostream {
public:
    LinePrefixStream(std::ostream& out, std::string prefix) : std::ostream(&buf_), buf_(out, std::move(prefix)) {}

private:
    class Buf : public std::streambuf {
    public:
        Buf(std::ostream& out, std::string prefix) : out_(out), prefix_(std::move(prefix)) {}
        ~Buf() override {
            if (!line_.empty()) out_ << prefix_ << line_ << "\n" << std::flush;
        }

    protected:
        int overflow(int ch) override {
            if (ch == traits_type::eof()) return 0;
            std::lock_guard lk(mu_);
            line_ += char(ch);
            if (ch == '\n') {
                out_ << prefix_ << line_ << std::flush;
                line_.clear();
            }
            return ch;
        }

    private:
        std::ostream& out_;
        std::string prefix_, line_;
        std::mutex mu_;
    };
    Buf buf_;
};

}  // namespace kvio::serving
