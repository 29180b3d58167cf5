// maka-eval-relay's commands (see cli.hpp). Each builds one io_context, runs the trial on this thread and
// turns its outcome into an exit code; exceptions stop here.
#include "relay/cli/commands.hpp"

#include "contracts/wire_json.hpp"
#include "relay/backends/factory.hpp"
#include "relay/cli/attest_commands.hpp"
#include "relay/cli/loopback_orchestrator.hpp"
#include "relay/cli/options.hpp"
#include "relay/cli/raw_terminal.hpp"
#include "relay/cli/run_transcript.hpp"
#include "relay/engine/docker_api.hpp"
#include "relay/support/environment.hpp"
#include "relay/support/exit_codes.hpp"
#include "relay/support/random_hex.hpp"
#include "relay/support/relay_clock.hpp"
#include "relay/trial/follow_sink.hpp"
#include "relay/trial/trial.hpp"

#include <chrono>
#include <csignal>
#include <cstdint>
#include <fcntl.h>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>

#ifndef MAKA_EVAL_VERSION
#define MAKA_EVAL_VERSION "0.0.0"
#endif

namespace maka_eval::relay {

using namespace boost::asio::experimental::awaitable_operators;
namespace {

int usage_failure(const std::string& message) {
    std::cerr << "maka-eval-relay: " << message << "\n(see maka-eval-relay --help)\n";
    return exit_usage;
}

// Runs the trial (and, for `run`, the loopback orchestrator beside it) to the end.
trial_outcome drive(boost::asio::io_context& context, const trial_config& config, backend& env,
                    phase_log& log) {
    trial_outcome result{exit_internal, {}, std::nullopt, {}, {}, {}};
    boost::asio::co_spawn(context, run_trial(config, env, log),
                          [&](const std::exception_ptr& error, trial_outcome outcome) {
                              // Nothing may keep the relay past the trial (and its teardown budget).
                              env.abandon_pending();
                              if (error) {
                                  log.error("internal error: " + exception_text(error));
                                  return;
                              }
                              result = std::move(outcome); // its error or cancellation is logged by the trial
                          });
    context.run();
    return result;
}

// The backend the options name, or nullptr after saying why it cannot be had.
std::unique_ptr<backend> backend_for(const common_options& options, boost::asio::io_context& context) {
    auto env = make_backend(backend_options_of(options), context.get_executor());
    if (!env) {
        std::cerr << "maka-eval-relay: " << env.error().message << "\n";
        return nullptr;
    }
    return std::move(*env);
}

// --sign-key: the signer, or nullopt after saying why the key cannot be used (a usage error: no trial ran).
std::optional<std::optional<trial_signer>> signer_for(const common_options& options) {
    auto signer = trial_signer::from(options);
    if (!signer) {
        std::cerr << "maka-eval-relay: " << signer.error().message << "\n";
        return std::nullopt;
    }
    return std::move(*signer);
}

// After the trial: the signed result, or the trial's code turned into a failure when it could not be made
// (it was asked for; the orchestrator has the result either way).
std::string sign_trial(std::optional<trial_signer>& signer, const trial_config& config,
                       const trial_outcome& outcome, const backend& env, int& code) {
    if (!signer) {
        return {};
    }
    auto line = signer->sign(config, outcome, env);
    if (!line) {
        std::cerr << "maka-eval-relay: the signed result was not made: " << line.error().message << "\n";
        code = code == exit_success ? exit_internal : code;
        return {};
    }
    return std::move(*line);
}

} // namespace

bool wants_help(std::span<const std::string_view> args) {
    for (const auto arg : args) {
        if (arg == "--") {
            return false;
        }
        if (arg == "--help" || arg == "-h") {
            return true;
        }
    }
    return false;
}

int connect_command(std::span<const std::string_view> args) {
    if (wants_help(args)) {
        std::cout << command_usage_text("connect");
        return exit_success;
    }
    auto options = parse_connect(args);
    forget_variable("MAKA_EVAL_RELAY_TOKEN"); // read, or refused: the relay's own copy is all there is
    if (!options) {
        return usage_failure(options.error().message);
    }
    auto signer = signer_for(options->common);
    if (!signer) {
        return exit_usage;
    }
    boost::asio::io_context context;
    auto env = backend_for(options->common, context);
    if (!env) {
        return exit_environment;
    }
    phase_log log(options->common.log, options->common.quiet);
    std::optional<follow_sink> follow;
    if (options->follow_fd >= 0) {
        // Both streams to one descriptor, in the order they come: as a runner that merges stderr into stdout.
        // Not inherited by what the relay starts (the local backend's helper): EOF means the relay is gone.
        ::fcntl(options->follow_fd, F_SETFD, FD_CLOEXEC);
        follow.emplace(context.get_executor(), log, options->follow_fd, options->follow_fd);
    }
    auto config = trial_config_of(options->common);
    config.host = options->host;
    config.port = options->port;
    config.token = options->token;
    config.instruction = options->instruction;
    config.follow = follow ? &*follow : nullptr;
    config.signed_result = signer->has_value();
    const auto outcome = drive(context, config, *env, log);
    int code = outcome.exit_code;
    (void)sign_trial(*signer, config, outcome, *env, code);
    return code; // the secrets' copies go with `options` and `config`, wiped by the heap as they are freed
}

// `locate`: the compose service's one running container, from the engine the docker backend uses. The
// Python adapter asks this instead of keeping an engine client of its own.
int locate_command(std::span<const std::string_view> args) {
    if (wants_help(args)) {
        std::cout << command_usage_text("locate");
        return exit_success;
    }
    auto options = parse_locate(args);
    if (!options) {
        return usage_failure(options.error().message);
    }
    boost::asio::io_context context;
    auto api = docker_api::open(context.get_executor(), options->engine,
                                std::chrono::milliseconds(options->engine_timeout_ms));
    if (!api) {
        std::cerr << "maka-eval-relay: " << api.error().message << "\n";
        return exit_environment;
    }
    // The whole lookup within the engine timeout, connecting included: the adapter that asks keeps no clock
    // of its own for it.
    const std::chrono::milliseconds whole(options->engine_timeout_ms);
    const auto lookup = [&]() -> boost::asio::awaitable<boost::system::result<std::string, relay_error>> {
        relay_timer timer(co_await boost::asio::this_coro::executor, whole);
        auto first =
            co_await (api->find_compose_container(options->compose_project, options->compose_service) ||
                      timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable)));
        if (first.index() == 0) {
            co_return std::move(std::get<0>(first));
        }
        co_return relay_error{relay_errc::engine, "the engine did not answer the container lookup within " +
                                                      std::to_string(whole.count()) +
                                                      " ms (--engine-timeout-ms)"};
    };
    std::optional<boost::system::result<std::string, relay_error>> found;
    boost::asio::co_spawn(
        context, lookup(),
        [&](const std::exception_ptr& error, boost::system::result<std::string, relay_error> result) {
            found = error ? relay_error{relay_errc::engine, "internal error: " + exception_text(error)}
                          : std::move(result);
        });
    context.run();
    if (!found || !*found) {
        std::cerr << "maka-eval-relay: "
                  << (found ? found->error().message : std::string("the engine lookup did not finish"))
                  << "\n";
        return exit_environment;
    }
    std::cout << **found << "\n";
    return exit_success;
}

