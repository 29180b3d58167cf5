// maka-eval-helper's subcommand table and usage (see cli.hpp).
#include "in_container/commands/cli.hpp"

#include "contracts/defaults.hpp"
#include "in_container/base/io.hpp"

#include <array>
#include <string>
#include <unistd.h>
#include <utility>

#ifndef MAKA_EVAL_VERSION
#define MAKA_EVAL_VERSION "0.0.0"
#endif

namespace maka_eval::in_container {
namespace {

namespace defaults = contracts::defaults;

constexpr std::string_view usage = R"(usage: maka-eval-helper COMMAND [OPTIONS]

The in-container side of maka-eval-relay: a static supervisor that needs nothing from the image.

commands:
  session [--user U] [--heartbeat-ms N] [--keep-leftovers]
                                        relay session: NDJSON requests on stdin, reports on stdout;
                                        as root, the subject runs as U (docker exec -u syntax); a
                                        heartbeat every N ms while it runs ({heartbeat}, as `hello` says);
                                        what earlier trials left running is stopped before `hello`
                                        unless --keep-leftovers
  run --request FILE                    one supervised run from a 0600 request file (read, then unlinked)
  cancel --scope FILE [--grace-ms N] [--run-request PATH]
                                        have the supervisor of a scope settle it within N ms
                                        ({grace}); exit 0 settled, 3 not running, 1 not settled
                                        in time; with --run-request,
                                        the bridge's supervisor is found by its command line
                                        (`run --request PATH`), which no subject can rewrite
  adopt --request FILE --uid U --gid G  (as root) give a root-uploaded 0600 request file to the
                                        subject's user, so `run` can read it
  install --from F --size N --directory D --name H [-- COMMAND...]
                                        (as root; the end of a cold install) move F, the binary
                                        running, whole, to D/H with the maka-eval-helper link
                                        beside it, then run COMMAND
  probe                                 cwd, ids, capability sets and network namespace as JSON
  pin-proxy --host H [--ipv4-file F] [--hosts-file F]
                                        pin H to the proxy's published IPv4 in /etc/hosts (in place)
  frame [PAYLOAD|-]                     print a result frame for $MAKA_EVAL_RESULT_TOKEN
  project --result-token T [--no-capture]
                                        project a carrier on stdin as the relay would report it
  --version                             print the version
  --help                                print this text
)";

struct command {
    std::string_view name;
    int (*run)(std::span<const std::string_view>);
};

constexpr std::array commands = {
    command{"session", &session_command},     command{"run", &run_command},
    command{"cancel", &cancel_command},       command{"probe", &probe_command},
    command{"pin-proxy", &pin_proxy_command}, command{"frame", &frame_command},
    command{"project", &project_command},     command{"adopt", &adopt_command},
    command{"install", &install_command},
};

// The usage with the defaults filled in from contracts/defaults.hpp, the one place they are set.
std::string usage_text() {
    std::string text(usage);
    for (const auto& [mark, value] : {std::pair{std::string_view("{heartbeat}"), defaults::heartbeat_ms},
                                      std::pair{std::string_view("{grace}"), defaults::cancel_grace_ms}}) {
        text.replace(text.find(mark), mark.size(), std::to_string(value));
    }
    return text;
}

} // namespace

int run_cli(std::span<const std::string_view> args) {
    if (args.empty()) {
        (void)write_all(STDERR_FILENO, usage_text());
        return exit_usage;
    }
    if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        return write_all(STDOUT_FILENO, usage_text()) ? exit_ok : exit_failed;
    }
    if (args[0] == "--version") {
        return write_all(STDOUT_FILENO, std::string("maka-eval-helper ") + MAKA_EVAL_VERSION + "\n")
                   ? exit_ok
                   : exit_failed;
    }
    for (const auto& entry : commands) {
        if (entry.name == args[0]) {
            return entry.run(args.subspan(1));
        }
    }
    log_line("unknown command '" + std::string(args[0]) + "' (see --help)");
    return exit_usage;
}

} // namespace maka_eval::in_container
