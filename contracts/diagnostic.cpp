// Category names and the two diagnostic shapes (see diagnostic.hpp).
#include "contracts/diagnostic.hpp"

#include "contracts/digest.hpp"
#include "contracts/name_table.hpp"
#include "contracts/result_frame.hpp"

#include <cstdint>
#include <utility>

#include <boost/json/object.hpp>

namespace maka_eval::contracts {
namespace {

constexpr name_table<category, 7> names = {{
    {category::none, "none"},
    {category::unstructured_output, "unstructured-output"},
    {category::result_frame_missing, "result-frame-missing"},
    {category::result_frame_invalid, "result-frame-invalid"},
    {category::result_frame_ambiguous, "result-frame-ambiguous"},
    {category::result_frame_oversize, "result-frame-oversize"},
    {category::execution_scope_unavailable, "execution-scope-unavailable"},
}};

} // namespace

std::string_view to_string(category value) {
    return name_in(names, value, "none");
}

std::optional<category> category_from_string(std::string_view text) {
    return value_in(names, text);
}

diagnostic diagnostic::evidence(category kind, std::uint64_t bytes, std::string sha256) {
    return diagnostic{kind, bytes, std::move(sha256)};
}

std::optional<diagnostic> diagnostic_from_json(const boost::json::object& object) {
    const auto* kind_field = object.if_contains("category");
    if (kind_field == nullptr || !kind_field->is_string()) {
        return std::nullopt;
    }
    const auto kind = category_from_string(kind_field->get_string());
    if (!kind) {
        return std::nullopt;
    }
    if (*kind == category::none) {
        return object.size() == 1 ? std::optional(diagnostic::none()) : std::nullopt;
    }
    const auto* bytes = object.if_contains("bytes");
    const auto* digest = object.if_contains("sha256");
    if (object.size() != 3 || bytes == nullptr || digest == nullptr || !digest->is_string()) {
        return std::nullopt;
    }
    // The orchestrator is JavaScript: a count beyond 2^53 - 1 would not survive its number type.
    constexpr std::int64_t max_safe_integer = (std::int64_t{1} << 53) - 1;
    const auto* count = bytes->if_int64();
    const auto& hex = digest->get_string();
    if (count == nullptr || *count < 0 || *count > max_safe_integer || !is_lower_hex(hex, 64)) {
        return std::nullopt;
    }
    return diagnostic::evidence(*kind, static_cast<std::uint64_t>(*count), std::string(hex));
}

diagnostic diagnostic::over(category kind, std::string_view bytes) {
    return evidence(kind, bytes.size(), sha256_hex(bytes));
}

} // namespace maka_eval::contracts
