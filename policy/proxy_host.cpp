// Proxy host and IPv4 validation (see proxy_host.hpp).
#include "policy/proxy_host.hpp"

#include <algorithm>

namespace maka_eval::policy {

bool is_valid_proxy_host(std::string_view host) {
    if (host.empty() || host.front() == '.' || host.back() == '.' ||
        host.find("..") != std::string_view::npos) {
        return false;
    }
    return std::all_of(host.begin(), host.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
               c == '-';
    });
}

bool is_valid_ipv4(std::string_view ip) {
    int octets = 0;
    while (true) {
        const auto dot = ip.find('.');
        const auto part = ip.substr(0, dot);
        if (part.empty() || part.size() > 3 || (part.size() > 1 && part.front() == '0') ||
            !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
            return false;
        }
        int value = 0;
        for (const char c : part) {
            value = value * 10 + (c - '0');
        }
        if (value > 255) {
            return false;
        }
        ++octets;
        if (dot == std::string_view::npos) {
            break;
        }
        ip.remove_prefix(dot + 1);
    }
    return octets == 4;
}

std::optional<std::string> published_ipv4(std::string_view file_content) {
    std::string ip;
    std::copy_if(file_content.begin(), file_content.end(), std::back_inserter(ip),
                 [](char c) { return c != ' ' && c != '\t' && c != '\r' && c != '\n'; });
    if (!is_valid_ipv4(ip)) {
        return std::nullopt;
    }
    return ip;
}

} // namespace maka_eval::policy
