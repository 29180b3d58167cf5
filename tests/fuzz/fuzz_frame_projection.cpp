// Fuzz the result-frame projection: never crashes, always yields a diagnostic of the orchestrator's shape,
// a UTF-8 stdout, and the same answer whether the carrier arrives whole or in two pieces.
#include "contracts/result_frame.hpp"
#include "contracts/utf8.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

using namespace maka_eval::contracts;

bool well_formed(const diagnostic& d) {
    if (d.kind == category::none) {
        return d.bytes == 0 && d.sha256.empty();
    }
    if (d.sha256.size() != 64) {
        return false;
    }
    for (const char c : d.sha256) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return false;
        }
    }
    return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) {
        return 0;
    }
    // First byte: capture policy and split point; the token is fixed so frames can be found by the fuzzer.
    const bool capture = (data[0] & 1U) != 0;
    const std::string_view carrier_bytes(reinterpret_cast<const char*>(data + 1), size - 1);
    constexpr std::string_view token = "0123456789abcdef0123456789abcdef";
    const auto whole = project(carrier_bytes, token, capture);
    if (!well_formed(whole.diagnostic) || !is_valid_utf8(whole.stdout_text) ||
        whole.stdout_text.size() > payload_limit_bytes) {
        std::abort();
    }
    if (!whole.stdout_text.empty() && whole.diagnostic.kind != category::none &&
        whole.diagnostic.kind != category::unstructured_output) {
        std::abort(); // a payload is only ever reported with a valid frame
    }
    carrier split;
    const std::size_t cut = carrier_bytes.size() * data[0] / 256U;
    split.feed(carrier_bytes.substr(0, cut));
    split.feed(carrier_bytes.substr(cut));
    split.finish();
    const auto streamed = project(split, token, capture);
    if (streamed.stdout_text != whole.stdout_text || !(streamed.diagnostic == whole.diagnostic)) {
        std::abort();
    }
    return 0;
}