// What `run`'s loopback orchestrator asks for: the command line's subject.
contracts::execute_request request_of(const run_options& options) {
    contracts::execute_request request;
    request.argv = options.argv;
    request.environment = options.environment;
    request.credentials = options.credentials;
    request.result_token = random_hex(16);
    request.capture_stdout = options.capture_stdout;
    return request;
}

// `--rm`: the directory the local backend made (mkdtemp) for this trial alone, scope file and artifacts.
std::string remove_work_dir(const std::string& artifacts) {
    std::error_code failed;
    std::filesystem::remove_all(std::filesystem::path(artifacts).parent_path(), failed);
    return failed ? artifacts + " (could not be removed: " + failed.message() + ")" : "(removed: --rm)";
}

// A pipe or a file on stdin that -i would forward: said once (not under --quiet), since the subject reads
// /dev/null instead.
void say_stdin_not_forwarded() {
    struct stat info {};
    if (::fstat(STDIN_FILENO, &info) == 0 && (S_ISFIFO(info.st_mode) || S_ISREG(info.st_mode))) {
        std::cerr << "maka-eval-relay: stdin is a " << (S_ISFIFO(info.st_mode) ? "pipe" : "file")
                  << " and is not forwarded: the subject's stdin is /dev/null (-i forwards it)\n";
    }
}

