// The option table: the parser and the help (see options.hpp).
#include "relay/cli/options.hpp"

#include "contracts/limits.hpp"
#include "contracts/wire_json.hpp"
#include "posix/io.hpp"
#include "relay/support/private_file.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace maka_eval::relay {
namespace {

using boost::system::result;

enum command : unsigned { connect_command = 1U, run_command = 2U, locate_command = 4U };
constexpr unsigned trial_commands = connect_command | run_command;

// What a row applies its value to: the shared options, the command's own, and what connect resolves once
// the whole line is read (the token file, the instruction file).
struct parse_target {
    explicit parse_target(common_options& shared, connect_options* connect_own = nullptr,
                          run_options* run_own = nullptr, env_lookup lookup = &process_env)
        : common(shared), connect(connect_own), run(run_own), env(lookup) {}
    common_options& common;
    connect_options* connect = nullptr;
    run_options* run = nullptr;
    env_lookup env = &process_env;
    std::string token_file;
    std::optional<std::string> instruction_file;
    bool port_seen = false;
};

// A rejected value: the row's own sentence (`invalid`) is said, unless the rejection brings one.
relay_error rejected(std::string message = {}) {
    return relay_error{relay_errc::usage, std::move(message)};
}

using apply_fn = result<void, relay_error> (*)(parse_target&, std::string_view name, std::string_view value);

struct option_row {
    std::string_view names; // "--quiet", or several spellings: "-e, --env-var"
    std::string_view value; // what it takes ("N", "DIR"); empty: a flag
    unsigned commands;      // which commands take it
    std::string help;       // what it does; lines after the first are indented under it
    std::string invalid;    // what a missing or malformed value is told; empty: "NAME needs a value"
    apply_fn apply;
};

bool parse_u32(std::string_view text, std::uint32_t& out) {
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && ptr == text.data() + text.size();
}

// An inherited descriptor's number (3 or more).
std::optional<int> descriptor(std::string_view text) {
    std::uint32_t fd = 0;
    if (!parse_u32(text, fd) || fd < 3 || fd > 65535) {
        return std::nullopt;
    }
    return static_cast<int>(fd);
}

// The task's environment from an inherited descriptor (the adapter's pipe), read to EOF and closed. Values
// may be secrets: they never appear in an error message, and the raw text is wiped once parsed.
result<contracts::variables, relay_error> read_task_environment(int fd) {
    constexpr std::size_t limit = std::size_t{1} << 20;
    auto text = posix::read_all(fd, limit, posix::contents::secret);
    ::close(fd);
    if (!text) {
        return relay_error{relay_errc::usage, "--task-env-fd " + std::to_string(fd) +
                                                  ": unreadable, or over " + std::to_string(limit) +
                                                  " bytes"};
    }
    auto parsed = contracts::parse_object(*text, limit);
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

// A string option that may not be empty.
template <std::string common_options::*field>
result<void, relay_error> set_text(parse_target& to, std::string_view, std::string_view value) {
    if (value.empty()) {
        return rejected();
    }
    to.common.*field = value;
    return {};
}

// A flag of the shared options.
template <bool common_options::*field>
result<void, relay_error> set_flag(parse_target& to, std::string_view, std::string_view) {
    to.common.*field = true;
    return {};
}

// A number of milliseconds; `positive`: zero is refused.
template <std::uint32_t common_options::*field, bool positive>
result<void, relay_error> set_ms(parse_target& to, std::string_view, std::string_view value) {
    std::uint32_t ms = 0;
    if (!parse_u32(value, ms) || (positive && ms == 0)) {
        return rejected();
    }
    to.common.*field = ms;
    return {};
}

std::string ms_default(std::int64_t ms) {
    return "(" + std::to_string(ms) + ")";
}

// Every option of every command, in the order the help lists them: each command's own first, then those
// the trial commands share.
const std::vector<option_row>& option_table() {
    static const std::vector<option_row> rows{
        // connect
        {"--host",
         "HOST",
         connect_command,
         "the orchestrator to connect to",
         {},
         [](parse_target& to, std::string_view, std::string_view v) -> result<void, relay_error> {
             to.connect->host = v;
             return {};
         }},
        {"--port", "PORT", connect_command, "its TCP port", "--port takes a TCP port",
         [](parse_target& to, std::string_view, std::string_view v) -> result<void, relay_error> {
             std::uint32_t port = 0;
             if (!parse_u32(v, port) || port == 0 || port > 65535) {
                 return rejected();
             }
             to.connect->port = static_cast<std::uint16_t>(port);
             to.port_seen = true;
             return {};
         }},
        {"--token-file",
         "FILE",
         connect_command,
         "the relay token, from a file of this user's with mode 0600 (else MAKA_EVAL_RELAY_TOKEN); never on\n"
         "the command line",
         {},
         [](parse_target& to, std::string_view, std::string_view v) -> result<void, relay_error> {
             to.token_file = v;
             return {};
         }},
        {"--instruction",
         "TEXT",
         trial_commands,
         "the task instruction sent in `ready` (run: \"manual run\")",
         {},
         [](parse_target& to, std::string_view, std::string_view v) -> result<void, relay_error> {
             (to.connect != nullptr ? to.connect->instruction : to.run->instruction) = v;
             return {};
         }},
        {"--instruction-file",
         "FILE",
         connect_command,
         "the task instruction, from a file (at most 1 MiB)",
         {},
         [](parse_target& to, std::string_view, std::string_view v) -> result<void, relay_error> {
             to.instruction_file = std::string(v);
             return {};
         }},
        {"--follow-fd", "N", connect_command,
         "the subject's stdout and stderr, merged in the order they come, written to inherited fd N as they\n"
         "are produced (masked as the artifacts are; what a slow reader cannot take is dropped and counted,\n"
         "never waited for); the Harbor adapter hands it to the trial's log callbacks. Not on the bridge",
         "--follow-fd takes the number of an inherited, open descriptor (3 or more)",
         [](parse_target& to, std::string_view, std::string_view v) -> result<void, relay_error> {
             const auto fd = descriptor(v);
             if (!fd || ::fcntl(*fd, F_GETFD) == -1) {
                 return rejected();
             }
             to.connect->follow_fd = *fd;
             return {};
         }},
        // run
        {"-e, --env-var",
         "NAME=VALUE",
         run_command,
         "a variable of the subject's environment",
         {},
         [](parse_target& to, std::string_view, std::string_view pair) -> result<void, relay_error> {
             const auto eq = pair.find('=');
             if (eq == std::string_view::npos || !contracts::is_variable_name(pair.substr(0, eq))) {
                 // Echo what was given, but never what could be a value (it may be a secret).
                 const auto shown = eq == std::string_view::npos ? pair.substr(0, 64) : pair.substr(0, eq);
                 return rejected("-e " + std::string(shown) + (eq == std::string_view::npos ? "" : "=…") +
                                 ": -e takes NAME=VALUE with NAME a variable name");
             }
             to.run->environment.emplace_back(pair.substr(0, eq), pair.substr(eq + 1));
             return {};
         }},
        {"--credential",
         "NAME",
         run_command,
         "a credential of the subject's: the value of NAME in this process's environment (masked out of its\n"
         "output)",
         {},
         [](parse_target& to, std::string_view, std::string_view v) -> result<void, relay_error> {
             const std::string credential(v);
             const auto value = to.env(credential.c_str());
             if (!contracts::is_variable_name(credential) || !value) {
                 return rejected("--credential " + credential + ": no such variable in this environment");
             }
             to.run->credentials.emplace_back(credential, *value);
             return {};
         }},
        {"--no-capture",
         "",
         run_command,
         "the subject's stdout is not scanned for a result frame",
         {},
         [](parse_target& to, std::string_view, std::string_view) -> result<void, relay_error> {
             to.run->capture_stdout = false;
             return {};
         }},
        {"--json",
         "",
         run_command,
         "the outcome as one JSON object on stdout",
         {},
         [](parse_target& to, std::string_view, std::string_view) -> result<void, relay_error> {
             to.run->json = true;
             return {};
         }},
        {"--follow, --no-follow",
         "",
         run_command,
         "show the subject's stdout and stderr here as they are produced, or not (default: when stdout is a\n"
         "terminal and --json is not given); what is recorded and reported is the same either way",
         {},
         [](parse_target& to, std::string_view name, std::string_view) -> result<void, relay_error> {
             to.run->follow = name == "--follow";
             return {};
         }},
        {"-i, --interactive",
         "",
         run_command,
         "the relay's stdin is the subject's, forwarded as it arrives (EOF included); without it the "
         "subject's\n"
         "stdin is /dev/null, as under the orchestrator",
         {},
         [](parse_target& to, std::string_view, std::string_view) -> result<void, relay_error> {
             to.run->interactive = true;
             return {};
         }},
        {"-t, --tty",
         "",
         run_command,
         "a pseudo-terminal for the subject in its environment, as docker exec -t gives (its own session "
         "and\n"
         "controlling terminal; stdout and stderr merged into it, then masked, captured and frame-decoded "
         "as\n"
         "stdout); this terminal is put in raw mode and restored on every exit; Ctrl-] three times cancels\n"
         "the trial. Implies --follow. Not on the bridge",
         {},
         [](parse_target& to, std::string_view, std::string_view) -> result<void, relay_error> {
             to.run->tty = true;
             return {};
         }},
        {"-it, -ti",
         "",
         run_command,
         "-i and -t together",
         {},
         [](parse_target& to, std::string_view, std::string_view) -> result<void, relay_error> {
             to.run->interactive = to.run->tty = true;
             return {};
         }},
        {"--timeout", "DURATION", trial_commands,
         "cancel the trial once DURATION has passed (1500ms, 30s, 5m, 1h; a bare number is seconds): the\n"
         "subject is settled within the teardown budget and `executed` says framework_timeout",
         "--timeout takes a duration such as 30s, 5m or 1500ms",
         [](parse_target& to, std::string_view, std::string_view v) -> result<void, relay_error> {
             const auto ms = parse_duration_ms(v);
             if (!ms) {
                 return rejected();
             }
             to.common.time_limit_ms = *ms;
             to.common.time_limit_text = v;
             return {};
         }},
        {"--sign-key",
         "FILE",
         trial_commands,
         "sign what the relay observed of the trial (a DSSE envelope over an in-toto statement; "
         "docs/security.md)\n"
         "with this Ed25519 private key (keygen's .key: a regular file of the relay's user, mode 0600); "
         "else\n"
         "MAKA_EVAL_SIGN_KEY_FILE. The key never enters the environment",
         {},
         [](parse_target& to, std::string_view, std::string_view v) -> result<void, relay_error> {
             to.common.sign_key_file = v;
             return {};
         }},
        {"--attestation",
         "FILE",
         trial_commands,
         "where the signed result goes (created 0600, replaced whole); run --json carries it too",
         {},
         [](parse_target& to, std::string_view, std::string_view v) -> result<void, relay_error> {
             to.common.attestation_path = v;
             return {};
         }},
        {"--rm",
         "",
         run_command,
         "remove the local backend's own work directory (artifacts included) after the trial",
         {},
         [](parse_target& to, std::string_view, std::string_view) -> result<void, relay_error> {
             to.run->remove_work_dir = true;
             return {};
         }},
        {"--exit-with-subject",
         "",
         run_command,
         "when the trial completes, exit with the subject's own exit code (as docker run does) instead of "
         "0;\n"
         "the relay's own failures keep their codes",
         {},
         [](parse_target& to, std::string_view, std::string_view) -> result<void, relay_error> {
             to.run->exit_with_subject = true;
             return {};
         }},
        // shared
        {"--env", "local|docker:CONTAINER|bridge", trial_commands,
         "where the subject runs (default local: this host, no container); bridge: the trial runner's\n"
         "environment, served by the Python adapter (relay/harbor) on the socket it passes as --bridge-fd "
         "N,\n"
         "with --bridge-switches-user when the runner's exec takes user= (then the subject runs as the\n"
         "runner's default user under a root supervisor it cannot reach), and --bridge-fresh when no trial\n"
         "ran in that environment yet (the helper goes in first)",
         "--env takes local, docker:CONTAINER or bridge",
         [](parse_target& to, std::string_view, std::string_view v) -> result<void, relay_error> {
             if (v == "local" || v == "bridge") {
                 to.common.backend = v == "local" ? backend_kind::local : backend_kind::bridge;
             } else if (v.starts_with("docker:") && v.size() > 7) {
                 to.common.backend = backend_kind::docker;
                 to.common.container = v.substr(7);
             } else {
                 return rejected();
             }
             return {};
         }},
        {"--teardown-timeout-ms", "N", trial_commands,
         "budget to stop a cancelled subject before destroying the environment " +
             ms_default(contracts::defaults::teardown_timeout_ms),
         "Maka Eval teardown timeout is invalid",
         [](parse_target& to, std::string_view, std::string_view v) -> result<void, relay_error> {
             const auto parsed = parse_teardown_timeout(v);
             if (!parsed) {
                 return rejected();
             }
             to.common.teardown_timeout_ms = *parsed;
             return {};
         }},
        {"--term-grace-ms", "N", trial_commands,
         "TERM before KILL when settling " + ms_default(contracts::defaults::term_grace_ms),
         "--term-grace-ms takes a number of milliseconds", set_ms<&common_options::term_grace_ms, false>},
        {"--kill-grace-ms", "N", trial_commands,
         "KILL before giving up when settling " + ms_default(contracts::defaults::kill_grace_ms),
         "--kill-grace-ms takes a number of milliseconds", set_ms<&common_options::kill_grace_ms, false>},
        {"--mask", "NAME", trial_commands,
         "mask the value of variable NAME (-e, execute's environment, the task's) out of the subject's\n"
         "artifacts and live output as `***`, as every credential's value is",
         "--mask takes the NAME of a variable whose value is masked",
         [](parse_target& to, std::string_view, std::string_view v) -> result<void, relay_error> {
             if (!contracts::is_variable_name(v)) {
                 return rejected();
             }
             to.common.mask.emplace_back(v);
             return {};
         }},
        {"--helper",
         "PATH",
         trial_commands,
         "maka-eval-helper to use (default: MAKA_EVAL_HELPER, else beside this binary, in ../lib/maka-eval/, "
         "then on PATH)",
         {},
         set_text<&common_options::helper_path>},
        {"--work-dir",
         "DIR",
         trial_commands,
         "local backend: where the scope file and artifacts go (default: a new temp dir)",
         {},
         set_text<&common_options::work_dir>},
        {"--cwd", "DIR", trial_commands,
         "the subject's working directory, absolute (docker exec -w; bridge: the runner's exec cwd; local:\n"
         "the helper's). Default: the image's WORKDIR, the runner's default (Harbor: the task's workdir),\n"
         "this process's own. `ready` reports it as cwd",
         "--cwd takes an absolute directory",
         [](parse_target& to, std::string_view, std::string_view v) -> result<void, relay_error> {
             if (v.empty() || v.front() != '/' || v.find('\0') != std::string_view::npos) {
                 return rejected();
             }
             to.common.cwd = v;
             return {};
         }},
        {"--policy-sidecar",
         "NAME",
         trial_commands,
         "egress: the service holding the network policy (" + std::string(policy::default_policy_service) +
             ")",
         {},
         set_text<&common_options::policy_sidecar>},
        {"--compose-project",
         "P",
         trial_commands | locate_command,
         "docker: the container of compose service --compose-service (main) of project P",
         {},
         [](parse_target& to, std::string_view name, std::string_view v) -> result<void, relay_error> {
             to.common.backend = backend_kind::docker;
             return set_text<&common_options::compose_project>(to, name, v);
         }},
        {"--compose-service",
         "S",
         trial_commands | locate_command,
         "docker: with --compose-project (main)",
         {},
         set_text<&common_options::compose_service>},
        {"--helper-in-container",
         "PATH",
         trial_commands,
         "docker, bridge: use a helper already there instead of uploading one",
         {},
         set_text<&common_options::helper_in_container>},
        {"--docker-host",
         "URL",
         trial_commands | locate_command,
         "docker: the engine, unix://PATH or tcp://HOST:PORT (default DOCKER_HOST, else the docker CLI's\n"
         "selected context, else unix:///var/run/docker.sock); mutual TLS as the docker CLI:\n"
         "DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH (ca.pem, cert.pem, key.pem; default ~/.docker)",
         {},
         [](parse_target& to, std::string_view, std::string_view v) -> result<void, relay_error> {
             if (v.empty()) {
                 return rejected();
             }
             to.common.docker_host = std::string(v);
             return {};
         }},
        {"--engine-timeout-ms", "N", trial_commands | locate_command,
         "docker: an engine request, or an exec's first answer, unanswered this long fails the trial with a\n"
         "clear error " +
             ms_default(contracts::defaults::engine_timeout_ms),
         "--engine-timeout-ms takes a positive number of milliseconds",
         set_ms<&common_options::engine_timeout_ms, true>},
        {"--user", "USER[:GROUP]", trial_commands,
         "docker, local as root: run the subject as USER (as docker exec -u; default: the container's\n"
         "configured user) under a root supervisor it cannot reach",
         "--user takes USER[:GROUP] (a name or a numeric id, as docker exec -u)",
         [](parse_target& to, std::string_view, std::string_view v) -> result<void, relay_error> {
             if (v.empty() || v.front() == ':' || v.find('\0') != std::string_view::npos) {
                 return rejected();
             }
             to.common.user = v;
             return {};
         }},
        {"--artifact-limit", "BYTES", trial_commands,
         "keep at most BYTES of each of the subject's stdout/stderr artifacts on disk (" +
             std::to_string(contracts::default_artifact_limit_bytes) +
             ");\nsizes and digests still cover everything it wrote",
         "--artifact-limit takes a number of bytes",
         [](parse_target& to, std::string_view, std::string_view v) -> result<void, relay_error> {
             std::uint64_t bytes = 0;
             const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), bytes);
             if (ec != std::errc() || ptr != v.data() + v.size()) {
                 return rejected();
             }
             to.common.artifact_limit = bytes;
             return {};
         }},
        {"--keep-leftovers",
         "",
         trial_commands,
         "do not stop processes an earlier trial's subject left in the environment",
         {},
         set_flag<&common_options::keep_leftovers>},
        {"--trust-reused-container",
         "",
         trial_commands,
         "docker: send credentials into a container an earlier root subject owned (or whose earlier trials\n"
         "this host has no record of); without it they are refused there",
         {},
         set_flag<&common_options::trust_reused_container>},
        {"--task-env-fd", "N", trial_commands,
         "the task's environment ({\"NAME\":\"VALUE\",…}, JSON) on inherited fd N, read to EOF: given to "
         "the\n"
         "subject under what `execute` sets (never on a command line)",
         "--task-env-fd takes the number of an inherited descriptor (3 or more)",
         [](parse_target& to, std::string_view, std::string_view v) -> result<void, relay_error> {
             const auto fd = descriptor(v);
             if (!fd) {
                 return rejected();
             }
             auto vars = read_task_environment(*fd);
             if (!vars) {
                 return vars.error();
             }
             to.common.task_environment = std::move(*vars);
             return {};
         }},
        {"--bridge-fd", "N", trial_commands, "bridge: the adapter's socket (see --env)",
         "--bridge-fd takes the number of an inherited socket (3 or more)",
         [](parse_target& to, std::string_view, std::string_view v) -> result<void, relay_error> {
             const auto fd = descriptor(v);
             if (!fd) {
                 return rejected();
             }
             to.common.bridge_fd = *fd;
             return {};
         }},
        {"--bridge-switches-user",
         "",
         trial_commands,
         "bridge: the runner's exec takes user= (see --env)",
         {},
         set_flag<&common_options::bridge_switches_user>},
        {"--bridge-fresh",
         "",
         trial_commands,
         "bridge: no trial ran in that environment yet (see --env)",
         {},
         set_flag<&common_options::bridge_fresh>},
        {"--log-format", "text|json", trial_commands, "one line per phase on stderr (text)",
         "--log-format takes text or json",
         [](parse_target& to, std::string_view, std::string_view v) -> result<void, relay_error> {
             if (v != "text" && v != "json") {
                 return rejected();
             }
             to.common.log = v == "json" ? log_format::json : log_format::text;
             return {};
         }},
        {"--quiet", "", trial_commands, "no phase log", {}, set_flag<&common_options::quiet>},
    };
    return rows;
}

