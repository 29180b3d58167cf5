// Command-line and environment parsing (see options.hpp).
#include "relay/trial/options.hpp"

#include "contracts/limits.hpp"
#include "contracts/secret.hpp"
#include "contracts/wire_json.hpp"
#include "posix/io.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace maka_eval::relay {
namespace {

constexpr std::string_view usage = R"(usage:
  maka-eval-relay connect --host HOST --port PORT [OPTIONS]
      the production mode: connect to the orchestrator, run one trial, report it.
      relay token: environment MAKA_EVAL_RELAY_TOKEN, or --token-file FILE (0600); never on the command line
      --instruction TEXT | --instruction-file FILE   the task instruction sent in `ready`
      --follow-fd N   the subject's stdout and stderr, merged in the order they come, written to inherited fd N
                      as they are produced (masked as the artifacts are; what a slow reader cannot take is
                      dropped and counted, never waited for); the Harbor adapter hands it to the trial's log
                      callbacks. Not on the bridge backend
  maka-eval-relay run [OPTIONS] [-e NAME=VALUE]... [--credential NAME]... [--no-capture] [--json]
                      [--follow|--no-follow] -- CMD [ARG...]
      manual debugging: one trial against an in-process loopback orchestrator (real TCP, same code path)
      --credential NAME takes the value from this process's environment
      --rm: the local backend's own work directory (artifacts included) is removed after the trial
      --exit-with-subject: when the trial completes, exit with the subject's own exit code (as docker run
      does) instead of 0; the relay's own failures keep their codes
      --follow shows the subject's stdout and stderr here as they are produced (default when stdout is a
      terminal and --json is not given); what is recorded and reported is the same either way
  maka-eval-relay locate --compose-project P [--compose-service S] [--docker-host URL] [--engine-timeout-ms N]
      prints the id of the one running container of compose service S (main) of project P, found on the
      engine the docker backend would use; nothing found, or more than one, is an error (exit 5). The Python
      adapter asks this before it takes the docker fast path
  maka-eval-relay --version | --help

