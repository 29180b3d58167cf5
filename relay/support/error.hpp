// The relay's one error type: what failed, in a message a person can act on, and which kind of failure it is.
//
// Inside the relay every fallible step returns boost::system::result<T, relay_error>; the kind decides how
// the process ends (a usage error is exit 2 with the usage hint, the others end the trial as an environment
// failure), the message is what the log and the outcome say. Exceptions appear only at `main` and at a
// coroutine's completion handler.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include <boost/assert/source_location.hpp>

namespace maka_eval::relay {

enum class relay_errc {
    usage = 1,   // the command line or its inherited inputs (fds, files) are wrong
    environment, // the container or trial runner's environment could not do what was asked
    engine,      // the Docker engine refused or could not be reached
    bridge,      // the trial runner's adapter broke the bridge protocol
    not_found,   // the engine answered that what was asked for does not exist
};
[[nodiscard]] std::string_view to_string(relay_errc value);

struct relay_error {
    relay_error() = default;
    relay_error(relay_errc kind, std::string text) : code(kind), message(std::move(text)) {}
    relay_errc code = relay_errc::environment;
    std::string message;
};
[[noreturn]] void throw_exception_from_error(const relay_error& e, const boost::source_location& location);

} // namespace maka_eval::relay