// The row that takes `name` for `which` command, if any.
const option_row* find_row(std::string_view name, unsigned which) {
    for (const auto& row : option_table()) {
        if ((row.commands & which) == 0) {
            continue;
        }
        std::string_view names = row.names;
        while (!names.empty()) {
            const auto comma = names.find(", ");
            if (names.substr(0, comma) == name) {
                return &row;
            }
            names = comma == std::string_view::npos ? std::string_view() : names.substr(comma + 2);
        }
    }
    return nullptr;
}

// Applies the option at args[i] (and its value, which it then skips); nullopt when no row of `which` takes
// it. "--" is never a value: `--work-dir -- true` lacks one, it does not name a directory "--".
std::optional<result<void, relay_error>> apply_option(std::span<const std::string_view> args, std::size_t& i,
                                                      unsigned which, parse_target& to) {
    const auto name = args[i];
    const auto* row = find_row(name, which);
    if (row == nullptr) {
        return std::nullopt;
    }
    const auto refuse = [&](relay_error error) -> result<void, relay_error> {
        if (error.message.empty()) {
            error.message = row->invalid.empty() ? std::string(name) + " needs a value" : row->invalid;
        }
        return error;
    };
    std::string_view value;
    if (!row->value.empty()) {
        if (i + 1 >= args.size() || args[i + 1] == "--") {
            return refuse(rejected());
        }
        value = args[++i];
    }
    auto applied = row->apply(to, name, value);
    return applied ? applied : refuse(applied.error());
}

