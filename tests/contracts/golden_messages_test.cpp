// Golden wire lines, checked both ways: parse → typed message → serialize must give back the same bytes.
// The orchestrator lines were written by Python's json.dumps (the original's serializer), so this is the
// byte-compatibility check for `ready`, `execute`, `executed` and `verify`.
#include "contracts/orchestrator_messages.hpp"
#include "contracts/session_messages.hpp"
#include "contracts/wire_json.hpp"
#include "support/result_printing.hpp"

#include <fstream>
#include <string>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::contracts;

std::string vectors(const char* name) {
    return std::string(MAKA_EVAL_TEST_DATA) + "/contracts/vectors/" + name;
}

TEST_CASE("orchestrator golden lines round-trip byte for byte") {
    std::ifstream file(vectors("orchestrator-messages.jsonl"));
    REQUIRE(file.good());
    std::string raw;
    int cases = 0;
    while (std::getline(file, raw)) {
        auto entry = parse_object(raw, 1 << 20).value();
        const std::string name(entry["name"].as_string());
        const std::string kind(entry["message"].as_string());
        const std::string line = std::string(entry["line"].as_string()) + "\n";
        CAPTURE(name);
        const auto object = parse_object(line, 1 << 20).value();
        const std::string token(object.at("token").as_string());
        std::string again;
        if (kind == "ready") {
            again = serialize(check_ready(object, token).value());
        } else if (kind == "executed") {
            again = serialize(check_executed(object, token).value());
        } else if (kind == "execute") {
            REQUIRE(require_message(object, token, "execute"));
            again = serialize_execute(token, validate_execute(object).value());
        } else if (kind == "verify") {
            REQUIRE(require_message(object, token, "verify"));
            again = serialize_verify(token);
        }
        CHECK(again == line);
        ++cases;
    }
    CHECK(cases == 9);
}

TEST_CASE("session golden lines round-trip byte for byte") {
    std::ifstream file(vectors("session-messages.jsonl"));
    REQUIRE(file.good());
    std::string line;
    int cases = 0;
    while (std::getline(file, line)) {
        CAPTURE(line);
        auto message = parse_session_message(line);
        REQUIRE(message.has_value());
        CHECK(serialize(*message) == line + "\n");
        ++cases;
    }
    CHECK(cases == 15);
}

} // namespace
