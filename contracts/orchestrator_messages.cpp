// Orchestrator messages: validation in the original's order, Python-identical serialization.
#include "contracts/orchestrator_messages.hpp"

#include "contracts/limits.hpp"
#include "contracts/result_frame.hpp"
#include "contracts/table_category.hpp"
#include "contracts/wire_json.hpp"

#include <algorithm>
#include <optional>

namespace maka_eval::contracts {
namespace {

namespace json = boost::json;

// The first ten are the original relay's exact texts; the orchestrator and operators grep for them.
constexpr name_table<message_error, 12> message_category_messages{{
    {message_error::invalid_relay_message, "invalid Maka Eval relay message"},
    {message_error::invalid_credentials, "invalid Maka Eval credentials"},
    {message_error::invalid_environment, "invalid Maka Eval environment"},
    {message_error::environment_overlaps_credentials, "Maka Eval environment overlaps credentials"},
    {message_error::invalid_stdout_policy, "invalid Maka Eval stdout policy"},
    {message_error::invalid_result_token, "invalid Maka Eval result token"},
    {message_error::reserved_name, "Maka Eval environment contains a reserved name"},
    {message_error::invalid_environment_name, "invalid Maka Eval environment name"},
    {message_error::invalid_credential_name, "invalid Maka Eval credential name"},
    {message_error::invalid_command, "invalid Maka Eval command"},
    {message_error::invalid_ready, "relay sent an invalid ready message"},
    {message_error::invalid_execution_result, "relay returned an invalid execution result"},
}};

bool has_nul(std::string_view text) {
    return text.find('\0') != std::string_view::npos;
}

// A {str: str} object, in order; nullopt when anything else.
std::optional<variables> string_map(const json::value* value) {
    if (value == nullptr || !value->is_object()) {
        return std::nullopt;
    }
    variables out;
    for (const auto& member : value->get_object()) {
        if (!member.value().is_string() || has_nul(member.key()) || has_nul(member.value().get_string())) {
            return std::nullopt;
        }
        out.emplace_back(member.key(), member.value().get_string());
    }
    return out;
}

bool contains(const variables& vars, std::string_view name) {
    return std::any_of(vars.begin(), vars.end(), [&](const auto& entry) { return entry.first == name; });
}

bool is_string(const json::object& value, std::string_view key, std::string_view expected) {
    const auto* field = value.if_contains(key);
    return field != nullptr && field->is_string() && field->get_string() == expected;
}

std::string line(const json::object& object) {
    return to_wire(object) + "\n";
}

} // namespace

const boost::system::error_category& message_category() noexcept {
    static const table_category instance("maka_eval.message", message_category_messages,
                                         "unknown message error");
    return instance;
}

boost::system::error_code make_error_code(message_error e) noexcept {
    return {static_cast<int>(e), message_category()};
}

bool is_variable_name(std::string_view name) {
    auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
    return !name.empty() && alpha(name.front()) &&
           std::all_of(name.begin(), name.end(), [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}

json::object to_json(const variables& vars) {
    json::object out;
    for (const auto& [name, value] : vars) {
        out[name] = value;
    }
    return out;
}

std::string_view to_string(termination value) {
    return value == termination::exited ? "exited" : "framework_timeout";
}

json::object to_json(const diagnostic& value) {
    json::object out;
    out["category"] = to_string(value.kind);
    if (value.kind != category::none) {
        out["bytes"] = value.bytes;
        out["sha256"] = value.sha256;
    }
    return out;
}

std::string serialize(const ready_message& message) {
    return line({{"token", message.token},
                 {"kind", "ready"},
                 {"instruction", message.instruction},
                 {"cwd", message.cwd}});
}

std::string serialize(const executed_message& message) {
    return line({{"token", message.token},
                 {"kind", "executed"},
                 {"termination", to_string(message.termination)},
                 {"exitCode", message.exit_code},
                 {"stdout", message.stdout_text},
                 {"diagnostic", to_json(message.diagnostic)}});
}

std::string serialize_execute(std::string_view token, const execute_request& request) {
    json::array args;
    for (std::size_t i = 1; i < request.argv.size(); ++i) {
        args.emplace_back(request.argv[i]);
    }
    return line({{"token", token},
                 {"kind", "execute"},
                 {"command", request.argv.empty() ? std::string() : request.argv.front()},
                 {"args", std::move(args)},
                 {"environment", to_json(request.environment)},
                 {"credentials", to_json(request.credentials)},
                 {"resultToken", request.result_token},
                 {"captureStdout", request.capture_stdout}});
}

std::string serialize_verify(std::string_view token) {
    return line({{"token", token}, {"kind", "verify"}});
}

boost::system::result<void> require_message(const json::object& value, std::string_view token,
                                            std::string_view kind) {
    if (!is_string(value, "token", token) || !is_string(value, "kind", kind)) {
        return message_error::invalid_relay_message;
    }
    return {};
}

boost::system::result<execute_request> validate_execute(const json::object& value) {
    execute_request request;
    auto credentials = string_map(value.if_contains("credentials"));
    if (!credentials) {
        return message_error::invalid_credentials;
    }
    // An absent environment is empty; an explicit null is not.
    static const json::value empty_object = json::object();
    const auto* environment_field = value.if_contains("environment");
    auto environment = string_map(environment_field != nullptr ? environment_field : &empty_object);
    if (!environment) {
        return message_error::invalid_environment;
    }
    for (const auto& entry : *credentials) {
        if (contains(*environment, entry.first)) {
            return message_error::environment_overlaps_credentials;
        }
    }
    if (const auto* capture = value.if_contains("captureStdout")) {
        if (!capture->is_bool()) {
            return message_error::invalid_stdout_policy;
        }
        request.capture_stdout = capture->get_bool();
    }
    const auto* token = value.if_contains("resultToken");
    if (token == nullptr || !token->is_string() || !is_result_token(token->get_string())) {
        return message_error::invalid_result_token;
    }
    request.result_token = token->get_string();
    if (contains(*credentials, result_token_variable) || contains(*environment, result_token_variable)) {
        return message_error::reserved_name;
    }
    if (!std::all_of(environment->begin(), environment->end(),
                     [](const auto& e) { return is_variable_name(e.first); })) {
        return message_error::invalid_environment_name;
    }
    if (!std::all_of(credentials->begin(), credentials->end(),
                     [](const auto& e) { return is_variable_name(e.first); })) {
        return message_error::invalid_credential_name;
    }
    const auto* command = value.if_contains("command");
    const auto* args = value.if_contains("args");
    if (command == nullptr || !command->is_string() || command->get_string().empty() ||
        has_nul(command->get_string()) || args == nullptr || !args->is_array()) {
        return message_error::invalid_command;
    }
    request.argv.emplace_back(command->get_string());
    for (const auto& arg : args->get_array()) {
        if (!arg.is_string() || has_nul(arg.get_string())) {
            return message_error::invalid_command;
        }
        request.argv.emplace_back(arg.get_string());
    }
    request.environment = std::move(*environment);
    request.credentials = std::move(*credentials);
    return request;
}

boost::system::result<ready_message> check_ready(const json::object& value, std::string_view token) {
    const auto* instruction = value.if_contains("instruction");
    const auto* cwd = value.if_contains("cwd");
    if (!is_string(value, "token", token) || !is_string(value, "kind", "ready") || instruction == nullptr ||
        !instruction->is_string() || cwd == nullptr || !cwd->is_string() ||
        !cwd->get_string().starts_with("/")) {
        return message_error::invalid_ready;
    }
    return ready_message{std::string(token), std::string(instruction->get_string()),
                         std::string(cwd->get_string())};
}

boost::system::result<executed_message> check_executed(const json::object& value, std::string_view token) {
    executed_message message;
    message.token = token;
    const auto* term = value.if_contains("termination");
    const auto* code = value.if_contains("exitCode");
    const auto* out = value.if_contains("stdout");
    const auto* diag_field = value.if_contains("diagnostic");
    const auto diag = diag_field != nullptr && diag_field->is_object()
                          ? diagnostic_from_json(diag_field->get_object())
                          : std::nullopt;
    if (!is_string(value, "token", token) || !is_string(value, "kind", "executed") || term == nullptr ||
        !term->is_string() || code == nullptr || !code->is_int64() || out == nullptr || !out->is_string() ||
        !diag) {
        return message_error::invalid_execution_result;
    }
    if (term->get_string() == "exited") {
        message.termination = termination::exited;
    } else if (term->get_string() == "framework_timeout") {
        message.termination = termination::framework_timeout;
    } else {
        return message_error::invalid_execution_result;
    }
    message.exit_code = code->get_int64();
    message.stdout_text = out->get_string();
    message.diagnostic = *diag;
    return message;
}

} // namespace maka_eval::contracts
