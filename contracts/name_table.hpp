// Wire names of enums: one table per enum, read in both directions.
//
// Every enum that travels as text (diagnostic categories, helper faults) keeps its names in one
// constexpr table next to the enum's functions, so a name added on one side cannot be missing on the other.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace maka_eval::contracts {

template <class Enum, std::size_t N>
using name_table = std::array<std::pair<Enum, std::string_view>, N>;

// The name of `value`; `fallback` for a value outside the table.
template <class Enum, std::size_t N>
[[nodiscard]] constexpr std::string_view name_in(const name_table<Enum, N>& table, Enum value,
                                                 std::string_view fallback) {
    for (const auto& [entry, name] : table) {
        if (entry == value) {
            return name;
        }
    }
    return fallback;
}

// The value named `text` exactly; nullopt for any other text.
template <class Enum, std::size_t N>
[[nodiscard]] constexpr std::optional<Enum> value_in(const name_table<Enum, N>& table,
                                                     std::string_view text) {
    for (const auto& [entry, name] : table) {
        if (name == text) {
            return entry;
        }
    }
    return std::nullopt;
}

} // namespace maka_eval::contracts
