// The bridge protocol: the relay's requests to the trial runner's adapter (relay/harbor, Python), which owns
// the runner's environment object, and the adapter's replies. NDJSON over an inherited socket; requests
// carry an `id` and may overlap (the subject's run is in flight while a cancel is asked for), so replies
// are matched by id, not by order. Schemas: contracts/schema/bridge-*.schema.json; golden lines:
// tests/contracts/vectors/bridge-messages.jsonl, which both sides' tests read.
//
//   relay → adapter  {"op":"exec","command":S,"cwd":S|null,"user":S|null,"timeoutSec":N|null,
//                     "onAbandon":S|null[,"onAbandonUpload":{"source":HOST_PATH,"target":PATH}],"id":N}
//                    {"op":"service_exec","service":S,"command":S,"id":N}
//                    {"op":"upload","source":HOST_PATH,"target":PATH,"id":N}
//                    {"op":"stop","id":N}
//   adapter → relay  {"ok":true,"returnCode":N,"stdout":S,"stderr":S,"id":N}   (exec, service_exec)
//                    {"ok":true,"id":N}                                          (upload, stop)
//                    {"ok":false,"error":S,"id":N}
//
// `onAbandon` is the command the adapter runs (as the same `user`) if the relay vanishes while that exec is
// in flight (the bridge's dead-man switch: the run exec has no stdin to close), after uploading
// `onAbandonUpload` when given (the helper the command runs, which a root subject may have deleted).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <boost/system/result.hpp>

namespace maka_eval::contracts {

// An exec on the runner's environment; empty strings are null on the wire: the environment's default.
struct bridge_exec {
    std::string command; // a shell command line, as the trial runner's exec takes it
    std::string cwd;
    std::string user;
    std::optional<std::chrono::seconds> timeout;
    std::string on_abandon;
    std::string on_abandon_source{}; // with on_abandon_target: uploaded before `on_abandon` runs
    std::string on_abandon_target{};
    friend bool operator==(const bridge_exec&, const bridge_exec&) = default;
};
struct bridge_service_exec {
    std::string service; // a compose service beside the subject's (Harbor only)
    std::string command;
    friend bool operator==(const bridge_service_exec&, const bridge_service_exec&) = default;
};
struct bridge_upload {
    std::string source; // a file on the relay's host
    std::string target; // where it goes in the environment
    friend bool operator==(const bridge_upload&, const bridge_upload&) = default;
};
struct bridge_stop { // the last resort: stop(delete=True)
    friend bool operator==(const bridge_stop&, const bridge_stop&) = default;
};
using bridge_request = std::variant<bridge_exec, bridge_service_exec, bridge_upload, bridge_stop>;

// Why a line is not a message of this protocol, said for the log.
struct bridge_error {
    std::string message;
};
[[noreturn]] void throw_exception_from_error(const bridge_error& e, const boost::source_location& location);

// "exec", "service_exec", "upload", "stop".
[[nodiscard]] std::string_view op_name(const bridge_request& request);
// One request line, newline-terminated, in the key order above (Python's json.dumps bytes).
[[nodiscard]] std::string serialize_bridge_request(std::int64_t id, const bridge_request& request);
// A request line as the adapter reads it (for the golden tests and the fuzzer); a failure says why.
[[nodiscard]] boost::system::result<std::pair<std::int64_t, bridge_request>, bridge_error>
parse_bridge_request(std::string_view line);

struct bridge_reply {
    std::int64_t id = 0;
    bool ok = false;
    std::optional<std::int64_t> return_code; // exec and service_exec replies
    std::string stdout_text;
    std::string stderr_text;
    std::string error; // why not, when !ok
    friend bool operator==(const bridge_reply&, const bridge_reply&) = default;
};

// A reply line of at most `limit` bytes. Only a line that is not an object with an integer `id` fails (the
// bridge is then broken); anything else is a reply, `ok` only when it says `"ok":true`.
[[nodiscard]] boost::system::result<bridge_reply, bridge_error> parse_bridge_reply(std::string_view line,
                                                                                   std::size_t limit);
// A reply line as the adapter writes it (ok, returnCode, stdout, stderr | error, id), newline-terminated.
[[nodiscard]] std::string serialize_bridge_reply(const bridge_reply& reply);

} // namespace maka_eval::contracts
