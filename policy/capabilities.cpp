// Capability parsing (see capabilities.hpp).
#include "policy/capabilities.hpp"

namespace maka_eval::policy {
namespace {

bool is_space(char c) {
    return c == ' ' || (c >= '\t' && c <= '\r');
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && is_space(text.front())) {
        text.remove_prefix(1);
    }
    while (!text.empty() && is_space(text.back())) {
        text.remove_suffix(1);
    }
    return text;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

} // namespace

capability_fields parse_status(std::string_view status) {
    capability_fields out;
    while (!status.empty()) {
        const auto end = status.find('\n');
        const std::string_view line = status.substr(0, end);
        status.remove_prefix(end == std::string_view::npos ? status.size() : end + 1);
        const auto colon = line.find(':');
        if (!line.starts_with("Cap") || colon == std::string_view::npos) {
            continue;
        }
        out.emplace_back(line.substr(0, colon), trim(line.substr(colon + 1)));
    }
    return out;
}

std::optional<std::uint64_t> parse_hex(std::string_view text) {
    text = trim(text);
    if (text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        text.remove_prefix(2);
        // Python allows one underscore right after the base prefix.
        if (!text.empty() && text.front() == '_') {
            text.remove_prefix(1);
        }
    }
    std::uint64_t value = 0;
    bool digit_seen = false;
    bool after_underscore = false;
    for (const char c : text) {
        if (c == '_') {
            if (!digit_seen || after_underscore) {
                return std::nullopt;
            }
            after_underscore = true;
            continue;
        }
        const int digit = hex_digit(c);
        if (digit < 0) {
            return std::nullopt;
        }
        // Bits past 64 cannot name a capability; keep the low 64, which are the ones the gate reads.
        value = (value << 4U) | static_cast<std::uint64_t>(digit);
        digit_seen = true;
        after_underscore = false;
    }
    if (!digit_seen || after_underscore) {
        return std::nullopt;
    }
    return value;
}

std::vector<std::string> bypass_capabilities(std::uint64_t granted) {
    std::vector<std::string> held;
    if ((granted & cap_net_admin) != 0) {
        held.emplace_back("NET_ADMIN");
    }
    if ((granted & cap_net_raw) != 0) {
        held.emplace_back("NET_RAW");
    }
    return held;
}

} // namespace maka_eval::policy