// One command's usage from the table: its synopsis, its options, then those it shares.
// `which`: every row any of these commands takes; `all_of`: only the rows every one of them takes.
std::string render_options(unsigned which, bool all_of = false) {
    constexpr std::size_t column = 28;
    std::string out;
    for (const auto& row : option_table()) {
        if ((row.commands & which) == 0 || (all_of && (row.commands & which) != which)) {
            continue;
        }
        std::string left =
            "  " + std::string(row.names) + (row.value.empty() ? "" : " " + std::string(row.value));
        left += left.size() + 1 < column ? std::string(column - left.size(), ' ')
                                         : "\n" + std::string(column, ' ');
        out += left;
        for (const char ch : row.help) {
            out += ch;
            if (ch == '\n') {
                out.append(column, ' ');
            }
        }
        out += "\n";
    }
    return out;
}

constexpr std::string_view connect_synopsis =
    "  maka-eval-relay connect --host HOST --port PORT [OPTIONS]\n"
    "      the production mode: connect to the orchestrator, run one trial, report it.\n"
    "      relay token: environment MAKA_EVAL_RELAY_TOKEN, or --token-file FILE (0600); never on the command "
    "line\n";
constexpr std::string_view run_synopsis =
    "  maka-eval-relay run [OPTIONS] [-e NAME=VALUE]... [--credential NAME]... [--no-capture] [--json]\n"
    "                      [--follow|--no-follow] -- CMD [ARG...]\n"
    "      manual debugging: one trial against an in-process loopback orchestrator (real TCP, same code "
    "path)\n";
