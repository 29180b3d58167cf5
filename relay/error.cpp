// The relay's error kinds by name, and the exception a `.value()` on a failed result throws (see error.hpp).
#include "relay/error.hpp"

#include <stdexcept>

namespace maka_eval::relay {

std::string_view to_string(relay_errc value) {
    switch (value) {
    case relay_errc::usage:
        return "usage";
    case relay_errc::environment:
        return "environment";
    case relay_errc::engine:
        return "engine";
    case relay_errc::bridge:
        return "bridge";
    }
    return "environment";
}

void throw_exception_from_error(const relay_error& e, const boost::source_location&) {
    throw std::runtime_error(e.message);
}

} // namespace maka_eval::relay
