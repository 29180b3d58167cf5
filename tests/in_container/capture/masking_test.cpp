// Credential values masked out of the artifacts and the live output, as the supervisor writes them, and the
// receipt that vouches for the files (docs/security.md).
#include "contracts/digest.hpp"
#include "contracts/receipt.hpp"
#include "contracts/wire_json.hpp"
#include "in_container/fixture.hpp"

#include <filesystem>
#include <string>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval;
using namespace maka_eval::test;

const std::string key = "sk-test-ABCDEFGHIJKLMNOP";

// Runs `script` with KEY among the credentials (and following the output), to its report.
struct masked_run {
    masked_run(const scratch& dir, const std::string& script, bool follow = true) {
        session s;
        auto request = dir.request({"sh", "-c", script});
        request.credentials = {{"KEY", key}};
        request.follow = follow;
        s.start(request);
        while (true) {
            auto message = s.next(30000);
            REQUIRE(message);
            if (const auto* output = std::get_if<contracts::output_message>(&*message)) {
                shown += output->data;
            } else if (const auto* r = std::get_if<contracts::report_message>(&*message)) {
                report = *r;
                break;
            }
        }
        s.process.close_stdin();
        CHECK(s.process.wait() == 0);
    }
    std::string shown; // the live output, both streams
    contracts::report_message report;
};

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
        ++n;
    }
    return n;
}

TEST_CASE("a credential printed whole, split, byte by byte, on stderr and past a 64 KiB read is masked") {
    scratch dir;
    const masked_run run(dir, "printf 'whole %s\\n' \"$KEY\"; "
                              "printf 'split %s' sk-test-ABCD; sleep 0.2; printf 'EFGHIJKLMNOP\\n'; "
                              "printf 'bytes %s\\n' \"$KEY\" | dd bs=1 2>/dev/null; "
                              "printf '%s' \"$KEY\" | base64; "
                              "head -c 65530 /dev/zero | tr '\\0' x; printf '%s' \"$KEY\"; "
                              "head -c 500000 /dev/zero | tr '\\0' y; echo; "
                              "echo \"to stderr $KEY\" >&2");
    const std::string out = read_text(dir.artifact(true));
    const std::string err = read_text(dir.artifact(false));
    CHECK(out.find(key) == std::string::npos);
    CHECK(err.find(key) == std::string::npos);
    CHECK(run.shown.find(key) == std::string::npos);
    CHECK(out.find("\nsplit ***\n") != std::string::npos);
    CHECK(out.find("\nbytes ***\n") != std::string::npos);
    CHECK(count(out, "***") == 5);
    CHECK(err == "to stderr ***\n");
    CHECK(count(run.shown, "***") == 6); // what was shown is what was kept
    CHECK(run.report.stdout_artifact.masked == 5);
    CHECK(run.report.stderr_artifact.masked == 1);
    // The report counts what the subject wrote, as before.
    CHECK(run.report.stdout_artifact.bytes ==
          out.size() + 4 * (key.size() - 3) + (32 - 3)); // 4 values, 1 base64
}

TEST_CASE(
    "the receipt: every artifact's size and digest as on disk, complete, and the frame decoded unmasked") {
    scratch dir;
    const masked_run run(
        dir, "echo \"$KEY\"; echo oops >&2; maka-eval-helper frame \"{\\\"k\\\":\\\"$KEY\\\"}\"", false);
    // The verdict is the original's, from what the subject wrote: the orchestrator's wire is unchanged.
    CHECK(run.report.stdout_text == "{\"k\":\"" + key + "\"}");
    CHECK(read_text(dir.artifact(true)).find(key) == std::string::npos);
    const auto text = read_text(dir.artifacts() + "/" + std::string(contracts::receipt_artifact_name));
    const auto receipt = contracts::parse_object(text, 1 << 20).value();
    CHECK(receipt.at("kind").as_string() == "receipt");
    const auto& artifacts = receipt.at("artifacts").as_array();
    REQUIRE(artifacts.size() == 3);
    for (const auto& entry : artifacts) {
        const auto& a = entry.as_object();
        const std::string name(a.at("name").as_string());
        CAPTURE(name);
        const std::string file = read_text(dir.artifacts() + "/" + name);
        CHECK(a.at("bytes").to_number<std::uint64_t>() == file.size());
        CHECK(a.at("sha256").as_string() == contracts::sha256_hex(file));
        CHECK(a.at("complete").as_bool());
        // On stdout: the value, and the frame's line, whose base64 holds the value at some alignment.
        CHECK(a.at("masked").to_number<std::uint64_t>() == (name == "maka-subject.stdout.txt" ? 2U : 0U));
    }
}

TEST_CASE("an artifact cut at its limit is not complete in the receipt, and says why") {
    scratch dir;
    session s;
    auto request = dir.request({"sh", "-c", "head -c 5000 /dev/zero"});
    request.artifact_limit = 1000;
    s.start(request);
    while (true) {
        auto message = s.next(30000);
        REQUIRE(message);
        if (std::holds_alternative<contracts::report_message>(*message)) {
            break;
        }
    }
    const auto receipt =
        contracts::parse_object(
            read_text(dir.artifacts() + "/" + std::string(contracts::receipt_artifact_name)), 1 << 20)
            .value();
    const auto& out = receipt.at("artifacts").as_array().at(0).as_object();
    CHECK(out.at("bytes").to_number<std::uint64_t>() == 1000);
    CHECK_FALSE(out.at("complete").as_bool());
    CHECK(out.at("incomplete").as_string() == "cut at the artifact limit of 1000 bytes");
    s.process.close_stdin();
    CHECK(s.process.wait() == 0);
}

} // namespace
