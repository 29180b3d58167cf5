// RFC 3339 UTC times (see utc_time.hpp).
#include "relay/support/utc_time.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace maka_eval::relay {
namespace {

std::string format(bool with_ms) {
    const auto now = std::chrono::system_clock::now();
    const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
    std::tm parts{};
    (void)::gmtime_r(&seconds, &parts);
    char text[40];
    if (std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &parts) == 0) {
        return "?";
    }
    std::string out(text);
    if (with_ms) {
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
        char fraction[8];
        (void)std::snprintf(fraction, sizeof fraction, ".%03lld", static_cast<long long>(ms % 1000));
        out += fraction;
    }
    return out + "Z";
}

} // namespace

std::string utc_now() {
    return format(false);
}

std::string rfc3339_now() {
    return format(true);
}

} // namespace maka_eval::relay
