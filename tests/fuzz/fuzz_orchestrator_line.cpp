// Fuzz the orchestrator line parser and `execute` validation: a validated request, serialized and parsed
// again, must validate to the same request.
#include "contracts/limits.hpp"
#include "contracts/orchestrator_messages.hpp"
#include "contracts/wire_json.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace maka_eval::contracts;
    const std::string_view line(reinterpret_cast<const char*>(data), size);
    auto object = parse_object(line, control_line_limit_bytes);
    if (!object) {
        return 0;
    }
    (void)require_message(*object, "t", "execute");
    const auto request = validate_execute(*object);
    if (!request) {
        return 0;
    }
    const auto again = parse_object(serialize_execute("t", *request), control_line_limit_bytes);
    if (!again) {
        std::abort();
    }
    const auto reparsed = validate_execute(*again);
    if (!reparsed || reparsed->argv != request->argv || reparsed->environment != request->environment ||
        reparsed->credentials != request->credentials || reparsed->result_token != request->result_token ||
        reparsed->capture_stdout != request->capture_stdout) {
        std::abort();
    }
    (void)check_ready(*object, "t");
    (void)check_executed(*object, "t");
    return 0;
}