options (both modes):
  --env local|docker:CONTAINER|bridge   where the subject runs (default local: this host, no container);
                            bridge: the trial runner's environment, served by the Python adapter
                            (relay/harbor) on the socket it passes as --bridge-fd N, with
                            --bridge-switches-user when the runner's exec takes user= (then the subject runs
                            as the runner's default user under a root supervisor it cannot reach), and
                            --bridge-fresh when no trial ran in that environment yet (the helper goes in first)
  --teardown-timeout-ms N   budget to stop a cancelled subject before destroying the environment (110000)
  --term-grace-ms N         TERM before KILL when settling (20000)
  --kill-grace-ms N         KILL before giving up when settling (10000)
  --mask NAME               mask the value of variable NAME (-e, execute's environment, the task's) out of the
                            subject's artifacts and live output as `***`, as every credential's value is
  --engine-timeout-ms N     docker: an engine request, or an exec's first answer, unanswered this long fails
                            the trial with a clear error (30000)
  --helper PATH             maka-eval-helper to use (default: beside this binary, or on PATH)
  --work-dir DIR            local backend: where the scope file and artifacts go (default: a new temp dir)
  --cwd DIR                 the subject's working directory, absolute (docker exec -w; bridge: the runner's
                            exec cwd; local: the helper's). Default: the image's WORKDIR, the runner's default
                            (Harbor: the task's workdir), this process's own. `ready` reports it as cwd
  --policy-sidecar NAME     egress: the service holding the network policy (harbor-docker-egress-control-sidecar)
  --compose-project P [--compose-service S]   docker: the container of compose service S (main) of project P
  --helper-in-container PATH                  docker, bridge: use a helper already there instead of uploading one
  --docker-host URL         docker: the engine, unix://PATH or tcp://HOST:PORT (default DOCKER_HOST, else the
                            docker CLI's selected context, else unix:///var/run/docker.sock); mutual TLS as the
                            docker CLI: DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH (ca.pem, cert.pem, key.pem;
                            default ~/.docker)
  --user USER[:GROUP]       docker, local as root: run the subject as USER (as docker exec -u; default: the
                            container's configured user) under a root supervisor it cannot reach
  --artifact-limit BYTES    keep at most BYTES of each of the subject's stdout/stderr artifacts on disk
                            (1073741824); sizes and digests still cover everything it wrote
  --keep-leftovers          do not stop processes an earlier trial's subject left in the environment
  --trust-reused-container  docker: send credentials into a container an earlier root subject owned (or whose
                            earlier trials this host has no record of); without it they are refused there
  --task-env-fd N           the task's environment ({"NAME":"VALUE",…}, JSON) on inherited fd N, read to EOF:
                            given to the subject under what `execute` sets (never on a command line)
  --log-format text|json    one line per phase on stderr (text)
  --quiet                   no phase log
environment:
  MAKA_EVAL_RELAY_TOKEN, MAKA_EVAL_EGRESS_REQUIRED (=1 to check egress isolation), MAKA_EVAL_EGRESS_ALLOWED_HOST;
  docker: DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH, DOCKER_CONFIG, DOCKER_CONTEXT (as the docker CLI)
)";

bool parse_u32(std::string_view text, std::uint32_t& out) {
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && ptr == text.data() + text.size();
}

// The task's environment from an inherited descriptor (the adapter's pipe), read to EOF and closed. Values
// may be secrets: they never appear in an error message, and the raw text is wiped once parsed.
boost::system::result<contracts::variables, relay_error> read_task_environment(int fd) {
    constexpr std::size_t limit = std::size_t{1} << 20;
    auto text = posix::read_all(fd, limit, posix::contents::secret);
    ::close(fd);
    if (!text) {
        return relay_error{relay_errc::usage, "--task-env-fd " + std::to_string(fd) +
                                                  ": unreadable, or over " + std::to_string(limit) +
                                                  " bytes"};
    }
    auto parsed = contracts::parse_object(*text, limit);
    contracts::wipe(*text);
    if (!parsed) {
        return relay_error{relay_errc::usage, "--task-env-fd " + std::to_string(fd) + ": not a JSON object"};
    }
    contracts::variables out;
    for (auto& [name, value] : *parsed) {
        if (!contracts::is_variable_name(name) || !value.is_string()) {
            return relay_error{relay_errc::usage, "--task-env-fd: the task environment's entry " +
                                                      std::string(name) +
                                                      " is not NAME: \"text\" with a valid variable name"};
        }
        out.emplace_back(std::string(name), std::string(value.get_string()));
    }
    return out;
}

// Parses an option shared by both modes at args[i]; returns false when args[i] is not one.
boost::system::result<bool, relay_error> common_option(std::span<const std::string_view> args, std::size_t& i,
                                                       common_options& out) {
    const auto name = args[i];
    // "--" is never a value: `--work-dir -- true` lacks one, it does not name a directory "--".
    auto value = [&]() -> std::optional<std::string_view> {
        if (i + 1 >= args.size() || args[i + 1] == "--") {
            return std::nullopt;
        }
        return args[++i];
    };
    auto missing = [&] { return relay_error{relay_errc::usage, std::string(name) + " needs a value"}; };
    if (name == "--env") {
        const auto v = value();
        if (!v) {
            return missing();
        }
        if (*v == "local" || *v == "bridge") {
            out.backend = *v == "local" ? backend_kind::local : backend_kind::bridge;
        } else if (v->starts_with("docker:") && v->size() > 7) {
            out.backend = backend_kind::docker;
            out.container = v->substr(7);
        } else {
            return relay_error{relay_errc::usage, "--env takes local, docker:CONTAINER or bridge"};
        }
    } else if (name == "--teardown-timeout-ms") {
        const auto v = value();
        if (!v) {
            return missing();
        }
        const auto parsed = parse_teardown_timeout(*v);
        if (!parsed) {
            return relay_error{relay_errc::usage, "Maka Eval teardown timeout is invalid"};
        }
        out.teardown_timeout_ms = *parsed;
    } else if (name == "--term-grace-ms" || name == "--kill-grace-ms") {
        const auto v = value();
        std::uint32_t ms = 0;
        if (!v || !parse_u32(*v, ms)) {
            return relay_error{relay_errc::usage, std::string(name) + " takes a number of milliseconds"};
        }
        (name == "--term-grace-ms" ? out.term_grace_ms : out.kill_grace_ms) = ms;
    } else if (name == "--mask") {
        const auto v = value();
        if (!v || !contracts::is_variable_name(*v)) {
            return relay_error{relay_errc::usage,
                               "--mask takes the NAME of a variable whose value is masked"};
        }
        out.mask.emplace_back(*v);
    } else if (name == "--engine-timeout-ms") {
        const auto v = value();
        if (!v || !parse_u32(*v, out.engine_timeout_ms) || out.engine_timeout_ms == 0) {
            return relay_error{relay_errc::usage,
                               "--engine-timeout-ms takes a positive number of milliseconds"};
        }
    } else if (name == "--helper" || name == "--work-dir" || name == "--policy-sidecar" ||
               name == "--compose-project" || name == "--compose-service" ||
               name == "--helper-in-container") {
        const auto v = value();
        if (!v || v->empty()) {
            return missing();
        }
        std::string& target = name == "--helper"            ? out.helper_path
                              : name == "--work-dir"        ? out.work_dir
                              : name == "--policy-sidecar"  ? out.policy_sidecar
                              : name == "--compose-project" ? out.compose_project
                              : name == "--compose-service" ? out.compose_service
                                                            : out.helper_in_container;
        target = *v;
        if (name == "--compose-project") {
            out.backend = backend_kind::docker;
        }
    } else if (name == "--cwd") {
        const auto v = value();
        if (!v || v->empty() || v->front() != '/' || v->find('\0') != std::string_view::npos) {
            return relay_error{relay_errc::usage, "--cwd takes an absolute directory"};
        }
        out.cwd = *v;
    } else if (name == "--docker-host") {
        const auto v = value();
        if (!v || v->empty()) {
            return missing();
        }
        out.docker_host = std::string(*v);
    } else if (name == "--bridge-fd") {
        const auto v = value();
        std::uint32_t fd = 0;
        if (!v || !parse_u32(*v, fd) || fd < 3 || fd > 65535) {
            return relay_error{relay_errc::usage,
                               "--bridge-fd takes the number of an inherited socket (3 or more)"};
        }
        out.bridge_fd = static_cast<int>(fd);
    } else if (name == "--log-format") {
        const auto v = value();
        if (!v || (*v != "text" && *v != "json")) {
            return relay_error{relay_errc::usage, "--log-format takes text or json"};
        }
        out.log = *v == "json" ? log_format::json : log_format::text;
    } else if (name == "--quiet") {
        out.quiet = true;
    } else if (name == "--keep-leftovers") {
        out.keep_leftovers = true;
    } else if (name == "--trust-reused-container") {
        out.trust_reused_container = true;
    } else if (name == "--bridge-switches-user") {
        out.bridge_switches_user = true;
    } else if (name == "--bridge-fresh") {
        out.bridge_fresh = true;
    } else if (name == "--user") {
        const auto v = value();
        if (!v || v->empty() || v->front() == ':' || v->find('\0') != std::string_view::npos) {
            return relay_error{relay_errc::usage,
                               "--user takes USER[:GROUP] (a name or a numeric id, as docker exec -u)"};
        }
        out.user = *v;
    } else if (name == "--task-env-fd") {
        const auto v = value();
        std::uint32_t fd = 0;
        if (!v || !parse_u32(*v, fd) || fd < 3 || fd > 65535) {
            return relay_error{relay_errc::usage,
                               "--task-env-fd takes the number of an inherited descriptor (3 or more)"};
        }
        auto vars = read_task_environment(static_cast<int>(fd));
        if (!vars) {
            return vars.error();
        }
        out.task_environment = std::move(*vars);
    } else if (name == "--artifact-limit") {
        const auto v = value();
        std::uint64_t bytes = 0;
        const auto [ptr, ec] = v ? std::from_chars(v->data(), v->data() + v->size(), bytes)
                                 : std::from_chars_result{nullptr, std::errc::invalid_argument};
        if (!v || ec != std::errc() || ptr != v->data() + v->size()) {
            return relay_error{relay_errc::usage, "--artifact-limit takes a number of bytes"};
        }
        out.artifact_limit = bytes;
    } else {
        return false;
    }
    return true;
}

// Options that only make sense together.
boost::system::result<void, relay_error> check_backend(const common_options& out) {
    if ((out.backend == backend_kind::bridge) != (out.bridge_fd >= 0)) {
        return relay_error{relay_errc::usage,
                           "--env bridge and --bridge-fd go together: the bridge is the socket the trial "
                           "runner's adapter (relay/harbor) passes"};
    }
    if (!out.compose_project.empty() && !out.container.empty()) {
        return relay_error{relay_errc::usage,
                           "--env docker:CONTAINER and --compose-project both name the container: give one"};
    }
    if (out.backend != backend_kind::docker && out.docker_host) {
        return relay_error{relay_errc::usage,
                           "--docker-host is for the docker backend (--env docker:CONTAINER "
                           "or --compose-project)"};
    }
    if (out.backend == backend_kind::bridge && !out.user.empty()) {
        return relay_error{
            relay_errc::usage,
            "--user is for the docker and local backends: on the bridge the subject runs as the "
            "trial runner's default user"};
    }
    return {};
}

// What the environment adds once the command line is read: egress settings, and for the docker backend where
// its engine is (the Docker CLI's variables; a bad one fails here, before any trial work).
boost::system::result<void, relay_error> settle_common(env_lookup env, common_options& out) {
    out.egress_required = env("MAKA_EVAL_EGRESS_REQUIRED").value_or("") == "1";
    out.egress_host = env("MAKA_EVAL_EGRESS_ALLOWED_HOST");
    if (auto checked = check_backend(out); !checked) {
        return checked.error();
    }
    if (out.backend == backend_kind::docker) {
        auto engine = resolve_engine_endpoint(out.docker_host, env);
        if (!engine) {
            return engine.error();
        }
        out.engine = std::move(*engine);
    }
    return {};
}

} // namespace

