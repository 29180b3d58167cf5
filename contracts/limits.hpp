// Fixed names, prefixes and limits shared by the relay and the helper.
//
// These are wire facts of the original Python relay; changing one changes what the orchestrator or a
// subject sees, so they live in one place and nowhere else. The limits of our own session protocol between
// the relay and the helper (line size, heartbeat, chunk and tail sizes) are that protocol's, beside its
// messages in session_messages.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace maka_eval::contracts {

inline constexpr std::string_view result_frame_prefix = "MAKA-EVAL-RESULT-V1";
inline constexpr std::string_view scope_error_prefix = "MAKA-EVAL-SCOPE-ERROR-V1";
inline constexpr std::string_view result_token_variable = "MAKA_EVAL_RESULT_TOKEN";
// The helper's path: where the relay finds it (its environment), and where a subject finds the helper that
// supervises it, to print its frame with (`"$MAKA_EVAL_HELPER" frame …`).
inline constexpr std::string_view helper_path_variable = "MAKA_EVAL_HELPER";

// A frame's payload stays below PIPE_BUF on the producer side; the carrier bound keeps the projection cheap.
inline constexpr std::size_t payload_limit_bytes = std::size_t{2} * 1024;
inline constexpr std::size_t carrier_limit_bytes = std::size_t{64} * 1024;

// The original's asyncio reader gives up on a control line over 64 KiB. We accept up to 1 MiB so that an
// `execute` with a large environment still arrives, and refuse anything longer with a clear error.
inline constexpr std::size_t control_line_limit_bytes = std::size_t{1024} * 1024;

// The longest message text (an `error`'s message, a helper log line) the helper writes. Trial runners read
// an exec's output line by line and Harbor fails the whole exec on a line over 64 KiB: every line of ours
// stays far below that, whatever a request or a subject put into a message (JSON escaping at most 6x).
inline constexpr std::size_t message_text_limit_bytes = 4096;

// The scope exit code of the original wrapper when the scope file could not be published.
inline constexpr int scope_unavailable_exit_code = 111;
// What `executed` reports for a subject stopped because the framework timed out.
inline constexpr int framework_timeout_exit_code = 124;

// Each subject artifact is cut here on disk by default (--artifact-limit); its size and digest stay whole.
inline constexpr std::uint64_t default_artifact_limit_bytes = std::uint64_t{1} << 30U;

inline constexpr std::string_view artifacts_directory = "/logs/artifacts";
inline constexpr std::string_view stdout_artifact_name = "maka-subject.stdout.txt";
inline constexpr std::string_view stderr_artifact_name = "maka-subject.stderr.txt";
// What the subject consumed (subject_usage as JSON), written by the helper when the subject is done.
inline constexpr std::string_view usage_artifact_name = "maka-subject.usage.json";
inline constexpr std::string_view scope_directory = "/logs/agent";
// A root helper writes the artifacts in a root-only directory of this prefix inside the artifacts directory
// and publishes them when the subject is done (in_container/artifact_store.hpp): a supervisor that vanished
// leaves them there.
inline constexpr std::string_view staging_directory_prefix = ".maka-eval-staging-";

} // namespace maka_eval::contracts
