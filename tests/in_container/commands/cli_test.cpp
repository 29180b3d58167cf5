// maka-eval-helper's command line, run as a process: frame, project, --version, --help, usage errors.
#include "contracts/defaults.hpp"
#include "contracts/result_frame.hpp"
#include "in_container/commands/cli.hpp"
#include "support/process.hpp"

#include <doctest/doctest.h>

namespace {

using maka_eval::test::run_process;
const std::string helper = MAKA_EVAL_HELPER_BINARY;
const std::string token = "0123456789abcdef0123456789abcdef";

TEST_CASE("--version and --help") {
    const auto version = run_process({helper, "--version"});
    CHECK(version.exit_code == 0);
    CHECK(version.out.starts_with("maka-eval-helper "));
    const auto help = run_process({helper, "--help"});
    CHECK(help.exit_code == 0);
    CHECK(help.out.find("project --result-token") != std::string::npos);
    // The defaults it states are contracts/defaults.hpp's, filled in, not written out again.
    CHECK(help.out.find("(" + std::to_string(maka_eval::contracts::defaults::heartbeat_ms) +
                        ", as `hello`") != std::string::npos);
    CHECK(help.out.find("(" + std::to_string(maka_eval::contracts::defaults::cancel_grace_ms) + ")") !=
          std::string::npos);
    CHECK(run_process({helper}).exit_code == 2);
    CHECK(run_process({helper, "bogus"}).exit_code == 2);
}

TEST_CASE("frame prints the producer's line for the token in the environment") {
    const auto r = run_process({helper, "frame", R"({"status":"completed"})"}, "",
                               std::vector<std::string>{"MAKA_EVAL_RESULT_TOKEN=" + token});
    CHECK(r.exit_code == 0);
    CHECK(r.out == maka_eval::contracts::encode_frame(token, R"({"status":"completed"})").value());
    // From stdin, one trailing newline dropped.
    const auto piped = run_process({helper, "frame", "-"}, "{\"a\":1}\n",
                                   std::vector<std::string>{"MAKA_EVAL_RESULT_TOKEN=" + token});
    CHECK(piped.out == maka_eval::contracts::encode_frame(token, "{\"a\":1}").value());
}

TEST_CASE("frame refuses what the relay would reject") {
    const std::vector<std::string> env{"MAKA_EVAL_RESULT_TOKEN=" + token};
    CHECK(run_process({helper, "frame", std::string(2049, 'x')}, "", env).exit_code == 1);
    CHECK(run_process({helper, "frame", "-"}, std::string(3000, 'x'), env).exit_code == 1);
    CHECK(run_process({helper, "frame", "\xff"}, "", env).exit_code == 1);
    const auto no_token = run_process({helper, "frame", "{}"}, "", std::vector<std::string>{});
    CHECK(no_token.exit_code == 1);
    CHECK(no_token.err.find("MAKA_EVAL_RESULT_TOKEN") != std::string::npos);
    CHECK(run_process({helper, "frame", "{}"}, "", std::vector<std::string>{"MAKA_EVAL_RESULT_TOKEN=ABC"})
              .exit_code == 1);
    CHECK(run_process({helper, "frame", "a", "b"}, "", env).exit_code == 2);
}

TEST_CASE("project prints exactly what executed would carry") {
    const std::string carrier =
        "noise\n" + maka_eval::contracts::encode_frame(token, "{\"ok\":true}").value();
    const auto r = run_process({helper, "project", "--result-token", token}, carrier);
    CHECK(r.exit_code == 0);
    CHECK(
        r.out ==
        "{\"stdout\":\"{\\\"ok\\\":true}\",\"diagnostic\":{\"category\":\"unstructured-output\",\"bytes\":6,"
        "\"sha256\":\"" +
            maka_eval::contracts::sha256_hex("noise\n") + "\"}}\n");
    const auto missing = run_process({helper, "project", "--result-token", token}, "nothing here");
    CHECK(missing.exit_code == 0);
    CHECK(missing.out.find("result-frame-missing") != std::string::npos);
    const auto uncaptured =
        run_process({helper, "project", "--result-token", token, "--no-capture"}, carrier);
    CHECK(uncaptured.out == "{\"stdout\":\"\",\"diagnostic\":{\"category\":\"none\"}}\n");
}

TEST_CASE("project usage errors exit 2") {
    CHECK(run_process({helper, "project"}, "x").exit_code == 2);
    CHECK(run_process({helper, "project", "--result-token", "short"}, "x").exit_code == 2);
    CHECK(run_process({helper, "project", "--result-token", token, "--bogus"}, "x").exit_code == 2);
}

TEST_CASE("project streams large carriers in bounded memory") {
    const std::string big(8 << 20, 'z');
    const auto r = run_process({helper, "project", "--result-token", token}, big);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("\"category\":\"result-frame-oversize\",\"bytes\":8388608") != std::string::npos);
}

} // namespace