std::optional<std::string> process_env(const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr ? std::optional<std::string>(value) : std::nullopt;
}

std::string_view usage_text() {
    return usage;
}

std::string command_usage_text(std::string_view command) {
    // The command's own lines, then the options both share and the environment.
    const std::string text(usage);
    const auto connect_at = text.find("  maka-eval-relay connect");
    const auto run_at = text.find("  maka-eval-relay run");
    const auto locate_at = text.find("  maka-eval-relay locate");
    const auto version_at = text.find("  maka-eval-relay --version");
    const auto shared_at = text.find("\noptions (both modes):");
    if (command == "locate") {
        return "usage:\n" + text.substr(locate_at, version_at - locate_at);
    }
    const auto own = command == "run" ? text.substr(run_at, locate_at - run_at)
                                      : text.substr(connect_at, run_at - connect_at);
    return "usage:\n" + own + text.substr(shared_at);
}

boost::system::result<common_options, relay_error> parse_locate(std::span<const std::string_view> args,
                                                                env_lookup env) {
    common_options out;
    out.backend = backend_kind::docker;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const auto name = args[i];
        if (name != "--compose-project" && name != "--compose-service" && name != "--docker-host" &&
            name != "--engine-timeout-ms") {
            return relay_error{relay_errc::usage, "locate takes --compose-project, --compose-service, "
                                                  "--docker-host and --engine-timeout-ms, not " +
                                                      std::string(name)};
        }
        auto taken = common_option(args, i, out);
        if (!taken) {
            return taken.error();
        }
    }
    if (out.compose_project.empty()) {
        return relay_error{relay_errc::usage, "locate needs --compose-project"};
    }
    if (auto settled = settle_common(env, out); !settled) {
        return settled.error();
    }
    return out;
}

