// Relay ⇄ helper session messages: defaults, version and kind checks, and failures that name the field.
#include "contracts/session_messages.hpp"
#include "contracts/wire_json.hpp"
#include "support/result_printing.hpp"

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::contracts;

const std::string rt(32, 'f');

std::string failure_of(std::string_view line) {
    const auto r = parse_session_message(line);
    return r ? std::string("ok") : r.error().message();
}

TEST_CASE("a minimal run takes the documented defaults") {
    const auto m = parse_session_message(R"({"kind":"run","version":1,"argv":["/bin/true"],"resultToken":")" +
                                         rt + "\"}");
    REQUIRE(m.has_value());
    const auto& run = std::get<run_request>(*m);
    CHECK(run.argv == std::vector<std::string>{"/bin/true"});
    CHECK(run.capture_stdout);
    CHECK(run.term_grace_ms == 20000);
    CHECK(run.kill_grace_ms == 10000);
    CHECK(run.drain_ms == 2000);
    CHECK(run.environment.empty());
}

TEST_CASE("failures name what is wrong") {
    CHECK(failure_of("not json") == "session line is not a JSON object: message line is not JSON");
    CHECK(failure_of(R"({"version":1})") == "unknown session message kind: kind");
    CHECK(failure_of(R"({"kind":"launch","version":1})") == "unknown session message kind: launch");
    CHECK(failure_of(R"({"kind":"cancel","version":2})") == "session protocol version mismatch: version");
    CHECK(failure_of(R"({"kind":"cancel"})") == "session protocol version mismatch: version");
    CHECK(failure_of(R"({"kind":"run","version":1,"argv":["a",2],"resultToken":")" + rt + "\"}") ==
          "invalid session message field: argv[1]");
    CHECK(failure_of(R"({"kind":"run","version":1,"argv":[],"resultToken":")" + rt + "\"}") ==
          "invalid session message field: argv");
    CHECK(failure_of(R"({"kind":"run","version":1,"argv":["a"],"resultToken":"x"})") ==
          "invalid session message field: resultToken");
    CHECK(failure_of(R"({"kind":"run","version":1,"argv":["a"],"environment":{"A":1},"resultToken":")" + rt +
                     "\"}") == "invalid session message field: environment.A");
    CHECK(failure_of(R"({"kind":"run","version":1,"argv":["a"],"termGraceMs":-1,"resultToken":")" + rt +
                     "\"}") == "invalid session message field: termGraceMs");
    CHECK(failure_of(R"({"kind":"started","version":1,"pid":0,"pgid":1,"startTime":1})") ==
          "invalid session message field: pid");
}

TEST_CASE("oversized lines are refused before parsing") {
    const std::string huge(session_line_limit_bytes + 1, ' ');
    CHECK(failure_of(huge) == "session line is not a JSON object: message line exceeds the size limit");
}

TEST_CASE("a report with a malformed diagnostic is refused") {
    CHECK(
        failure_of(
            R"({"kind":"exited","version":1,"exitCode":0,"signal":"","stdout":"","diagnostic":{"category":"none","bytes":0},"artifacts":{"stdout":{"path":"a","bytes":0,"sha256":""},"stderr":{"path":"b","bytes":0,"sha256":""}},"runMs":0})") ==
        "invalid session message field: diagnostic");
}

TEST_CASE("a report's diagnostic is held to the orchestrator's rules: lowercase hex, a safe byte count") {
    const auto report_with = [](const std::string& diag) {
        return R"({"kind":"exited","version":1,"exitCode":0,"signal":"","stdout":"","diagnostic":)" + diag +
               R"(,"artifacts":{"stdout":{"path":"a","bytes":0,"sha256":""},"stderr":{"path":"b","bytes":0,"sha256":""}},"runMs":0})";
    };
    const std::string lower(64, 'a');
    const std::string upper(64, 'A');
    CHECK(failure_of(report_with(R"({"category":"unstructured-output","bytes":3,"sha256":")" + lower +
                                 "\"}")) == "ok");
    CHECK(failure_of(report_with(R"({"category":"unstructured-output","bytes":3,"sha256":")" + upper +
                                 "\"}")) == "invalid session message field: diagnostic");
    CHECK(failure_of(report_with(R"({"category":"unstructured-output","bytes":9007199254740992,"sha256":")" +
                                 lower + "\"}")) == "invalid session message field: diagnostic");
}

TEST_CASE("an error's code is one the helper knows, by name in both directions") {
    for (const auto fault :
         {helper_fault::bad_request, helper_fault::idle, helper_fault::busy,
          helper_fault::identity_unavailable, helper_fault::spawn_failed, helper_fault::artifacts_unavailable,
          helper_fault::run_failed, helper_fault::internal_error}) {
        const auto again = parse_session_message(serialize(error_message{fault, "why"})).value();
        CHECK(std::get<error_message>(again).code == fault);
        CHECK(helper_fault_from_string(to_string(fault)) == fault);
    }
    CHECK(serialize(error_message{helper_fault::spawn_failed, "m"}) ==
          R"({"kind":"error","version":1,"code":"spawn-failed","message":"m"})"
          "\n");
    CHECK(failure_of(R"({"kind":"error","version":1,"code":"on-fire","message":"m"})") ==
          "invalid session message field: code");
}

