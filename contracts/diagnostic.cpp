// Category names and the two diagnostic shapes (see diagnostic.hpp).
#include "contracts/diagnostic.hpp"

#include "contracts/digest.hpp"

#include <array>
#include <utility>

namespace maka_eval::contracts {
namespace {

constexpr std::array<std::pair<category, std::string_view>, 7> names = {{
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
    for (const auto& [kind, name] : names) {
        if (kind == value) {
            return name;
        }
    }
    return "none";
}

std::optional<category> category_from_string(std::string_view text) {
    for (const auto& [kind, name] : names) {
        if (name == text) {
            return kind;
        }
    }
    return std::nullopt;
}

diagnostic diagnostic::evidence(category kind, std::uint64_t bytes, std::string sha256) {
    return diagnostic{kind, bytes, std::move(sha256)};
}

diagnostic diagnostic::over(category kind, std::string_view bytes) {
    return evidence(kind, bytes.size(), sha256_hex(bytes));
}

} // namespace maka_eval::contracts
