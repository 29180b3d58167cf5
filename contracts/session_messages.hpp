// The relay ⇄ helper session: NDJSON over the helper's stdin/stdout (its stderr is a log).
//
// Every message carries `kind` and the protocol `version`. Helper → relay: hello, started, exited, settled,
// error, heartbeat, output (only when `run` asked to follow), input-taken (when `run` asked for input) and
// `pinned` from the pin-proxy subcommand. Relay → helper: run, cancel, input, resize. The `run` request is
// the only place secrets travel (environment, credentials, result token), which is why it is never logged and
// never written to a file the helper keeps. Parsing names the first bad field, so either side can answer a
// malformed message with a precise `error`.
#pragma once

#include "contracts/defaults.hpp"
#include "contracts/diagnostic.hpp"
#include "contracts/limits.hpp"
#include "contracts/orchestrator_messages.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/system/result.hpp>

namespace maka_eval::contracts {

inline constexpr std::int64_t session_protocol_version = 1;
// The `run` request carries the subject's environment; 4 MiB bounds it generously.
inline constexpr std::size_t session_line_limit_bytes = std::size_t{4} * 1024 * 1024;
// How often a session helper says it is alive while the subject runs; the relay allows three missed beats.
inline constexpr std::uint32_t session_heartbeat_ms = defaults::heartbeat_ms;

enum class session_error {
    bad_line = 1,     // too long, not UTF-8, not a JSON object
    unknown_kind,     // `kind` missing or not one this side accepts
    version_mismatch, // `version` is not session_protocol_version
    bad_field,        // a field is missing or of the wrong type or value
};
[[nodiscard]] const boost::system::error_category& session_category() noexcept;
[[nodiscard]] boost::system::error_code make_error_code(session_error e) noexcept;

// A failure and where it is ("args[2]", "environment.HOME"), for an error message a person can act on.
struct failure {
    boost::system::error_code code;
    std::string where;
    [[nodiscard]] std::string message() const;
};

struct hello_message {
    std::string helper_version;
    std::string cwd;
    std::int64_t pid = 0;
    std::int64_t uid = 0;
    std::int64_t gid = 0;
    variables capabilities; // "CapInh" … "CapAmb" → hex text, as /proc/self/status gives them
    std::string net_namespace;
    // The supervisor's own uid: 0 when the subject (uid/gid above) runs under a root supervisor it cannot
    // signal or read; equal to `uid` in same-uid mode, where the supervisor is within the subject's reach.
    std::int64_t supervisor_uid = 0;
    // The interval of `heartbeat` while a subject runs (session mode); 0: none (probe, older helpers).
    std::uint32_t heartbeat_ms = 0;
};

enum class subject_input { none, pipe, tty };
[[nodiscard]] std::string_view to_string(subject_input value);

struct run_request {
    std::vector<std::string> argv;
    std::string cwd; // empty: the helper's own
    variables environment;
    variables credentials;
    std::string result_token;
    bool capture_stdout = true;
    std::string scope_path;    // empty: /logs/agent/.maka-eval-<scope name>.pid
    std::string artifacts_dir; // empty: /logs/artifacts
    std::uint32_t term_grace_ms = defaults::term_grace_ms;
    std::uint32_t kill_grace_ms = defaults::kill_grace_ms;
    std::uint32_t drain_ms = defaults::drain_ms; // how long background holders of the pipes may keep them
    // Bytes of each artifact kept on disk; past it the file is truncated, while `bytes` and `sha256` still
    // cover everything the subject wrote.
    std::uint64_t artifact_limit = default_artifact_limit_bytes;
    // The subject's identity as `docker exec -u` takes it ("name", "uid", "uid:gid", "name:group"),
    // resolved by the helper from the environment's /etc/passwd and /etc/group. Empty: the helper's own.
    std::string user;
    // Leave processes of earlier trials' subjects running (default: stop them before this subject starts).
    bool keep_leftovers = false;
    // The subject shares its PID namespace with every process of the host (the local backend): the
    // namespace's allocation counter says nothing of it, so its processes are counted as seen (usage_meter).
    bool shared_pid_namespace = false;
    // Send the subject's output as `output` messages while it runs (run --follow). Best effort: what the
    // session cannot take at once is dropped and counted, never waited for.
    bool follow = false;
    // Names of `environment` entries whose values are masked out of the subject's output (artifacts and
    // live output), as the credentials' values always are (secret_mask.hpp).
    std::vector<std::string> mask;
    // What the subject's stdin is (run -i, -t): /dev/null as the original gave it, a pipe the relay feeds
    // through `input`, or a pseudo-terminal the helper makes (its own session, the terminal as its
    // controlling one, stdout and stderr merged into it) with `rows` × `cols` as its first window size.
    subject_input input = subject_input::none;
    std::uint16_t rows = 0;
    std::uint16_t cols = 0;
};

inline constexpr std::size_t stderr_tail_bytes = 1024;

// Relay → helper, after `run` asked for input: bytes for the subject's stdin, or its EOF. On the wire the
// line says `size` and that many raw bytes follow it, as for `output` (a forwarded stdin of gigabytes would
// otherwise be base64-encoded, JSON-scanned and decoded once per 32 KiB); a reader of the stream takes them.
// The relay never has more than input_window_bytes sent and not yet taken (`input-taken` says what the
// helper wrote on to the subject), so the helper holds at most that much and reads its control pipe at once
// whatever the subject does with its stdin: a `cancel` is never stuck behind input.
struct input_message {
    std::string data;
    bool eof = false;
    std::uint64_t size = 0; // parsed: the raw bytes that follow the line
};
inline constexpr std::size_t input_chunk_bytes = std::size_t{32} << 10U;
inline constexpr std::size_t input_window_bytes = std::size_t{1} << 20U;
// The helper says what it took once this much is untold (a quarter of the window: the relay, which waits
// with more than input_window_bytes - input_chunk_bytes untold, is never left waiting for a report).
inline constexpr std::size_t input_report_bytes = input_window_bytes / 4;
static_assert(input_report_bytes < input_window_bytes - input_chunk_bytes);
// Helper → relay: this many more bytes of input went to the subject (written to its pipe or terminal).
struct input_taken_message {
    std::uint64_t bytes = 0;
};
// Relay → helper: the terminal's new window size (run -t, on SIGWINCH); the kernel tells the subject.
struct resize_message {
    std::uint16_t rows = 0;
    std::uint16_t cols = 0;
};

struct cancel_request {
    std::string reason; // "cancel" | "relay-gone" …, for the report
};
// A cancel with this reason while the subject is already being settled ends its TERM grace at once: the
// KILL follows (a second Ctrl-C on `run`).
inline constexpr std::string_view kill_now_reason = "kill-now";

struct started_message {
    std::int64_t pid = 0;
    std::int64_t pgid = 0;
    std::uint64_t start_time =
        0; // /proc/<pid>/stat field 22, so a reused pid is never mistaken for the leader
};

struct artifact_summary {
    std::string path;
    std::uint64_t bytes = 0;
    std::string sha256;
    std::uint64_t written = 0; // bytes on disk: `bytes`, or the artifact limit when it was reached
    bool truncated = false;
    std::uint64_t masked = 0; // occurrences of secret values replaced by *** in the file (secret_mask.hpp)
    friend bool operator==(const artifact_summary&, const artifact_summary&) = default;
};

// What the subject consumed, from what the supervisor reaped (as the subject's child subreaper it reaps
// every process of the tree that ends before the report; what is left running for the verifier is not in
// it). Benchmark owners ask what an agent used; the orchestrator's wire does not carry it.
struct subject_usage {
    std::uint64_t user_ms = 0;      // CPU time in user mode, the whole reaped tree
    std::uint64_t system_ms = 0;    // CPU time in the kernel, the whole reaped tree
    std::uint64_t peak_rss_kib = 0; // the largest peak resident set of any one process of the tree
    // Process ids allocated in the supervisor's PID namespace while the subject ran: the processes it
    // started, exactly in a container of its own; on a shared host an upper bound (others' count too).
    std::uint64_t processes = 0;
    std::uint64_t wall_ms = 0; // start → the leader's exit
    // `processes` was counted by a census of the subject's tree (a shared PID namespace where the kernel's
    // fork events cannot be had): a lower bound. Said with the figure, not on the helper's stderr, which the
    // local backend shares with the relay's own (its JSON log, run --quiet).
    bool processes_lower_bound = false;
    static constexpr int census_interval_ms = 10; // how often that census looks (the schema says it too)
    friend bool operator==(const subject_usage&, const subject_usage&) = default;
};
[[nodiscard]] boost::json::object to_json(const subject_usage& usage);

// `exited` (the subject ended on its own) or `settled` (the helper stopped it).
struct report_message {
    bool settled = false;
    std::int64_t exit_code = 0; // 128 + n for a death by signal n
    std::string signal;         // "TERM", "KILL" … when it died by a signal, else empty
    std::string stdout_text;    // the projection, exactly what `executed` carries
    contracts::diagnostic diagnostic;
    artifact_summary stdout_artifact;
    artifact_summary stderr_artifact;
    std::uint64_t peak_rss_kib = 0;     // the helper's own peak resident memory
    std::optional<subject_usage> usage; // absent from helpers before it
    // The end of the subject's stderr as kept (masked, at most stderr_tail_bytes, valid UTF-8): why it
    // failed, for a person reading `run`'s summary. Empty when it wrote nothing there.
    std::string stderr_tail;
    // The receipt's text exactly as written to the artifacts directory (its one line and "\n"): what a signed
    // result lists, and its digest is the file's. Empty when no receipt was written, or from older helpers.
    std::string receipt;
    std::uint64_t run_ms = 0;    // start → leader exit
    std::uint64_t settle_ms = 0; // cancel → no child left (settled only)
    std::uint64_t signalled = 0; // processes signalled while settling
    std::string reason;          // settled: why
    bool quiesced = true;        // settled: false when processes were still alive after the KILL grace
};

// What an `error` message is about; the relay acts on the code (e.g. a failed start is reported as such, a
// missing identity makes it retry in same-uid mode), the message is for people.
enum class helper_fault {
    bad_request,           // a line the helper could not accept
    idle,                  // cancel with nothing running
    busy,                  // run while a subject is running
    identity_unavailable,  // the subject's user cannot be resolved or switched to
    spawn_failed,          // the subject could not be started
    artifacts_unavailable, // /logs/artifacts cannot be prepared
    run_failed,            // the bridge's run step failed or exited unexpectedly
    internal_error,        // the relay's own machinery failed (e.g. a bridge coroutine threw)
};
[[nodiscard]] std::string_view to_string(helper_fault value);
[[nodiscard]] std::optional<helper_fault> helper_fault_from_string(std::string_view text);

struct error_message {
    helper_fault code = helper_fault::internal_error;
    std::string message;
};

// The supervisor is alive and answering: sent every `heartbeat_ms` while the subject runs. A supervisor
// that is stopped (SIGSTOP from a root subject) or hung goes quiet, which the relay notices.
struct heartbeat_message {};

// A piece of the subject's output, sent as it is produced when `run` asked to follow. On the wire the line
// says `size`, and that many raw bytes follow it (no encoding: an exec's stream is as slow as the engine
// makes it, and base64 would make it carry a third more); `serialize` writes both, a reader of the stream
// takes the bytes into `data` after parsing the line (`size` is set, `data` empty, until then). `dropped`
// counts the bytes of this stream left out just before it because the session could not take them without
// making the subject wait. The last `output` of a stream may carry only a count.
enum class output_stream_name { stdout_stream, stderr_stream };
struct output_message {
    output_stream_name stream = output_stream_name::stdout_stream;
    std::string data;
    std::uint64_t dropped = 0;
    std::uint64_t size = 0; // parsed: the raw bytes that follow the line
};
// The most raw bytes one `output` carries.
inline constexpr std::size_t output_chunk_bytes = std::size_t{32} << 10U;

struct pinned_message {
    std::string ip;
    std::string host;
};

using session_message = std::variant<hello_message, run_request, cancel_request, started_message,
                                     report_message, error_message, pinned_message, heartbeat_message,
                                     output_message, input_message, input_taken_message, resize_message>;

[[nodiscard]] std::string serialize(const session_message& message); // one line with "\n"
[[nodiscard]] boost::json::object to_json(const session_message& message);
[[nodiscard]] boost::system::result<session_message, failure> parse_session_message(std::string_view line);
[[nodiscard]] boost::system::result<session_message, failure> from_json(const boost::json::object& object);

// Throws for boost::system::result<T, failure>::value().
[[noreturn]] void throw_exception_from_error(const failure& e, const boost::source_location& location);

} // namespace maka_eval::contracts

template <>
struct boost::system::is_error_code_enum<maka_eval::contracts::session_error> : std::true_type {};
