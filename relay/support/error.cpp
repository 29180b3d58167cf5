// The relay's error kinds by name, and the exception a `.value()` on a failed result throws (see error.hpp).
#include "relay/support/error.hpp"

#include "contracts/name_table.hpp"

#include <stdexcept>

namespace maka_eval::relay {

namespace {

constexpr contracts::name_table<relay_errc, 5> names = {{
    {relay_errc::usage, "usage"},
    {relay_errc::environment, "environment"},
    {relay_errc::engine, "engine"},
    {relay_errc::bridge, "bridge"},
    {relay_errc::not_found, "not found"},
}};

} // namespace

std::string_view to_string(relay_errc value) {
    return contracts::name_in(names, value, "environment");
}

void throw_exception_from_error(const relay_error& e, const boost::source_location&) {
    throw std::runtime_error(e.message);
}

} // namespace maka_eval::relay
