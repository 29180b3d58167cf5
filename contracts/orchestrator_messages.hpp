// The orchestrator wire: `ready` → `execute` → `executed` → `verify`, one compact JSON object per line.
//
// Relay side: `validate_execute` applies the original relay's checks in its order with its error texts
//; `serialize` writes `ready`/`executed` byte-identically to it. Orchestrator side:
// `check_ready`/`check_executed` accept exactly what harness-executor.ts accepts (§2.2), for the loopback
// orchestrator and for conformance tests.
#pragma once

#include "contracts/diagnostic.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/system/result.hpp>

namespace maka_eval::contracts {

enum class message_error {
    invalid_relay_message = 1, // wrong token or kind
    invalid_credentials,
    invalid_environment,
    environment_overlaps_credentials,
    invalid_stdout_policy,
    invalid_result_token,
    reserved_name,
    invalid_environment_name,
    invalid_credential_name,
    invalid_command,
    invalid_ready,
    invalid_execution_result,
};
[[nodiscard]] const boost::system::error_category& message_category() noexcept;
[[nodiscard]] boost::system::error_code make_error_code(message_error e) noexcept;

// Name/value pairs in the order the message gave them (the order the original exports them in).
using variables = std::vector<std::pair<std::string, std::string>>;

struct ready_message {
    std::string token;
    std::string instruction;
    std::string cwd;
};

struct execute_request {
    std::vector<std::string> argv; // command, then args
    variables environment;
    variables credentials;
    std::string result_token;
    bool capture_stdout = true;
};

enum class termination { exited, framework_timeout };
[[nodiscard]] std::string_view to_string(termination value);

struct executed_message {
    std::string token;
    contracts::termination termination = termination::exited;
    long long exit_code = 0;
    std::string stdout_text;
    contracts::diagnostic diagnostic;
};

// Each serializer returns one line including its "\n".
[[nodiscard]] std::string serialize(const ready_message& message);
[[nodiscard]] std::string serialize(const executed_message& message);
[[nodiscard]] std::string serialize_execute(std::string_view token, const execute_request& request);
[[nodiscard]] std::string serialize_verify(std::string_view token);

[[nodiscard]] boost::json::object to_json(const diagnostic& value);
// Name → value pairs as one JSON object, in order.
[[nodiscard]] boost::json::object to_json(const variables& vars);

// `[A-Za-z_][A-Za-z0-9_]*`, the original's rule for environment and credential names.
[[nodiscard]] bool is_variable_name(std::string_view name);

// `value.token == token && value.kind == kind`, else "invalid Maka Eval relay message".
[[nodiscard]] boost::system::result<void> require_message(const boost::json::object& value,
                                                          std::string_view token, std::string_view kind);

// The checks of the original's _prepare_command, in its order. Beyond the original: `command` must be a
// string and `args` an array of strings (the original would fail later with a TypeError or splat a string
// into characters), and no name or value may hold a NUL, which no process environment can carry.
[[nodiscard]] boost::system::result<execute_request> validate_execute(const boost::json::object& value);

// What the orchestrator accepts (harness-executor.ts).
[[nodiscard]] boost::system::result<ready_message> check_ready(const boost::json::object& value,
                                                               std::string_view token);
[[nodiscard]] boost::system::result<executed_message> check_executed(const boost::json::object& value,
                                                                     std::string_view token);

} // namespace maka_eval::contracts

template <>
struct boost::system::is_error_code_enum<maka_eval::contracts::message_error> : std::true_type {};
