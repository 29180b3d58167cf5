// Conformance: every carrier of the original's projection vectors must project to exactly the original's
// `stdout` and `diagnostic` (category, bytes, sha256). The file is ../shared/vectors/frame-projection.jsonl,
// copied verbatim; no case is special-cased.
#include "contracts/orchestrator_messages.hpp"
#include "contracts/python_text.hpp"
#include "contracts/result_frame.hpp"
#include "contracts/wire_json.hpp"
#include "support/result_printing.hpp"

#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::contracts;

TEST_CASE("all 1,500 projection vectors of the original relay match exactly") {
    std::ifstream file(std::string(MAKA_EVAL_TEST_DATA) + "/contracts/vectors/frame-projection.jsonl");
    REQUIRE(file.good());
    std::string line;
    int total = 0;
    int mismatches = 0;
    std::ostringstream report;
    while (std::getline(file, line)) {
        if (line.empty()) {
            continue;
        }
        ++total;
        auto object = parse_object(line, 16 * 1024 * 1024);
        REQUIRE(object);
        const auto carrier = python::b64decode_strict(std::string((*object)["carrier_b64"].as_string()));
        REQUIRE(carrier);
        const auto token = std::string((*object)["resultToken"].as_string());
        const bool capture = (*object)["captureStdout"].as_bool();
        const auto got = project(*carrier, token, capture);
        const std::string expected_stdout((*object)["stdout"].as_string());
        const std::string expected_diagnostic = to_wire((*object)["diagnostic"]);
        const std::string got_diagnostic = to_wire(to_json(got.diagnostic));
        if (got.stdout_text != expected_stdout || got_diagnostic != expected_diagnostic) {
            if (++mismatches <= 5) {
                report << "line " << total << ": expected stdout "
                       << to_wire(boost::json::string(expected_stdout)) << " diagnostic "
                       << expected_diagnostic << "\n    got stdout "
                       << to_wire(boost::json::string(got.stdout_text)) << " diagnostic " << got_diagnostic
                       << "\n";
            }
        }
    }
    INFO("first mismatches:\n" << report.str());
    CHECK(total == 1500);
    CHECK(mismatches == 0);
}

} // namespace