int run_command(std::span<const std::string_view> args) {
    if (wants_help(args)) {
        std::cout << command_usage_text("run");
        return exit_success;
    }
    auto options = parse_run(args);
    if (!options) {
        return usage_failure(options.error().message);
    }
    for (const auto& [name, value] : options->credentials) {
        forget_variable(name.c_str()); // the relay's own copy is all there is from here
    }
    auto signer = signer_for(options->common);
    if (!signer) {
        return exit_usage;
    }
    boost::asio::io_context context;
    auto env = backend_for(options->common, context);
    if (!env) {
        return exit_environment;
    }
    const std::string token = random_hex(24);
    orchestrator_peer orchestrator(context.get_executor(), token);
    transcript seen;
    boost::asio::co_spawn(context, serve_trial(orchestrator, request_of(*options)),
                          [&](const std::exception_ptr& error, transcript t) {
                              seen = std::move(t);
                              if (error) {
                                  seen.failure = "the loopback orchestrator failed: " + exception_text(error);
                              }
                          });
    // With a terminal the phase lines would land in the middle of the subject's screen: errors only.
    phase_log log(options->common.log, options->common.quiet || (options->tty && !options->json));
    std::optional<follow_sink> follow;
    if (options->tty || options->follow.value_or(!options->json && ::isatty(STDOUT_FILENO) == 1)) {
        // With --json, stdout holds the JSON object alone: the subject's stdout is shown on stderr.
        follow.emplace(context.get_executor(), log, options->json ? STDERR_FILENO : STDOUT_FILENO,
                       STDERR_FILENO);
    }
    auto config = trial_config_of(options->common);
    config.host = "127.0.0.1";
    config.port = orchestrator.port();
    config.token = token;
    config.instruction = options->instruction;
    config.follow = follow ? &*follow : nullptr;
    config.signed_result = signer->has_value();
    config.input = options->tty           ? contracts::subject_input::tty
                   : options->interactive ? contracts::subject_input::pipe
                                          : contracts::subject_input::none;
    config.input_fd = options->interactive ? STDIN_FILENO : -1;
    if (!options->interactive && !options->common.quiet) {
        say_stdin_not_forwarded();
    }
    auto raw = options->tty && options->interactive ? raw_terminal::enter(STDIN_FILENO) : std::nullopt;
    config.terminal_fd = raw ? STDIN_FILENO : -1;
    const auto outcome = drive(context, config, *env, log);
    raw.reset(); // before anything more is printed
    int signed_code = outcome.exit_code;
    const std::string attestation = sign_trial(*signer, config, outcome, *env, signed_code);
    const std::string artifacts = env->artifacts_dir();
    const run_summary summary{seen,
                              outcome,
                              options->exit_with_subject,
                              options->remove_work_dir ? remove_work_dir(artifacts) : artifacts,
                              options->remove_work_dir,
                              attestation,
                              options->common.attestation_path};
    if (follow && !options->json && !follow->stdout_at_line_start()) {
        std::cout << "\n"; // the summary starts a line of its own after output that did not end one
    }
    if (options->json) {
        print_json(std::cout, summary);
    } else {
        print_text(std::cout, summary);
    }
    return signed_code != outcome.exit_code ? signed_code : summary.exit_code();
}

int run_cli(std::span<const std::string_view> args) {
    // A vanished helper or peer must be an error code on write, never a death by SIGPIPE.
    (void)::signal(SIGPIPE, SIG_IGN);
    if (args.empty()) {
        std::cerr << usage_text();
        return exit_usage;
    }
    if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        std::cout << usage_text();
        return exit_success;
    }
    if (args[0] == "--version") {
        std::cout << "maka-eval-relay " << MAKA_EVAL_VERSION << "\n";
        return exit_success;
    }
    if (args[0] == "connect") {
        return connect_command(args.subspan(1));
    }
    if (args[0] == "run") {
        return run_command(args.subspan(1));
    }
    if (args[0] == "locate") {
        return locate_command(args.subspan(1));
    }
    if (args[0] == "keygen") {
        return keygen_command(args.subspan(1));
    }
    if (args[0] == "verify") {
        return verify_command(args.subspan(1));
    }
    return usage_failure("unknown command '" + std::string(args[0]) + "'");
}

} // namespace maka_eval::relay
