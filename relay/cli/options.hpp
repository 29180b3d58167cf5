// The relay's command line and environment: `connect` (production), `run` (manual debugging), `locate`.
//
// One table of options (options.cpp) is both the parser and the help: each row names an option, its value,
// the commands that take it, what it does (its default from contracts/defaults.hpp) and how it is applied.
// What is read here is handed on narrow: the trial gets a `trial_config`, the backend its own options.
// Secrets never come from argv: the relay token comes from MAKA_EVAL_RELAY_TOKEN or a 0600 --token-file,
// `run --credential NAME` takes the value from the relay's own environment. Egress settings come from
// MAKA_EVAL_EGRESS_REQUIRED and MAKA_EVAL_EGRESS_ALLOWED_HOST, as for the original.
#pragma once

#include "contracts/defaults.hpp"
#include "contracts/limits.hpp"
#include "contracts/orchestrator_messages.hpp"
#include "policy/egress_gate.hpp"
#include "relay/backends/backend_options.hpp"
#include "relay/engine/engine_endpoint.hpp"
#include "relay/support/environment.hpp"
#include "relay/support/error.hpp"
#include "relay/trial/log.hpp"
#include "relay/trial/trial.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/system/result.hpp>

namespace maka_eval::relay {

// Where the subject runs (--env): here, in a Docker container, or in the trial runner's environment.
enum class backend_kind { local, docker, bridge };

// The options every command shares, as the command line gives them.
struct common_options {
    backend_kind backend = backend_kind::local;
    std::string container;   // docker: the container (name or id) of --env docker:CONTAINER
    std::string helper_path; // empty: next to the relay binary, then the build tree, then PATH
    std::string work_dir;    // local backend: where scope and artifacts go (empty: a new temp dir)
    std::string cwd;         // the subject's working directory (empty: the environment's own default)
    std::uint32_t term_grace_ms = contracts::defaults::term_grace_ms;
    std::uint32_t kill_grace_ms = contracts::defaults::kill_grace_ms;
    std::int64_t teardown_timeout_ms = contracts::defaults::teardown_timeout_ms;
    std::uint32_t engine_timeout_ms = contracts::defaults::engine_timeout_ms;
    log_format log = log_format::text;
    bool quiet = false;
    bool egress_required = false;           // MAKA_EVAL_EGRESS_REQUIRED == "1"
    std::optional<std::string> egress_host; // MAKA_EVAL_EGRESS_ALLOWED_HOST
    std::string policy_sidecar{policy::default_policy_service};
    std::string compose_project;            // docker: find the container by compose labels instead
    std::string compose_service = "main";   // docker: with --compose-project
    std::optional<std::string> docker_host; // docker: --docker-host, over DOCKER_HOST
    engine_endpoint engine;                 // docker: where the engine is, from the above and the environment
    std::string helper_in_container;        // docker, bridge: the helper is already there (no upload)
    int bridge_fd = -1;                     // bridge: the adapter's socket, inherited
    bool bridge_switches_user = false;      // bridge: the runner's exec honours user= (root steps possible)
    bool bridge_fresh = false;              // bridge: no trial ran in this environment yet (install first)
    std::string user;                       // docker, local as root: the subject's user (docker exec -u)
    std::uint64_t artifact_limit = contracts::default_artifact_limit_bytes; // per artifact, on disk
    bool keep_leftovers = false;           // do not stop what earlier trials' subjects left running
    bool trust_reused_container = false;   // credentials may go where an earlier root subject ran
    std::vector<std::string> mask;         // --mask NAME: values masked like credentials' values
    contracts::variables task_environment; // --task-env-fd: the task's own environment, under `execute`'s
    std::optional<std::uint64_t> time_limit_ms; // --timeout: the trial is cancelled once it elapses
    std::string time_limit_text;                // as given, for the summary
    // --sign-key (or MAKA_EVAL_SIGN_KEY_FILE): the Ed25519 key the trial's result is signed with, and
    // --attestation, where the envelope goes (relay/attest/).
    std::string sign_key_file;
    std::string attestation_path;
};

// A duration as --timeout takes it: N followed by ms, s, m or h ("1500ms", "30s", "5m"); a bare N is
// seconds, as timeout(1) reads it. nullopt for anything else, zero included.
[[nodiscard]] std::optional<std::uint64_t> parse_duration_ms(std::string_view text);

struct connect_options {
    common_options common;
    std::string host;
    std::uint16_t port = 0;
    std::string token; // from the environment or --token-file
    std::string instruction;
    int follow_fd = -1; // --follow-fd: the subject's output, live, on this inherited descriptor
};

struct run_options {
    common_options common;
    bool json = false;
    std::optional<bool> follow;     // --follow / --no-follow; unset: when stdout is a terminal and not --json
    bool exit_with_subject = false; // --exit-with-subject: a completed trial exits with the subject's code
    bool remove_work_dir = false;   // --rm: the local backend's own work directory goes after the trial
    bool capture_stdout = true;
    bool interactive = false; // -i: the relay's stdin is the subject's
    bool tty = false;         // -t: the subject gets a pseudo-terminal (the relay's own in raw mode)
    contracts::variables environment;
    contracts::variables credentials;
    std::vector<std::string> argv;
    std::string instruction = "manual run";
};

[[nodiscard]] boost::system::result<connect_options, relay_error>
parse_connect(std::span<const std::string_view> args, env_lookup env = &process_env);
[[nodiscard]] boost::system::result<run_options, relay_error>
parse_run(std::span<const std::string_view> args, env_lookup env = &process_env);
// `locate`: the compose project and service, and the engine (the docker backend's, from the same options
// and variables).
[[nodiscard]] boost::system::result<common_options, relay_error>
parse_locate(std::span<const std::string_view> args, env_lookup env = &process_env);

// What the backend and the trial are given of the command line.
[[nodiscard]] backend_options backend_options_of(const common_options& options);
[[nodiscard]] trial_config trial_config_of(const common_options& options);

// The original's rule: a positive integer, else "Maka Eval teardown timeout is invalid".
[[nodiscard]] std::optional<std::int64_t> parse_teardown_timeout(std::string_view text);

// Reads a secret file: a regular file owned by us and not accessible to group or others.
[[nodiscard]] boost::system::result<std::string, relay_error> read_secret_file(const std::string& path);

// Every command's usage, or one command's ("connect", "run", "locate"): from the option table.
[[nodiscard]] std::string usage_text();
[[nodiscard]] std::string command_usage_text(std::string_view command);

} // namespace maka_eval::relay
