// Fuzz the relay's two line protocols besides the orchestrator's: the relay ⇄ helper session and the relay ⇄
// adapter bridge. Anything accepted serializes to a line that parses to a message serializing identically
// (a fixed point after one round); anything refused says why. (One target for both: each costs a fixed
// share of the suite's time.)
#include "contracts/bridge_messages.hpp"
#include "contracts/session_messages.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

using namespace maka_eval::contracts;

void session_line(std::string_view line) {
    const auto message = parse_session_message(line);
    if (!message) {
        if (message.error().message().empty()) {
            std::abort();
        }
        return;
    }
    const std::string once = serialize(*message);
    const auto again = parse_session_message(once);
    if (!again || serialize(*again) != once) {
        std::abort();
    }
}

void bridge_line(std::string_view line) {
    if (const auto request = parse_bridge_request(line); !request) {
        if (request.error().message.empty()) {
            std::abort();
        }
    } else {
        const std::string once = serialize_bridge_request(request->first, request->second);
        const auto again = parse_bridge_request(once);
        if (!again || serialize_bridge_request(again->first, again->second) != once) {
            std::abort();
        }
    }
    if (const auto reply = parse_bridge_reply(line, std::size_t{1} << 20); reply) {
        const std::string once = serialize_bridge_reply(*reply);
        const auto again = parse_bridge_reply(once, std::size_t{1} << 20);
        if (!again || serialize_bridge_reply(*again) != once) {
            std::abort();
        }
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view line(reinterpret_cast<const char*>(data), size);
    session_line(line);
    bridge_line(line);
    return 0;
}