constexpr std::string_view locate_synopsis =
    "  maka-eval-relay locate --compose-project P [--compose-service S] [--docker-host URL] "
    "[--engine-timeout-ms N]\n"
    "      prints the id of the one running container of compose service S (main) of project P, found on "
    "the\n"
    "      engine the docker backend would use; nothing found, or more than one, is an error (exit 5). The\n"
    "      Python adapter asks this before it takes the docker fast path\n";
constexpr std::string_view environment_text =
    "environment:\n"
    "  MAKA_EVAL_RELAY_TOKEN, MAKA_EVAL_EGRESS_REQUIRED (=1 to check egress isolation), "
    "MAKA_EVAL_EGRESS_ALLOWED_HOST,\n"
    "  MAKA_EVAL_SIGN_KEY_FILE (as --sign-key);\n"
    "  docker: DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH, DOCKER_CONFIG, DOCKER_CONTEXT (as the "
    "docker "
    "CLI)\n";

// Options that only make sense together.
result<void, relay_error> check_backend(const common_options& out) {
    if ((out.backend == backend_kind::bridge) != (out.bridge_fd >= 0)) {
        return relay_error{relay_errc::usage,
                           "--env bridge and --bridge-fd go together: the bridge is the socket "
                           "the trial runner's adapter (relay/harbor) passes"};
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
        return relay_error{relay_errc::usage,
                           "--user is for the docker and local backends: on the bridge the "
                           "subject runs as the trial runner's default user"};
    }
    return {};
}