std::optional<std::int64_t> parse_teardown_timeout(std::string_view text) {
    std::int64_t value = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size() || value <= 0) {
        return std::nullopt;
    }
    return value;
}

boost::system::result<std::string, relay_error> read_secret_file(const std::string& path) {
    const posix::unique_fd fd(posix::open_retry(path, O_RDONLY | O_NOFOLLOW));
    if (!fd) {
        return relay_error{relay_errc::usage, path + ": " + std::strerror(errno)};
    }
    struct stat info {};
    if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode) || info.st_uid != ::geteuid() ||
        (info.st_mode & 077) != 0) {
        return relay_error{relay_errc::usage,
                           path + " must be a regular file owned by this user with mode 0600"};
    }
    // EINTR-safe, the read buffer wiped; a file past the limit is an error, never silently cut.
    auto read = posix::read_all(fd.get(), 65536, posix::contents::secret);
    if (!read) {
        return relay_error{relay_errc::usage,
                           path + ": " +
                               (read.error() == boost::system::errc::file_too_large
                                    ? std::string("longer than 64 KiB (a relay token is one line)")
                                    : read.error().message())};
    }
    std::string text = std::move(*read);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
        text.pop_back();
    }
    return boost::system::result<std::string, relay_error>(boost::system::in_place_value, std::move(text));
}

