// The /etc/hosts rewrite (see hosts_file.hpp).
#include "policy/hosts_file.hpp"

namespace maka_eval::policy {
namespace {

bool is_blank(char c) {
    return c == ' ' || c == '\t';
}

// awk's /^[[:space:]]*#/
bool is_comment(std::string_view line) {
    for (const char c : line) {
        if (c == '#') {
            return true;
        }
        if (!(c == ' ' || (c >= '\t' && c <= '\r'))) {
            return false;
        }
    }
    return false;
}

bool names_host(std::string_view line, std::string_view host) {
    int field = 0;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && is_blank(line[i])) {
            ++i;
        }
        if (i == line.size()) {
            break;
        }
        const std::size_t start = i;
        while (i < line.size() && !is_blank(line[i])) {
            ++i;
        }
        if (++field >= 2 && line.substr(start, i - start) == host) {
            return true;
        }
    }
    return false;
}

} // namespace

std::string rewrite_hosts(std::string_view old_text, std::string_view host, std::string_view ip) {
    std::string out;
    out.reserve(old_text.size() + host.size() + ip.size() + 2);
    while (!old_text.empty()) {
        const auto end = old_text.find('\n');
        const std::string_view line = old_text.substr(0, end);
        old_text.remove_prefix(end == std::string_view::npos ? old_text.size() : end + 1);
        if (is_comment(line) || !names_host(line, host)) {
            // awk's print ends every record with a newline, including a last one that had none.
            out.append(line).push_back('\n');
        }
    }
    out.append(ip).append(" ").append(host).push_back('\n');
    return out;
}

} // namespace maka_eval::policy
