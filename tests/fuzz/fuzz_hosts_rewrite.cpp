// Fuzz the /etc/hosts rewrite: the pin is the last line, no other non-comment line names the host as an
// alias, and pinning twice changes nothing.
#include "policy/hosts_file.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using maka_eval::policy::rewrite_hosts;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    constexpr std::string_view host = "maka-eval-mitmproxy";
    constexpr std::string_view ip = "172.18.0.2";
    const std::string once = rewrite_hosts(text, host, ip);
    if (!once.ends_with("\n172.18.0.2 maka-eval-mitmproxy\n") && once != "172.18.0.2 maka-eval-mitmproxy\n") {
        std::abort();
    }
    if (rewrite_hosts(once, host, ip) != once) {
        std::abort();
    }
    if (once.size() > text.size() + ip.size() + host.size() + 3 + static_cast<std::size_t>(1)) {
        std::abort(); // only the pin (and at most one missing final newline) is ever added
    }
    return 0;
}
