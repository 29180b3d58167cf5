// The bridge protocol's messages: the golden lines (written by Python as the adapter writes) both ways, and
// what a broken or hostile line from the adapter becomes.
#include "contracts/bridge_messages.hpp"
#include "contracts/wire_json.hpp"

#include <fstream>
#include <string>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::contracts;

TEST_CASE(
    "bridge golden lines round-trip byte for byte: requests as the relay writes them, replies as read") {
    std::ifstream file(std::string(MAKA_EVAL_TEST_DATA) + "/contracts/vectors/bridge-messages.jsonl");
    REQUIRE(file.good());
    std::string raw;
    int requests = 0;
    int replies = 0;
    while (std::getline(file, raw)) {
        const auto entry = parse_object(raw, 1 << 20).value();
        const std::string name(entry.at("name").as_string());
        const std::string schema(entry.at("schema").as_string());
        const std::string line = std::string(entry.at("line").as_string()) + "\n";
        CAPTURE(name);
        if (schema == "bridge-reply") {
            const auto reply = parse_bridge_reply(line, 1 << 20);
            REQUIRE(reply.has_value());
            CHECK(serialize_bridge_reply(*reply) == line);
            ++replies;
        } else {
            const auto request = parse_bridge_request(line);
            REQUIRE(request.has_value());
            CHECK(schema == "bridge-" + std::string(op_name(request->second)));
            CHECK(serialize_bridge_request(request->first, request->second) == line);
            ++requests;
        }
    }
    CHECK(requests == 6);
    CHECK(replies == 5);
}

TEST_CASE("the relay's exec request: empty strings are null, the abandon upload only when given") {
    bridge_exec run{"helper run", "", "root", std::nullopt, "helper cancel"};
    CHECK(serialize_bridge_request(3, run) ==
          R"({"op":"exec","command":"helper run","cwd":null,"user":"root","timeoutSec":null,)"
          R"("onAbandon":"helper cancel","id":3})"
          "\n");
    run.on_abandon_source = "/host/helper";
    run.on_abandon_target = "/logs/agent/helper";
    run.timeout = std::chrono::seconds(60);
    const auto line = serialize_bridge_request(4, run);
    CHECK(line.find(R"("timeoutSec":60,)") != std::string::npos);
    CHECK(line.find(R"("onAbandonUpload":{"source":"/host/helper","target":"/logs/agent/helper"},"id":4})") !=
          std::string::npos);
    const auto back = parse_bridge_request(line);
    REQUIRE(back.has_value());
    CHECK(std::get<bridge_exec>(back->second) == run);
}

TEST_CASE("an adapter reply without an integer id breaks the bridge, anything else is a reply") {
    for (const char* line :
         {"", "[]", "not json", R"({"ok":true})", R"({"ok":true,"id":"7"})", R"({"ok":true,"id":1.5})"}) {
        CAPTURE(line);
        const auto reply = parse_bridge_reply(line, 1 << 20);
        REQUIRE_FALSE(reply.has_value());
        CHECK(reply.error().message == "the adapter sent an unreadable reply");
    }
    // `ok` only when it says true; a returnCode of another type is no returnCode.
    for (const char* line : {R"({"id":1})", R"({"ok":"true","id":1})", R"({"ok":1,"id":1})"}) {
        CAPTURE(line);
        CHECK_FALSE(parse_bridge_reply(line, 1 << 20).value().ok);
    }
    const auto odd = parse_bridge_reply(R"({"ok":true,"returnCode":"0","stdout":5,"id":2})", 1 << 20).value();
    CHECK(odd.ok);
    CHECK_FALSE(odd.return_code.has_value());
    CHECK(odd.stdout_text.empty());
    // Over the limit: not read.
    CHECK_FALSE(parse_bridge_reply(R"({"ok":true,"id":1,"stdout":"0123456789"})", 16).has_value());
}

TEST_CASE("a request line the adapter could not act on is refused, saying what is wrong") {
    // Not structured bindings: clang 14 cannot capture one in CAPTURE's lambda.
    for (const auto& refused :
         {std::pair{R"({"op":"exec","id":1})",
                    "exec: command, cwd, user and onAbandon are strings (or null)"},
          std::pair{R"({"op":"exec","command":"x","timeoutSec":0,"id":1})",
                    "exec: timeoutSec is a positive integer (or null)"},
          std::pair{R"({"op":"exec","command":"x","onAbandonUpload":{"source":"a"},"id":1})",
                    "exec: onAbandonUpload is {source, target}"},
          std::pair{R"({"op":"upload","source":"a","id":1})", "upload: source and target are strings"},
          std::pair{R"({"op":"resize","id":1})", "unknown op resize"},
          std::pair{R"({"op":"stop"})", "a request needs an integer id and an op"}}) {
        const std::string_view line = refused.first;
        CAPTURE(line);
        const auto request = parse_bridge_request(line);
        REQUIRE_FALSE(request.has_value());
        CHECK(request.error().message == refused.second);
    }
}

} // namespace
