// The JSON Schemas in contracts/schema/ against the golden lines: every key a line carries is a declared
// property, every required property is there, and primitive types and constants agree. Keeps the schemas
// honest when a message changes.
#include "contracts/digest.hpp"
#include "contracts/receipt.hpp"
#include "contracts/wire_json.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::contracts;
namespace json = boost::json;

json::object load(const std::string& name) {
    std::ifstream in(std::string(MAKA_EVAL_TEST_DATA) + "/../contracts/schema/" + name + ".schema.json");
    std::ostringstream text;
    text << in.rdbuf();
    return parse_object(text.str(), 1 << 20).value();
}

bool type_matches(const json::object& schema, const json::value& value) {
    if (const auto* constant = schema.if_contains("const")) {
        return *constant == value;
    }
    if (const auto* choices = schema.if_contains("enum")) {
        for (const auto& choice : choices->as_array()) {
            if (choice == value) {
                return true;
            }
        }
        return false;
    }
    const auto* type = schema.if_contains("type");
    if (type == nullptr) {
        return true; // oneOf and the like: checked by the message tests
    }
    const auto one = [&value](const json::string& t) {
        return (t == "string" && value.is_string()) ||
               (t == "integer" && (value.is_int64() || value.is_uint64())) ||
               (t == "boolean" && value.is_bool()) || (t == "array" && value.is_array()) ||
               (t == "object" && value.is_object()) || (t == "null" && value.is_null());
    };
    if (type->is_array()) { // ["string", "null"]: any of them
        const auto& types = type->as_array();
        return std::any_of(types.begin(), types.end(),
                           [&](const json::value& t) { return one(t.as_string()); });
    }
    return one(type->as_string());
}

void check_against(const json::object& schema, const json::object& message) { // NOLINT(misc-no-recursion)
    const auto& properties = schema.at("properties").as_object();
    for (const auto& member : message) {
        CAPTURE(member.key());
        REQUIRE(properties.contains(member.key()));
        const auto& property = properties.at(member.key()).as_object();
        CHECK(type_matches(property, member.value()));
        if (member.value().is_object() && property.contains("properties")) {
            check_against(property, member.value().as_object()); // a nested object's own keys
        }
    }
    for (const auto& required : schema.at("required").as_array()) {
        CAPTURE(required);
        CHECK(message.contains(required.as_string()));
    }
}

// Each line of a vectors file of {"name", …, "line"} entries: the entry and the message it holds.
std::vector<std::pair<json::object, json::object>> golden_entries(const std::string& file) {
    std::ifstream in(std::string(MAKA_EVAL_TEST_DATA) + "/contracts/vectors/" + file);
    std::vector<std::pair<json::object, json::object>> out;
    std::string raw;
    while (std::getline(in, raw)) {
        auto entry = parse_object(raw, 1 << 20).value();
        auto message = parse_object(std::string(entry.at("line").as_string()), 1 << 20).value();
        out.emplace_back(std::move(entry), std::move(message));
    }
    return out;
}

TEST_CASE("every orchestrator golden line conforms to its schema") {
    const auto entries = golden_entries("orchestrator-messages.jsonl");
    for (const auto& golden : entries) { // not a structured binding: CAPTURE's lambda (clang 14)
        const auto& entry = golden.first;
        CAPTURE(entry.at("name"));
        check_against(load("orchestrator-" + std::string(entry.at("message").as_string())), golden.second);
    }
    CHECK(entries.size() == 9);
}

TEST_CASE("every session golden line conforms to its schema") {
    std::ifstream file(std::string(MAKA_EVAL_TEST_DATA) + "/contracts/vectors/session-messages.jsonl");
    std::string line;
    int checked = 0;
    while (std::getline(file, line)) {
        const auto message = parse_object(line, 1 << 20).value();
        std::string kind(message.at("kind").as_string());
        if (kind == "exited" || kind == "settled") {
            kind = "report";
        }
        CAPTURE(kind);
        check_against(load("session-" + kind), message);
        ++checked;
    }
    CHECK(checked == 15);
}

TEST_CASE("every bridge golden line conforms to its schema, nested objects included") {
    const auto entries = golden_entries("bridge-messages.jsonl");
    for (const auto& golden : entries) { // not a structured binding: CAPTURE's lambda (clang 14)
        const auto& entry = golden.first;
        CAPTURE(entry.at("name"));
        check_against(load(std::string(entry.at("schema").as_string())), golden.second);
    }
    CHECK(entries.size() == 11);
}

TEST_CASE("the artifacts' receipt conforms to its schema, an incomplete artifact's reason included") {
    const auto schema = load("receipt");
    const std::vector<artifact_receipt> entries{
        {"maka-subject.stdout.txt", 10, sha256_hex("0123456789"), true, {}, 2},
        {"maka-subject.stderr.txt", 0, sha256_hex(""), false, "cut at the artifact limit of 0 bytes", 0}};
    const auto receipt = to_json(entries);
    check_against(schema, receipt);
    const auto& item =
        schema.at("properties").as_object().at("artifacts").as_object().at("items").as_object();
    for (const auto& entry : receipt.at("artifacts").as_array()) {
        check_against(item, entry.as_object());
    }
}

TEST_CASE("the schema directory holds exactly the messages of the three protocols, the receipt and the "
          "signed result's statement") {
    int count = 0;
    for (const auto& entry :
         std::filesystem::directory_iterator(std::string(MAKA_EVAL_TEST_DATA) + "/../contracts/schema")) {
        CHECK(entry.path().string().ends_with(".schema.json"));
        ++count;
    }
    // The session's input, input-taken and resize among them; the statement is checked against its schema
    // where it is made (tests/relay/attest/attestation_test.cpp).
    CHECK(count == 23);
}

} // namespace
