#include "cli/argparse_compat.h"

#include <algorithm>
#include <cctype>
#include <regex>

namespace kvio::cli {
namespace {

// Python's int(): optional sign, digits with single underscores between them, surrounding whitespace.
bool python_int(const std::string& v) {
    static const std::regex re(R"(\s*[+-]?[0-9](_?[0-9])*\s*)");
    return std::regex_match(v, re);
}

// Python's float(): a decimal or exponent literal (underscores between digits), inf/infinity/nan, any case.
bool python_float(const std::string& v) {
    static const std::regex re(
        R"(\s*[+-]?((([0-9](_?[0-9])*)?\.?[0-9](_?[0-9])*|[0-9](_?[0-9])*\.)([eE][+-]?[0-9](_?[0-9])*)?|inf|infinity|nan)\s*)",
        std::regex::icase);
    return std::regex_match(v, re);
}

// A Python int literal (sign and digits, as python_int left it) without its leading zeros: int('042') is 42 in
// Python, while CLI11 reads a leading 0 as octal (042 would be 34, 09 an error).
std::string decimal_digits(const std::string& v) {
    const size_t digits = (!v.empty() && (v[0] == '+' || v[0] == '-')) ? 1 : 0;
    size_t first = digits;
    while (first + 1 < v.size() && v[first] == '0') ++first;
    return v.substr(0, digits) + v.substr(first);
}

// argparse's test for "looks like a negative number" (then it is a value, not an option).
bool negative_number(const std::string& a) {
    static const std::regex re(R"(-\d+$|-\d*\.\d+$)");
    return std::regex_match(a, re);
}

std::string quoted_choices(const std::vector<std::string>& ch) {
    std::string s;
    for (const auto& c : ch) s += (s.empty() ? "'" : ", '") + c + "'";
    return s;
}

}  // namespace

std::vector<std::string> argparse_check(const std::vector<std::string>& args,
                                        const std::vector<ArgparseOption>& options) {
    std::vector<ArgparseOption> all = options;
    all.push_back({"--help", "flag", {}});
    std::vector<std::string> out, unknown;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--") {  // the rest are positionals, and simulate takes none
            for (++i; i < args.size(); ++i) unknown.push_back(args[i]);
            break;
        }
        if (a == "-h" || a.rfind("--", 0) != 0) {
            if (a == "-h")
                out.push_back(a);
            else
                unknown.push_back(a), out.push_back(a);  // CLI11 never sees it: argparse_check throws below
            continue;
        }
        const size_t eq = a.find('=');
        const std::string name = a.substr(0, eq);
        const ArgparseOption* o = nullptr;
        std::vector<const ArgparseOption*> prefixed;
        for (const auto& c : all) {
            if (c.name == name) {
                o = &c;
                break;
            }
            if (!c.exact && c.name.rfind(name, 0) == 0) prefixed.push_back(&c);
        }
        if (!o && prefixed.size() > 1) {
            std::string m = "ambiguous option: " + name + " could match ";
            for (size_t k = 0; k < prefixed.size(); ++k) m += (k ? ", " : "") + prefixed[k]->name;
            throw ArgparseError(m);
        }
        if (!o && prefixed.size() == 1) o = prefixed[0];
        if (!o) {
            unknown.push_back(a);
            continue;
        }
        const std::string arg = "argument " + o->name + ": ";
        if (o->type == "flag") {
            if (eq != std::string::npos)
                throw ArgparseError(arg + "ignored explicit argument '" + a.substr(eq + 1) + "'");
            out.push_back(o->name);
            continue;
        }
        std::string v;
        if (eq != std::string::npos) {
            v = a.substr(eq + 1);
        } else {
            if (i + 1 >= args.size() ||
                (args[i + 1].rfind('-', 0) == 0 && args[i + 1] != "-" && !negative_number(args[i + 1])))
                throw ArgparseError(arg + "expected one argument");
            v = args[++i];
        }
        if (o->type == "int" && !python_int(v)) throw ArgparseError(arg + "invalid int value: '" + v + "'");
        if (o->type == "float" && !python_float(v)) throw ArgparseError(arg + "invalid float value: '" + v + "'");
        if (o->type == "choice" && std::find(o->choices.begin(), o->choices.end(), v) == o->choices.end())
            throw ArgparseError(arg + "invalid choice: '" + v + "' (choose from " + quoted_choices(o->choices) + ")");
        if (o->type == "int" || o->type == "float")  // what Python's int()/float() ignore, CLI11 refuses
            v.erase(std::remove_if(v.begin(), v.end(),
                                   [](char c) { return c == '_' || std::isspace(static_cast<unsigned char>(c)); }),
                    v.end());
        if (o->type == "int") v = decimal_digits(v);
        out.push_back(o->name + "=" + v);  // one token: a value starting with '-' stays a value for CLI11 too
    }
    if (!unknown.empty()) {
        std::string m = "unrecognized arguments:";
        std::string full;  // the kvio flags an unknown option abbreviates
        for (const auto& u : unknown) {
            m += " " + u;
            const std::string name = u.substr(0, u.find('='));
            for (const auto& c : all)
                if (c.exact && name.size() > 2 && name.rfind("--", 0) == 0 && c.name.rfind(name, 0) == 0)
                    full += (full.empty() ? "" : ", ") + c.name;
        }
        if (!full.empty()) m += " (kvio's own flags take their full name: " + full + ")";
        throw ArgparseError(m);
    }
    return out;
}

std::string argparse_error_text(const std::string& prog, const std::string& message) {
    return "usage: " + prog + " [-h] [options]   (" + prog + " --help lists them)\n" + prog + ": error: " + message +
           "\n";
}

}  // namespace kvio::cli
