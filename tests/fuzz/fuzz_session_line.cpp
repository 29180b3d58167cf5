// Fuzz the relay ⇄ helper session parser: anything accepted serializes to a line that parses to a message
// serializing identically (a fixed point after one round).
#include "contracts/session_messages.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace maka_eval::contracts;
    const auto message = parse_session_message({reinterpret_cast<const char*>(data), size});
    if (!message) {
        if (message.error().message().empty()) {
            std::abort();
        }
        return 0;
    }
    const std::string once = serialize(*message);
    const auto again = parse_session_message(once);
    if (!again || serialize(*again) != once) {
        std::abort();
    }
    return 0;
}