// What the environment adds once the command line is read: egress settings, and for the docker backend where
// its engine is (the Docker CLI's variables; a bad one fails here, before any trial work).
// A trial command's signing: the key from the option or the environment, and somewhere for the envelope
// (`carries_json`: run --json prints it).
result<void, relay_error> settle_signing(env_lookup env, common_options& out, bool carries_json) {
    if (out.sign_key_file.empty()) {
        out.sign_key_file = env("MAKA_EVAL_SIGN_KEY_FILE").value_or("");
    }
    if (!out.attestation_path.empty() && out.sign_key_file.empty()) {
        return relay_error{
            relay_errc::usage,
            "--attestation needs a key to sign with: --sign-key FILE or MAKA_EVAL_SIGN_KEY_FILE"};
    }
    if (!out.sign_key_file.empty() && out.attestation_path.empty() && !carries_json) {
        return relay_error{relay_errc::usage,
                           "a signed result needs somewhere to go: --attestation FILE (or, "
                           "for run, --json, which carries it)"};
    }
    return {};
}

result<void, relay_error> settle_common(env_lookup env, common_options& out) {
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

relay_error token_on_command_line() {
    return relay_error{relay_errc::usage, "the relay token is never taken from the command line: set "
                                          "MAKA_EVAL_RELAY_TOKEN or use --token-file"};
}

} // namespace

