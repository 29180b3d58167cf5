// Orchestrator messages: the original's `execute` checks in order with its texts; what the orchestrator
// accepts for `ready` and `executed`.
#include "contracts/orchestrator_messages.hpp"
#include "contracts/wire_json.hpp"
#include "support/result_printing.hpp"

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::contracts;
namespace json = boost::json;

const std::string rt(32, '0');

json::object execute_with(std::initializer_list<std::pair<std::string_view, json::value>> changes,
                          std::initializer_list<std::string_view> removed = {}) {
    json::object o{{"token", "t"},
                   {"kind", "execute"},
                   {"command", "/opt/agent"},
                   {"args", json::array{"run"}},
                   {"environment", json::object{{"MODE", "offline"}}},
                   {"credentials", json::object{{"API_KEY", "s"}}},
                   {"resultToken", rt},
                   {"captureStdout", true}};
    for (const auto& [key, value] : changes) {
        o[key] = value;
    }
    for (const auto key : removed) {
        o.erase(key);
    }
    return o;
}

boost::system::error_code refusal(const json::object& o) {
    const auto r = validate_execute(o);
    return r ? boost::system::error_code{} : r.error();
}

TEST_CASE("a valid execute gives argv, variables in order, token and policy") {
    const auto r = validate_execute(execute_with({})).value();
    CHECK(r.argv == std::vector<std::string>{"/opt/agent", "run"});
    CHECK(r.environment == variables{{"MODE", "offline"}});
    CHECK(r.credentials == variables{{"API_KEY", "s"}});
    CHECK(r.result_token == rt);
    CHECK(r.capture_stdout);
}

TEST_CASE("defaults: absent environment is empty, absent captureStdout is true") {
    const auto r = validate_execute(execute_with({}, {"environment", "captureStdout"})).value();
    CHECK(r.environment.empty());
    CHECK(r.capture_stdout);
}

TEST_CASE("each refusal carries the original's text") {
    CHECK(refusal(execute_with({}, {"credentials"})).message() == "invalid Maka Eval credentials");
    CHECK(refusal(execute_with({{"credentials", json::object{{"A", 1}}}})) ==
          message_error::invalid_credentials);
    CHECK(refusal(execute_with({{"credentials", nullptr}})) == message_error::invalid_credentials);
    CHECK(refusal(execute_with({{"environment", nullptr}})).message() == "invalid Maka Eval environment");
    CHECK(refusal(execute_with({{"environment", json::array{}}})) == message_error::invalid_environment);
    CHECK(refusal(execute_with({{"environment", json::object{{"API_KEY", "x"}}}})).message() ==
          "Maka Eval environment overlaps credentials");
    CHECK(refusal(execute_with({{"captureStdout", "false"}})).message() == "invalid Maka Eval stdout policy");
    CHECK(refusal(execute_with({{"captureStdout", nullptr}})) == message_error::invalid_stdout_policy);
    CHECK(refusal(execute_with({{"resultToken", json::string(32, 'A')}})).message() ==
          "invalid Maka Eval result token");
    CHECK(refusal(execute_with({}, {"resultToken"})) == message_error::invalid_result_token);
    CHECK(refusal(execute_with({{"resultToken", json::string(31, '0')}})) ==
          message_error::invalid_result_token);
    CHECK(refusal(execute_with({{"environment", json::object{{"MAKA_EVAL_RESULT_TOKEN", "x"}}}})).message() ==
          "Maka Eval environment contains a reserved name");
    CHECK(refusal(execute_with({{"credentials", json::object{{"MAKA_EVAL_RESULT_TOKEN", "x"}}}})) ==
          message_error::reserved_name);
    CHECK(refusal(execute_with({{"environment", json::object{{"1BAD", "x"}}}})).message() ==
          "invalid Maka Eval environment name");
    // C9: the credential-name refusal.
    CHECK(refusal(execute_with({{"credentials", json::object{{"BAD-NAME", "x"}}}})).message() ==
          "invalid Maka Eval credential name");
    CHECK(refusal(execute_with({{"environment", json::object{{"", "x"}}}})) ==
          message_error::invalid_environment_name);
}

