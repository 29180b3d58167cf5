// The `diagnostic` object of an `executed` message.
//
// The orchestrator accepts exactly two shapes: `{"category":"none"}` alone, or exactly category, bytes and
// sha256 with one of six categories. Keeping it a value type with one constructor per shape means no other
// shape can be built.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/fwd.hpp>

namespace maka_eval::contracts {

enum class category {
    none,
    unstructured_output,
    result_frame_missing,
    result_frame_invalid,
    result_frame_ambiguous,
    result_frame_oversize,
    execution_scope_unavailable,
};

[[nodiscard]] std::string_view to_string(category value);
[[nodiscard]] std::optional<category> category_from_string(std::string_view text);

struct diagnostic {
    category kind = category::none;
    std::uint64_t bytes = 0; // only for kind != none
    std::string sha256;      // lowercase hex; only for kind != none

    [[nodiscard]] static diagnostic none() { return {}; }
    // The evidence form: a size and a hash, never content.
    [[nodiscard]] static diagnostic evidence(category kind, std::uint64_t bytes, std::string sha256);
    // The evidence form computed over `bytes` itself.
    [[nodiscard]] static diagnostic over(category kind, std::string_view bytes);

    friend bool operator==(const diagnostic&, const diagnostic&) = default;
};

// Reads one of the two shapes back from JSON, as strictly as the orchestrator does: a known category, exactly
// the fields of its shape, a byte count within JSON's safe integers and 64 lowercase hex digits. Any other
// object is nullopt. Both wires (`executed` and the helper's report) use this one reader.
[[nodiscard]] std::optional<diagnostic> diagnostic_from_json(const boost::json::object& object);

} // namespace maka_eval::contracts