TEST_CASE("messages round-trip through JSON") {
    report_message report;
    report.settled = true;
    report.exit_code = 137;
    report.signal = "KILL";
    report.diagnostic = diagnostic::over(category::result_frame_missing, "x");
    report.reason = "relay-gone";
    report.signalled = 3;
    const auto again = parse_session_message(serialize(report)).value();
    const auto& r = std::get<report_message>(again);
    CHECK(r.settled);
    CHECK(r.exit_code == 137);
    CHECK(r.signal == "KILL");
    CHECK(r.diagnostic == report.diagnostic);
    CHECK(r.reason == "relay-gone");
    CHECK(r.signalled == 3);
}

TEST_CASE("an output line built directly is the line the generic serializer builds, its bytes raw after it") {
    std::string data;
    for (int n = 0; n < 3000; n += 331) {
        data.append(static_cast<std::size_t>(n % 7), static_cast<char>(n & 0xFF));
        data.append("\n\r\0", 3); // raw: newlines and NULs included
        for (const auto stream : {output_stream_name::stdout_stream, output_stream_name::stderr_stream}) {
            const output_message m{stream, data, static_cast<std::uint64_t>(n) * 1000003U};
            const auto wire = serialize(m);
            const auto line = to_wire(to_json(m)) + "\n";
            REQUIRE(wire.size() == line.size() + data.size());
            CHECK(wire.substr(0, line.size()) == line);
            CHECK(wire.substr(line.size()) == data);
            const auto again =
                parse_session_message(std::string_view(line).substr(0, line.size() - 1)).value();
            CHECK(std::get<output_message>(again).size == data.size());
            CHECK(std::get<output_message>(again).data.empty()); // the reader of the stream takes the bytes
            CHECK(std::get<output_message>(again).dropped == m.dropped);
        }
    }
    // Past the protocol's bound, a line is refused.
    CHECK_FALSE(parse_session_message(R"({"kind":"output","version":1,"stream":"stdout","size":)" +
                                      std::to_string(output_chunk_bytes + 1) + R"(,"dropped":0})"));
}

TEST_CASE("an input line is built as output's: a size, then the stdin's bytes raw after it") {
    std::string data;
    for (int n = 0; n < 3000; n += 331) {
        data.append(static_cast<std::size_t>(n % 5), static_cast<char>(n & 0xFF));
        data.append("\n\"\0", 3);
        const input_message m{data};
        const auto wire = serialize(m);
        const auto line = to_wire(to_json(m)) + "\n";
        REQUIRE(wire.size() == line.size() + data.size());
        CHECK(wire.substr(0, line.size()) == line);
        CHECK(wire.substr(line.size()) == data);
        const auto again = parse_session_message(std::string_view(line).substr(0, line.size() - 1)).value();
        CHECK(std::get<input_message>(again).size == data.size());
        CHECK_FALSE(std::get<input_message>(again).eof);
    }
    const auto eof = parse_session_message(R"({"kind":"input","version":1,"eof":true})").value();
    CHECK(std::get<input_message>(eof).eof);
    // A size past the chunk bound, an EOF with bytes, and a chunk without a size are refused.
    CHECK_FALSE(parse_session_message(R"({"kind":"input","version":1,"size":)" +
                                      std::to_string(input_chunk_bytes + 1) + "}"));
    CHECK_FALSE(parse_session_message(R"({"kind":"input","version":1,"eof":true,"size":3})"));
    CHECK_FALSE(parse_session_message(R"({"kind":"input","version":1})"));
}

TEST_CASE(
    "an error's message is cut short on the wire, whatever it quotes (runners read lines under 64 KiB)") {
    // A spawn failure quotes argv[0], which the orchestrator may make up to a control line long.
    const std::string line =
        serialize(error_message{helper_fault::spawn_failed, "cannot execute " + std::string(200000, '\x01')});
    CHECK(line.size() < 32 * 1024);
    const auto back = parse_session_message(line);
    REQUIRE(back.has_value());
    const auto& error = std::get<error_message>(*back);
    CHECK(error.code == helper_fault::spawn_failed);
    CHECK(error.message.starts_with("cannot execute \x01"));
    CHECK(error.message.ends_with(" bytes cut)"));
}

} // namespace

TEST_CASE(
    "a run request written straight out is the bytes of the generic writer, duplicates, escapes and all") {
    run_request run;
    run.argv = {"sh", "-c", "echo \"quoted\" \\ tab\there\nnewline \xC3\xA9 \xF0\x9F\x98\x80"};
    run.cwd = "/work space";
    run.environment = {{"MODE", "offline"}, {"DUP", "first"}, {"X", "\x01\x1F\x7F"}, {"DUP", "last"}};
    run.credentials = {{"API_KEY", std::string(5000, 'k') + "\"\\"}, {"OTHER", ""}};
    run.result_token = "0123456789abcdef0123456789abcdef";
    run.capture_stdout = false;
    run.scope_path = "/logs/agent/.maka-eval-x.pid";
    run.user = "1000:1000";
    run.keep_leftovers = true;
    run.follow = true;
    for (const bool masked : {false, true}) {
        if (masked) {
            run.mask = {"MODE", "DUP"};
        }
        const session_message message = run;
        CHECK(serialize(message) == to_wire(to_json(message)) + "\n");
        const auto parsed = parse_session_message(serialize(message));
        REQUIRE(parsed);
        const auto& back = std::get<run_request>(*parsed);
        CHECK(back.argv == run.argv);
        CHECK(back.credentials == run.credentials);
    }
}