TEST_CASE("checks run in the original's order") {
    // Both credentials and environment invalid: credentials first.
    CHECK(refusal(execute_with({{"credentials", nullptr}, {"environment", nullptr}})) ==
          message_error::invalid_credentials);
    // Overlap is found before a bad stdout policy, which is found before a bad token.
    CHECK(refusal(execute_with({{"environment", json::object{{"API_KEY", "x"}}}, {"captureStdout", 1}})) ==
          message_error::environment_overlaps_credentials);
    CHECK(refusal(execute_with({{"captureStdout", 1}, {"resultToken", "x"}})) ==
          message_error::invalid_stdout_policy);
    // A reserved name is reported before a malformed one; environment names before credential names.
    CHECK(refusal(execute_with(
              {{"environment", json::object{{"bad-1", "x"}, {"MAKA_EVAL_RESULT_TOKEN", "y"}}}})) ==
          message_error::reserved_name);
    CHECK(refusal(execute_with({{"environment", json::object{{"bad-1", "x"}}},
                                {"credentials", json::object{{"bad-2", "x"}}}})) ==
          message_error::invalid_environment_name);
}

TEST_CASE("command and args are type-checked after the original's checks") {
    CHECK(refusal(execute_with({{"args", "run"}})).message() == "invalid Maka Eval command");
    CHECK(refusal(execute_with({{"args", json::array{1}}})) == message_error::invalid_command);
    CHECK(refusal(execute_with({}, {"command"})) == message_error::invalid_command);
    CHECK(refusal(execute_with({{"command", ""}})) == message_error::invalid_command);
    CHECK(refusal(execute_with({{"args", json::array{std::string("a\0b", 3)}}})) ==
          message_error::invalid_command);
    // The original's own checks still come first.
    CHECK(refusal(execute_with({{"args", "run"}, {"resultToken", "x"}})) ==
          message_error::invalid_result_token);
}

TEST_CASE("require_message checks token and kind, and only strings match") {
    const json::object m{{"token", "t"}, {"kind", "verify"}};
    CHECK(require_message(m, "t", "verify"));
    CHECK(require_message(m, "u", "verify").error().message() == "invalid Maka Eval relay message");
    CHECK_FALSE(require_message(m, "t", "execute"));
    CHECK_FALSE(require_message(json::object{{"token", 1}, {"kind", "verify"}}, "1", "verify"));
    CHECK_FALSE(require_message(json::object{{"kind", "verify"}}, "t", "verify"));
}

TEST_CASE("the orchestrator's ready check") {
    CHECK(check_ready(json::object{{"token", "t"}, {"kind", "ready"}, {"instruction", "x"}, {"cwd", "/w"}},
                      "t"));
    CHECK_FALSE(check_ready(
        json::object{{"token", "t"}, {"kind", "ready"}, {"instruction", "x"}, {"cwd", "w"}}, "t"));
    CHECK_FALSE(
        check_ready(json::object{{"token", "t"}, {"kind", "ready"}, {"instruction", 1}, {"cwd", "/w"}}, "t"));
    CHECK_FALSE(check_ready(
        json::object{{"token", "u"}, {"kind", "ready"}, {"instruction", "x"}, {"cwd", "/w"}}, "t"));
}

TEST_CASE("the orchestrator's executed check accepts exactly the two diagnostic shapes") {
    auto with = [](json::value diag) {
        return json::object{{"token", "t"},  {"kind", "executed"}, {"termination", "exited"},
                            {"exitCode", 0}, {"stdout", ""},       {"diagnostic", std::move(diag)}};
    };
    const std::string hex(64, 'a');
    CHECK(check_executed(with(json::object{{"category", "none"}}), "t"));
    CHECK(check_executed(
        with(json::object{{"category", "unstructured-output"}, {"bytes", 3}, {"sha256", hex}}), "t"));
    CHECK_FALSE(check_executed(with(json::object{{"category", "none"}, {"bytes", 0}}), "t"));
    CHECK_FALSE(check_executed(with(json::object{{"category", "unstructured-output"}, {"bytes", 3}}), "t"));
    CHECK_FALSE(
        check_executed(with(json::object{{"category", "bogus"}, {"bytes", 3}, {"sha256", hex}}), "t"));
    CHECK_FALSE(check_executed(
        with(json::object{{"category", "result-frame-missing"}, {"bytes", -1}, {"sha256", hex}}), "t"));
    CHECK_FALSE(check_executed(with(json::object{{"category", "result-frame-missing"},
                                                 {"bytes", 1},
                                                 {"sha256", std::string(64, 'A')}}),
                               "t"));
    CHECK_FALSE(check_executed(
        with(json::object{{"category", "result-frame-missing"}, {"bytes", 1}, {"sha256", hex}, {"x", 1}}),
        "t"));
}

TEST_CASE("executed serializes in the original's key order") {
    executed_message m{"t", termination::framework_timeout, 124, "",
                       diagnostic::over(category::result_frame_missing, "")};
    CHECK(
        serialize(m) ==
        R"({"token":"t","kind":"executed","termination":"framework_timeout","exitCode":124,"stdout":"","diagnostic":{"category":"result-frame-missing","bytes":0,"sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}})"
        "\n");
}

} // namespace