std::string usage_text() {
    return "usage:\n" + std::string(connect_synopsis) + std::string(run_synopsis) +
           std::string(locate_synopsis) +
           "  maka-eval-relay keygen --out PREFIX\n"
           "      an Ed25519 key pair for signed results (PREFIX.key 0600, PREFIX.pub)\n"
           "  maka-eval-relay verify --key PUB.pem [--artifacts DIR] [--json] ENVELOPE\n"
           "      checks a signed trial result offline (exit 0), or names the first mismatch (exit 1)\n"
           "  maka-eval-relay --version | --help\n\noptions of connect and run (COMMAND --help lists a "
           "command's own):\n" +
           render_options(trial_commands, true) + std::string(environment_text);
}

std::string command_usage_text(std::string_view command) {
    if (command == "locate") {
        return "usage:\n" + std::string(locate_synopsis) + "options:\n" + render_options(locate_command);
    }
    const bool run = command == "run";
    return "usage:\n" + std::string(run ? run_synopsis : connect_synopsis) + "options:\n" +
           render_options(run ? run_command : connect_command) + std::string(environment_text);
}

result<common_options, relay_error> parse_locate(std::span<const std::string_view> args, env_lookup env) {
    common_options out;
    out.backend = backend_kind::docker;
    parse_target to(out);
    for (std::size_t i = 0; i < args.size(); ++i) {
        auto applied = apply_option(args, i, locate_command, to);
        if (!applied) {
            std::string takes;
            for (const auto& row : option_table()) {
                if ((row.commands & locate_command) != 0) {
                    takes += (takes.empty() ? "" : ", ") + std::string(row.names);
                }
            }
            return relay_error{relay_errc::usage, "locate takes " + takes + ", not " + std::string(args[i])};
        }
        if (!*applied) {
            return applied->error();
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

result<std::string, relay_error> read_secret_file(const std::string& path) {
    auto read = read_private_file(path, 65536);
    if (!read) {
        const auto& why = read.error();
        switch (why.fault) {
        case private_file_fault::unopenable:
            return relay_error{relay_errc::usage, path + ": " + why.error.message()};
        case private_file_fault::unreadable:
            return relay_error{relay_errc::usage,
                               path + ": " +
                                   (why.error == boost::system::errc::file_too_large
                                        ? std::string("longer than 64 KiB (a relay token is one line)")
                                        : why.error.message())};
        case private_file_fault::not_regular:
        case private_file_fault::not_ours:
        case private_file_fault::shared:
            break;
        }
        return relay_error{relay_errc::usage,
                           path + " must be a regular file owned by this user with mode 0600"};
    }
    std::string text = std::move(*read);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
        text.pop_back();
    }
    return result<std::string, relay_error>(boost::system::in_place_value, std::move(text));
}

result<connect_options, relay_error> parse_connect(std::span<const std::string_view> args, env_lookup env) {
    connect_options out;
    parse_target to(out.common, &out, nullptr, env);
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--token" || args[i].starts_with("--token=")) {
            return token_on_command_line();
        }
        auto applied = apply_option(args, i, connect_command, to);
        if (!applied) {
            return relay_error{relay_errc::usage, "unknown or incomplete option " + std::string(args[i])};
        }
        if (!*applied) {
            return applied->error();
        }
    }
    if (out.host.empty() || !to.port_seen) {
        return relay_error{relay_errc::usage, "connect needs --host and --port"};
    }
    if (!to.token_file.empty()) {
        auto token = read_secret_file(to.token_file);
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
    if (to.instruction_file) {
        // Whole or not at all: `ready` carries it, and an orchestrator line is at most 1 MiB.
        auto text = posix::read_file(*to.instruction_file, contracts::control_line_limit_bytes);
        if (!text) {
            return relay_error{relay_errc::usage,
                               *to.instruction_file + ": cannot be read (" +
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
    if (auto signing = settle_signing(env, out.common, false); !signing) {
        return signing.error();
    }
    return out;
}

// What the orchestrator side would refuse after the trial started (exit 4) is a usage error here, before it.
result<void, relay_error> check_run(const run_options& out) {
    if ((out.interactive || out.tty) && out.common.backend == backend_kind::bridge) {
        return relay_error{
            relay_errc::usage,
            "-i and -t need a backend that streams to the subject while it runs (local, docker): "
            "the bridge's runner takes a command's input only before it starts"};
    }
    if (out.remove_work_dir && (out.common.backend != backend_kind::local || !out.common.work_dir.empty())) {
        return relay_error{relay_errc::usage,
                           "--rm removes the work directory the local backend makes for itself: "
                           "not with --work-dir (yours) or another backend"};
    }
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
    return {};
}

result<run_options, relay_error> parse_run(std::span<const std::string_view> args, env_lookup env) {
    run_options out;
    parse_target to(out.common, nullptr, &out, env);
    std::size_t i = 0;
    for (; i < args.size() && args[i] != "--"; ++i) {
        if (args[i] == "--token" || args[i].starts_with("--token=")) {
            return token_on_command_line();
        }
        auto applied = apply_option(args, i, run_command, to);
        if (!applied) {
            return relay_error{relay_errc::usage, args[i].starts_with("-")
                                                      ? "unknown or incomplete option " + std::string(args[i])
                                                      : "the command goes after --: maka-eval-relay run "
                                                        "[OPTIONS] -- " +
                                                            std::string(args[i]) + " …"};
        }
        if (!*applied) {
            return applied->error();
        }
    }
    if (i + 1 >= args.size()) {
        return relay_error{relay_errc::usage, "run needs a command after --"};
    }
    out.argv.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
    if (auto checked = check_run(out); !checked) {
        return checked.error();
    }
    if (auto settled = settle_common(env, out.common); !settled) {
        return settled.error();
    }
    if (auto signing = settle_signing(env, out.common, out.json); !signing) {
        return signing.error();
    }
    return out;
}

backend_options backend_options_of(const common_options& options) {
    const helper_source helper{options.helper_path, options.helper_in_container};
    const subject_placement subject{options.cwd, options.user};
    switch (options.backend) {
    case backend_kind::docker:
        return docker_options{helper,
                              subject,
                              options.container,
                              options.compose_project,
                              options.compose_service,
                              options.engine,
                              milliseconds(options.engine_timeout_ms),
                              options.keep_leftovers};
    case backend_kind::bridge:
        return bridge_options{helper, subject, options.bridge_fd, options.bridge_switches_user,
                              options.bridge_fresh};
    case backend_kind::local:
        break;
    }
    return local_options{helper, subject, options.work_dir};
}

std::optional<std::uint64_t> parse_duration_ms(std::string_view text) {
    std::uint64_t count = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), count);
    const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
    std::uint64_t scale = 0;
    if (unit.empty() || unit == "s") {
        scale = 1000;
    } else if (unit == "ms") {
        scale = 1;
    } else if (unit == "m") {
        scale = 60'000;
    } else if (unit == "h") {
        scale = 3'600'000;
    }
    constexpr std::uint64_t most = std::uint64_t{30} * 24 * 3'600'000; // 30 days: past it, a typo
    if (ec != std::errc() || end == text.data() || scale == 0 || count == 0 || count > most / scale) {
        return std::nullopt;
    }
    return count * scale;
}

trial_config trial_config_of(const common_options& options) {
    trial_config config;
    if (options.time_limit_ms) {
        config.time_limit = milliseconds(*options.time_limit_ms);
        config.time_limit_text = options.time_limit_text;
    }
    config.graces.term = milliseconds(options.term_grace_ms);
    config.graces.kill = milliseconds(options.kill_grace_ms);
    config.teardown_budget = milliseconds(options.teardown_timeout_ms);
    config.egress_required = options.egress_required;
    config.egress_host = options.egress_host;
    config.policy_sidecar = options.policy_sidecar;
    config.task_environment = options.task_environment;
    config.mask = options.mask;
    config.artifact_limit = options.artifact_limit;
    config.keep_leftovers = options.keep_leftovers;
    config.trust_reused_container = options.trust_reused_container;
    return config;
}

} // namespace maka_eval::relay