boost::system::result<connect_options, relay_error> parse_connect(std::span<const std::string_view> args,
                                                                  env_lookup env) {
    connect_options out;
    std::string token_file;
    std::optional<std::string> instruction_file;
    bool port_seen = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        auto common = common_option(args, i, out.common);
        if (!common) {
            return common.error();
        }
        if (*common) {
            continue;
        }
        const auto name = args[i];
        const bool has_value = i + 1 < args.size() && args[i + 1] != "--";
        if (name == "--host" && has_value) {
            out.host = args[++i];
        } else if (name == "--port" && has_value) {
            std::uint32_t port = 0;
            if (!parse_u32(args[++i], port) || port == 0 || port > 65535) {
                return relay_error{relay_errc::usage, "--port takes a TCP port"};
            }
            out.port = static_cast<std::uint16_t>(port);
            port_seen = true;
        } else if (name == "--token-file" && has_value) {
            token_file = args[++i];
        } else if (name == "--instruction" && has_value) {
            out.instruction = args[++i];
        } else if (name == "--instruction-file" && has_value) {
            instruction_file = std::string(args[++i]);
        } else if (name == "--follow-fd") {
            std::uint32_t fd = 0;
            if (!has_value || !parse_u32(args[++i], fd) || fd < 3 || fd > 65535 ||
                ::fcntl(static_cast<int>(fd), F_GETFD) == -1) {
                return relay_error{
                    relay_errc::usage,
                    "--follow-fd takes the number of an inherited, open descriptor (3 or more)"};
            }
            out.follow_fd = static_cast<int>(fd);
        } else if (name == "--token" || name.starts_with("--token=")) {
            return relay_error{relay_errc::usage, "the relay token is never taken from the command line: set "
                                                  "MAKA_EVAL_RELAY_TOKEN or use --token-file"};
        } else {
            return relay_error{relay_errc::usage, "unknown or incomplete option " + std::string(name)};
        }
    }
    if (out.host.empty() || !port_seen) {
        return relay_error{relay_errc::usage, "connect needs --host and --port"};
    }
    if (!token_file.empty()) {
        auto token = read_secret_file(token_file);
        if (!token) {
            return token.error();
        }
        out.token = std::move(*token);
    } else {
        out.token = env("MAKA_EVAL_RELAY_TOKEN").value_or("");
    }
    if (out.token.empty()) {
        return relay_error{relay_errc::usage,
                           "no relay token: set MAKA_EVAL_RELAY_TOKEN or use --token-file"};
    }
    if (instruction_file) {
        // Whole or not at all: `ready` carries it, and an orchestrator line is at most 1 MiB.
        auto text = posix::read_file(*instruction_file, contracts::control_line_limit_bytes);
        if (!text) {
            return relay_error{relay_errc::usage,
                               *instruction_file + ": cannot be read (" +
                                   (text.error() == boost::system::errc::file_too_large
                                        ? std::string("over 1 MiB, more than `ready` can carry")
                                        : text.error().message()) +
                                   ")"};
        }
        out.instruction = std::move(*text);
    }
    if (auto settled = settle_common(env, out.common); !settled) {
        return settled.error();
    }
    return out;
}

