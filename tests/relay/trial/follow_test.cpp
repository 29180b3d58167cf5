// `maka-eval-relay run --follow` on the local backend: the subject's output shown as it is produced, in
// order and byte for byte, without a slow reader ever holding the subject back, with memory flat however
// much it writes, and with everything recorded (executed, artifacts) exactly as without following.
#include "contracts/digest.hpp"
#include "contracts/wire_json.hpp"
#include "in_container/fixture.hpp"
#include "relay/trial_fixture.hpp"
#include "support/child_process.hpp"
#include "support/process.hpp"

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <doctest/doctest.h>

// AddressSanitizer keeps freed memory in quarantine (256 MiB by default) and adds shadow memory: peak RSS
// says nothing about our own memory under it, so the bound is checked in the release build only.
#if defined(__SANITIZE_ADDRESS__)
#define MAKA_EVAL_MEASURES_MEMORY 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MAKA_EVAL_MEASURES_MEMORY 0
#endif
#endif
#ifndef MAKA_EVAL_MEASURES_MEMORY
#define MAKA_EVAL_MEASURES_MEMORY 1
#endif

namespace {

using namespace maka_eval;
using namespace maka_eval::test;
namespace fs = std::filesystem;

// A file or directory in the test's own scratch directory.
std::string at(const scratch& dir, const std::string& name) {
    return (dir.path() / name).string();
}

std::vector<std::string> run_argv(const scratch& dir, std::vector<std::string> options,
                                  const std::string& script) {
    std::vector<std::string> argv{relay_binary, "run",           "--helper", helper_binary,
                                  "--work-dir", at(dir, "work"), "-e",       "HELPER=" + helper_binary};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.insert(argv.end(), {"--", "sh", "-c", script});
    return argv;
}

std::uint64_t number_after(const std::string& log, const std::string& key) {
    const auto at = log.find(key);
    REQUIRE(at != std::string::npos);
    return std::stoull(log.substr(at + key.size()));
}

TEST_CASE("--follow: output appears while the subject still runs, in order, stdout here and stderr there") {
    scratch dir;
    const std::string go = at(dir, "go");
    // The subject cannot finish before the test has seen its first line: following is live, not replayed.
    child_process relay(run_argv(dir, {"--follow"},
                                 "echo one; echo err-one >&2; while [ ! -e " + go +
                                     " ]; do sleep 0.01; done; echo two; echo err-two >&2; echo three"),
                        base_env());
    const auto first = relay.read_line();
    REQUIRE(first);
    CHECK(*first == "one");
    std::ofstream(go).put('\n');
    CHECK(relay.read_line() == "two");
    CHECK(relay.read_line() == "three");
    CHECK(relay.read_line()->starts_with("ready "));
    CHECK(relay.wait() == 0);
    const auto& err = relay.stderr_text();
    const auto one = err.find("err-one\n");
    const auto two = err.find("err-two\n");
    REQUIRE(one != std::string::npos);
    REQUIRE(two != std::string::npos);
    CHECK(one < two);
}

TEST_CASE("--follow: binary output byte for byte, and executed and the artifacts as without it") {
    scratch dir;
    std::string all_bytes;
    for (int round = 0; round < 40; ++round) {
        for (int b = 0; b < 256; ++b) {
            all_bytes.push_back(static_cast<char>(b));
        }
    }
    std::ofstream(at(dir, "blob"), std::ios::binary) << all_bytes;
    // Binary noise around the frame on stdout, more of it on stderr.
    const std::string script = "cat " + at(dir, "blob") + "; \"$HELPER\" frame '{\"answer\":42}'; cat " +
                               at(dir, "blob") + " " + at(dir, "blob") + " >&2; printf 'tail\\000\\377'";
    const auto artifact = [&dir](const char* name) {
        return read_text(at(dir, "work") + "/artifacts/maka-subject." + name + ".txt");
    };
    const auto plain = run_process(run_argv(dir, {"--json", "--no-follow"}, script), "", base_env());
    REQUIRE(plain.exit_code == 0);
    const auto plain_out = artifact("stdout");
    const auto plain_err = artifact("stderr");
    // --quiet: the relay's stderr then holds only what was followed.
    const auto followed =
        run_process(run_argv(dir, {"--json", "--follow", "--quiet"}, script), "", base_env());
    REQUIRE(followed.exit_code == 0);
    const auto followed_out = artifact("stdout");

    // With --json, stdout is the JSON object alone; what was followed went to stderr, both streams whole.
    // The helper reads the two pipes as they fill, so their chunks may interleave there: each stream is
    // checked as a subsequence, in order, and nothing else is there.
    const auto in_order_within = [](const std::string& part, const std::string& whole) {
        std::size_t at = 0;
        for (const char c : whole) {
            if (at < part.size() && part[at] == c) {
                ++at;
            }
        }
        return at == part.size();
    };
    CHECK(followed.out.starts_with("{\"ready\""));
    CHECK(followed_out.starts_with(all_bytes));
    CHECK(followed_out.ends_with(std::string("tail\0\377", 6)));
    CHECK(artifact("stderr").starts_with(all_bytes + all_bytes)); // stderr's two copies
    CHECK(in_order_within(followed_out, followed.err));
    CHECK(in_order_within(artifact("stderr"), followed.err));
    CHECK(followed.err.size() == followed_out.size() + artifact("stderr").size());
    // What was recorded is the same. Each run makes up its own result token, which the frame line in the
    // carrier contains: the diagnostic's size is the same, its digest differs by that token alone.
    const auto executed_of_run = [](const std::string& out) {
        auto executed = contracts::parse_object(out.substr(out.rfind("{\"ready\"")), 1 << 20)
                            .value()
                            .at("executed")
                            .as_object();
        executed.erase("token");
        executed["diagnostic"].as_object().erase("sha256");
        return executed;
    };
    CHECK(executed_of_run(followed.out) == executed_of_run(plain.out));
    CHECK(followed_out.size() == plain_out.size());
    CHECK(artifact("stderr") == plain_err);
}

TEST_CASE("--follow: a --credential and a --mask variable are masked on screen as in the artifacts") {
    scratch dir;
    auto env = base_env();
    env.emplace_back("MY_KEY=sk-run-canary-012345");
    const auto r = run_process(
        run_argv(dir,
                 {"--follow", "--credential", "MY_KEY", "--mask", "OTHER", "-e", "OTHER=other-canary-6789"},
                 "echo \"k=$MY_KEY\"; printf '%s\\n' \"$OTHER\" | dd bs=1 2>/dev/null; "
                 "echo \"e=$MY_KEY\" >&2"),
        "", env);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.starts_with("k=***\n***\n"));
    CHECK(r.err.find("e=***\n") != std::string::npos);
    for (const auto* canary : {"sk-run-canary", "other-canary"}) {
        CHECK(r.out.find(canary) == std::string::npos);
        CHECK(r.err.find(canary) == std::string::npos);
        CHECK(read_text(at(dir, "work") + "/artifacts/maka-subject.stdout.txt").find(canary) ==
              std::string::npos);
    }
    CHECK(r.err.find("masked (") != std::string::npos); // the count, never the values
    const auto bad = run_process(run_argv(dir, {"--mask", "1BAD"}, "true"), "", env);
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("--mask takes the NAME") != std::string::npos);
}

