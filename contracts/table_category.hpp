// An error category whose messages are a name table (name_table.hpp): one template instead of a
// hand-written `error_category` with a switch per error enum.
#pragma once

#include "contracts/name_table.hpp"

#include <cstddef>
#include <string>
#include <string_view>

#include <boost/system/error_category.hpp>

namespace maka_eval::contracts {

template <class Enum, std::size_t N>
class table_category final : public boost::system::error_category {
  public:
    // `name` and `fallback` must outlive the category (string literals).
    constexpr table_category(const char* name, const name_table<Enum, N>& messages, std::string_view fallback)
        : name_(name), messages_(messages), fallback_(fallback) {}
    [[nodiscard]] const char* name() const noexcept override { return name_; }
    [[nodiscard]] std::string message(int value) const override {
        return std::string(name_in(messages_, static_cast<Enum>(value), fallback_));
    }

  private:
    const char* name_;
    name_table<Enum, N> messages_;
    std::string_view fallback_;
};

} // namespace maka_eval::contracts