boost::system::result<run_options, relay_error> parse_run(std::span<const std::string_view> args,
                                                          env_lookup env) {
    run_options out;
    std::size_t i = 0;
    for (; i < args.size() && args[i] != "--"; ++i) {
        auto common = common_option(args, i, out.common);
        if (!common) {
            return common.error();
        }
        if (*common) {
            continue;
        }
        const auto name = args[i];
        const bool has_value = i + 1 < args.size() && args[i + 1] != "--";
        if (name == "--json") {
            out.json = true;
        } else if (name == "--follow" || name == "--no-follow") {
            out.follow = name == "--follow";
        } else if (name == "--rm") {
            out.remove_work_dir = true;
        } else if (name == "--exit-with-subject") {
            out.exit_with_subject = true;
        } else if (name == "--no-capture") {
            out.capture_stdout = false;
        } else if ((name == "-e" || name == "--env-var") && has_value) {
            const auto pair = args[++i];
            const auto eq = pair.find('=');
            if (eq == std::string_view::npos || !contracts::is_variable_name(pair.substr(0, eq))) {
                // Echo what was given, but never what could be a value (it may be a secret).
                const auto shown = eq == std::string_view::npos ? pair.substr(0, 64) : pair.substr(0, eq);
                return relay_error{relay_errc::usage, "-e " + std::string(shown) +
                                                          (eq == std::string_view::npos ? "" : "=…") +
                                                          ": -e takes NAME=VALUE with NAME a variable name"};
            }
            out.environment.emplace_back(pair.substr(0, eq), pair.substr(eq + 1));
        } else if (name == "--credential" && has_value) {
            const std::string credential(args[++i]);
            const auto value = env(credential.c_str());
            if (!contracts::is_variable_name(credential) || !value) {
                return relay_error{relay_errc::usage,
                                   "--credential " + credential + ": no such variable in this environment"};
            }
            out.credentials.emplace_back(credential, *value);
        } else if (name == "--instruction" && has_value) {
            out.instruction = args[++i];
        } else if (!name.starts_with("-")) {
            return relay_error{relay_errc::usage,
                               "the command goes after --: maka-eval-relay run [OPTIONS] -- " +
                                   std::string(name) + " …"};
        } else {
            return relay_error{relay_errc::usage, "unknown or incomplete option " + std::string(name)};
        }
    }
    if (i + 1 >= args.size()) {
        return relay_error{relay_errc::usage, "run needs a command after --"};
    }
    out.argv.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
    if (out.remove_work_dir && (out.common.backend != backend_kind::local || !out.common.work_dir.empty())) {
        return relay_error{relay_errc::usage,
                           "--rm removes the work directory the local backend makes for itself: "
                           "not with --work-dir (yours) or another backend"};
    }
    // What the orchestrator side would refuse after the trial started (exit 4) is a usage error here, before
    // it.
    std::size_t bytes = 0;
    for (const auto* list : {&out.environment, &out.credentials}) {
        for (const auto& [name, value] : *list) {
            if (name == contracts::result_token_variable) {
                return relay_error{relay_errc::usage,
                                   name + " is reserved: the relay sets it for the subject's result frame"};
            }
            bytes += name.size() + value.size() + 8;
        }
    }
    for (const auto& [name, value] : out.environment) {
        if (std::any_of(out.credentials.begin(), out.credentials.end(),
                        [&name = name](const auto& c) { return c.first == name; })) {
            return relay_error{relay_errc::usage,
                               name + " is given both with -e and with --credential: give one"};
        }
    }
    if (bytes + 4096 > contracts::control_line_limit_bytes) {
        return relay_error{relay_errc::usage,
                           "the -e values and credentials do not fit the orchestrator's control line (" +
                               std::to_string(contracts::control_line_limit_bytes) + " bytes)"};
    }
    if (auto settled = settle_common(env, out.common); !settled) {
        return settled.error();
    }
    return out;
}

} // namespace maka_eval::relay