TEST_CASE("--follow with a reader that does not read: the subject is never held back, drops are said") {
    scratch dir;
    const std::string done = at(dir, "done");
    constexpr int megabytes = 8;
    // Nobody reads the relay's stdout until the subject has written everything and said so.
    child_process relay(
        run_argv(dir, {"--follow"}, "head -c " + std::to_string(megabytes << 20) + " /dev/zero; : > " + done),
        base_env());
    CHECK(eventually([&] { return fs::exists(done); }, 60000));
    int lines = 0;
    while (relay.read_line(30000)) {
        ++lines;
    }
    CHECK(relay.wait() == 0);
    CHECK(lines > 0);
    CHECK(relay.stderr_text().find(
              "follow: some of the subject's stdout is not shown (the reader cannot keep up)") !=
          std::string::npos);
    CHECK(number_after(relay.stderr_text(), " droppedBytes=") > 0);
    CHECK(fs::file_size(at(dir, "work") + "/artifacts/maka-subject.stdout.txt") ==
          static_cast<std::uintmax_t>(megabytes) << 20);
}

TEST_CASE("--follow: memory stays flat whatever the subject writes") {
    scratch dir;
    constexpr long megabytes = 96;
    // stdout is /dev/null: a reader that takes everything at once, so every byte goes through the relay.
    auto argv = run_argv(dir, {"--follow"}, "head -c " + std::to_string(megabytes << 20) + " /dev/urandom");
    std::string command = "exec";
    for (const auto& arg : argv) {
        command += " '" + arg + "'";
    }
    const auto r = run_process({"/bin/sh", "-c", command + " >/dev/null"}, "", base_env(), 120000);
    REQUIRE(r.exit_code == 0);
    // The helper may have left some out (the subject writes faster than the relay decodes): it says so,
    // and a great deal went through the relay all the same.
    CHECK(r.err.find("maka-eval-relay: follow (") != std::string::npos);
    CHECK(number_after(r.err, " shownBytes=") > (16U << 20));
    const auto relay_kib = number_after(r.err, " peakRssKiB=");
    const auto helper_kib = number_after(r.err, "helperPeakRssKiB=");
    CAPTURE(relay_kib);
    CAPTURE(helper_kib);
    if (MAKA_EVAL_MEASURES_MEMORY != 0) {
        // A copy of the output would be 96 MiB; the relay stays near its idle size, the helper at its own.
        CHECK(relay_kib < 48 * 1024);
        CHECK(helper_kib < 16 * 1024);
    }
    CHECK(fs::file_size(at(dir, "work") + "/artifacts/maka-subject.stdout.txt") ==
          static_cast<std::uintmax_t>(megabytes) << 20);
}

} // namespace
