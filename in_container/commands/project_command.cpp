// `maka-eval-helper project --result-token TOKEN [--no-capture]`: what the relay would report for a carrier.
//
// Reads raw bytes on stdin (e.g. a saved /logs/artifacts/maka-subject.stdout.txt) in bounded memory and
// prints
// `{"stdout":…,"diagnostic":{…}}` exactly as `executed` would carry them. Exit 0 whenever the projection was
// computed, whatever its category; 2 for usage errors.
#include "contracts/orchestrator_messages.hpp"
#include "contracts/result_frame.hpp"
#include "contracts/wire_json.hpp"
#include "in_container/base/io.hpp"
#include "in_container/commands/cli.hpp"
#include "in_container/commands/command_options.hpp"

#include <cerrno>
#include <unistd.h>

namespace maka_eval::in_container {

int project_command(std::span<const std::string_view> args) {
    std::string token;
    bool no_capture = false;
    command_options options("project",
                            "usage: maka-eval-helper project --result-token TOKEN [--no-capture] < CARRIER");
    if (!options.text("--result-token", token).flag("--no-capture", no_capture).parse(args)) {
        return exit_usage;
    }
    const bool capture = !no_capture;
    if (!contracts::is_result_token(token)) {
        log_line("project: --result-token must be 32 lowercase hex characters");
        return exit_usage;
    }
    contracts::carrier carrier;
    char buffer[65536];
    while (true) {
        const ssize_t got = posix::read_retry(STDIN_FILENO, buffer, sizeof buffer);
        if (got < 0) {
            log_line("project: stdin could not be read");
            return exit_failed;
        }
        if (got == 0) {
            break;
        }
        carrier.feed({buffer, static_cast<std::size_t>(got)});
    }
    carrier.finish();
    const auto projection = contracts::project(carrier, token, capture);
    const boost::json::object out{{"stdout", projection.stdout_text},
                                  {"diagnostic", contracts::to_json(projection.diagnostic)}};
    return write_all(STDOUT_FILENO, contracts::to_wire(out) + "\n") ? exit_ok : exit_failed;
}

} // namespace maka_eval::in_container
