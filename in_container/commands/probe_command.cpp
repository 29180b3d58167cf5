// `maka-eval-helper probe`: the self-probe as one JSON object (the `hello` message).
#include "in_container/base/io.hpp"
#include "in_container/commands/cli.hpp"
#include "in_container/commands/command_options.hpp"
#include "in_container/process/probe.hpp"

#include <unistd.h>

namespace maka_eval::in_container {

int probe_command(std::span<const std::string_view> args) {
    if (!command_options("probe", "usage: maka-eval-helper probe").parse(args)) {
        return exit_usage;
    }
    return write_all(STDOUT_FILENO, contracts::serialize(probe_self())) ? exit_ok : exit_failed;
}

} // namespace maka_eval::in_container
