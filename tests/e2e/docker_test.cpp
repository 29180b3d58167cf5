// End to end on a real Docker engine: `maka-eval-relay connect --env docker:C` against the loopback
// orchestrator double, with a FROM-scratch BusyBox-only task image. Each test asserts what the orchestrator
// received and what remains in the container. scripts/test.sh starts the engine, builds the images and sets
// MAKA_EVAL_E2E=1; without it every test reports itself skipped (exit 77).
#include "contracts/digest.hpp"
#include "contracts/result_frame.hpp"
#include "contracts/wire_json.hpp"
#include "e2e/engine_fixture.hpp"
#include "relay/support/exit_codes.hpp"
#include "relay/trial_fixture.hpp"
#include "support/child_process.hpp"
#include "support/process.hpp"
#include "support/skip.hpp"

#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>
#include <openssl/evp.h>

namespace {

using namespace maka_eval;
using namespace maka_eval::test;
using namespace std::chrono_literals;

std::string base64(std::string_view bytes) {
    std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
    const int n =
        EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                        reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
    out.resize(static_cast<std::size_t>(n));
    return out;
}

TEST_CASE(
    "the image holds BusyBox only: no real bash, no util-linux setsid --wait (the original fails there)") {
    require_engine();
    container c;
    // `bash` is only a shim over BusyBox sh, for the Harbor-shaped stand-in's `bash -c`.
    CHECK(c.exec("bash -c 'test -z \"$BASH_VERSION\"'").exit_code == 0);
    CHECK(c.exec("setsid --wait true").exit_code != 0);
    trial t(in_container({}, "\"$HELPER\" frame '{\"busybox\":true}'"), c.relay_args());
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_success);
    CHECK(executed_of(o).at("stdout").as_string() == "{\"busybox\":true}");
}

// The phase log's engine call count ("done … engineCalls=N").
TEST_CASE("engine calls: 3 in a fresh container (the helper comes in on the session's stdin) and after") {
    require_engine();
    container c;
    const std::string script = "\"$HELPER\" frame '{}'";
    for (int trial_number = 0; trial_number < 2; ++trial_number) {
        trial t(in_container({}, script), c.relay_args());
        const auto o = t.finish();
        CHECK(o.exit_code == relay::exit_success);
        CHECK(engine_calls(o.relay_log) == 3);
    }
    // Installed as the archive upload would: root-owned, 0755, content-addressed, with the link; nothing the
    // shell wrote is left at / or beside it.
    const auto installed =
        c.exec("stat -c '%U %a' /.maka-eval /.maka-eval/helper-* && readlink /.maka-eval/maka-eval-helper && "
               "ls -a / /.maka-eval | grep -c incoming")
            .out;
    CHECK(installed.starts_with("root 755\nroot 755\nhelper-"));
    CHECK(installed.ends_with("\n0\n"));
    // The helper removed after a trial: it goes in again through the engine (one call more), the trial runs.
    REQUIRE(c.exec("rm -rf /.maka-eval").exit_code == 0);
    trial t(in_container({}, script), c.relay_args());
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_success);
    CHECK(engine_calls(o.relay_log) == 4);
    CHECK(o.relay_log.find("is gone since an earlier trial: put in again through the engine") !=
          std::string::npos);
    trial again(in_container({}, script), c.relay_args());
    CHECK(engine_calls(again.finish().relay_log) == 3);
}

// A root subject swaps every installed helper for a script that would keep what it is given (the next
// trial's credential on its stdin, its environment); `relay_env` says how the relay checks the copy.
// `looked`: the relay looks at the copy and says it was replaced (from this host); seen from afar it is
// written again without a look.
void replaced_helper_never_runs(const std::vector<std::string>& relay_env, int calls_after, bool looked) {
    container c;
    const std::string forge =
        "\"$HELPER\" frame '{}'; for f in /.maka-eval/helper-*; do rm -f \"$f\"; "
        "printf '#!/bin/sh\\n{ env; cat; } > /tmp/captured\\n' > \"$f\"; chmod 755 \"$f\"; done";
    trial first(in_container({}, forge), c.relay_args(), relay_env);
    CHECK(first.finish().exit_code == relay::exit_success);
    REQUIRE(c.exec("grep -l captured /.maka-eval/helper-*").exit_code == 0);
    const std::string canary = "canary-replaced-" + std::to_string(::getpid());
    auto orchestrator_env = base_env();
    orchestrator_env.push_back("API_KEY=" + canary);
    // Accepted (the container is the root subject's now): the forged helper still never runs, and the
    // credential stays unread.
    trial next(in_container({"--credential", "API_KEY"}, "echo ran; \"$HELPER\" frame '{\"genuine\":true}'"),
               c.relay_args({"--trust-reused-container"}), relay_env, orchestrator_env);
    const auto o = next.finish();
    INFO(o.relay_log);
    CHECK(o.exit_code == relay::exit_success);
    CHECK(o.relay_log.find("trusted (") != std::string::npos);
    CHECK(executed_of(o).at("stdout").as_string() == "{\"genuine\":true}");
    CHECK((o.relay_log.find("is not this build's since an earlier trial: put in again through the engine") !=
           std::string::npos) == looked);
    CHECK(engine_calls(o.relay_log) == calls_after);
    CHECK(c.exec("test -e /tmp/captured").exit_code != 0);
    {
        // Not accepted: the credential is refused there, before anything is sent.
        trial refused(in_container({"--credential", "API_KEY"}, "echo ran"), c.relay_args(), relay_env,
                      orchestrator_env);
        const auto r = refused.finish();
        INFO(r.relay_log);
        CHECK(r.exit_code == relay::exit_refused);
        CHECK(r.relay_log.find("this trial's credentials were not sent: the environment was owned by a root "
                               "subject since an earlier trial (") != std::string::npos);
    }
    // What is installed again is this build's helper, byte for byte.
    std::ifstream in(container_helper(), std::ios::binary);
    const std::string genuine{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    CHECK(c.exec("sha256sum /.maka-eval/helper-*").out.starts_with(contracts::sha256_hex(genuine)));
    CHECK(c.exec("find / -xdev -type f -exec grep -l \"$(printf 'canary-replaced-%s' " +
                 std::to_string(::getpid()) + ")\" {} + 2>/dev/null")
              .out.empty());
    // A link, a directory, and the genuine bytes writable by all, at its path: each replaced too.
    for (const std::string plant : {"ln -s /etc/passwd \"$f\"", "mkdir \"$f\"",
                                    "cp \"$g\" /tmp/h && mv /tmp/h \"$f\" && chmod 777 \"$f\""}) {
        CAPTURE(plant);
        REQUIRE(
            c.exec(
                 "f=/.maka-eval/$(readlink /.maka-eval/maka-eval-helper); g=/tmp/genuine; cp \"$f\" \"$g\"; "
                 "rm -rf \"$f\"; " +
                 plant)
                .exit_code == 0);
        trial again(in_container({}, "\"$HELPER\" frame '{}'"), c.relay_args(), relay_env);
        const auto a = again.finish();
        CHECK(a.exit_code == relay::exit_success);
        CHECK((a.relay_log.find("put in again through the engine") != std::string::npos) == looked);
    }
}

TEST_CASE(
    "security: a helper a root subject replaced never runs, and the next trial's credential stays unread") {
    require_engine();
    // Looked at from this host (the engine's): inspect, the upload, exec create and start.
    replaced_helper_never_runs(base_env(), 4, true);
    // Seen from afar, as for a remote engine: written again through the engine without a look, as on every
    // trial there (inspect, the upload, exec create and start).
    auto through_engine = base_env();
    through_engine.push_back("MAKA_EVAL_CHECK_HELPER_THROUGH_ENGINE=1");
    replaced_helper_never_runs(through_engine, 4, false);
}

TEST_CASE(
    "a foreign XDG_RUNTIME_DIR (root after su without -): nothing made in it, the record kept in /tmp") {
    require_engine();
    require_root("to make a directory another user owns");
    const auto theirs =
        std::filesystem::temp_directory_path() / ("maka-e2e-xdg-" + std::to_string(::getpid()));
    std::filesystem::create_directories(theirs);
    REQUIRE(::chown(theirs.c_str(), 1000, 1000) == 0);
    REQUIRE(::chmod(theirs.c_str(), 0700) == 0);
    auto env = base_env();
    env.push_back("XDG_RUNTIME_DIR=" + theirs.string());
    container c;
    const std::string script = "\"$HELPER\" frame '{}'";
    trial first(in_container({}, script), c.relay_args(), env);
    CHECK(first.finish().exit_code == relay::exit_success);
    // The record works (kept in /tmp/maka-eval-relay-0): the helper removed after a trial is known to be
    // gone, not taken for a fresh container.
    REQUIRE(c.exec("rm -rf /.maka-eval").exit_code == 0);
    trial second(in_container({}, script), c.relay_args(), env);
    const auto o = second.finish();
    INFO(o.relay_log);
    CHECK(o.exit_code == relay::exit_success);
    CHECK(o.relay_log.find("is gone since an earlier trial") != std::string::npos);
    CHECK(std::filesystem::is_empty(theirs));
    std::filesystem::remove_all(theirs);
}

TEST_CASE("run --follow in a container: the subject's output is shown while it runs") {
    require_engine();
    container c;
    std::vector<std::string> argv{relay_binary, "run", "--follow"};
    for (auto& arg : c.relay_args()) {
        argv.push_back(std::move(arg));
    }
    argv.insert(argv.end(),
                {"--", "sh", "-c",
                 "echo one; while [ ! -e /tmp/go ]; do sleep 0.05; done; echo two >&2; echo three"});
    child_process relay(argv, base_env());
    // Seen before the subject may go on: live, not replayed at the end.
    CHECK(relay.read_line(30000) == "one");
    REQUIRE(c.exec("touch /tmp/go").exit_code == 0);
    CHECK(relay.read_line(30000) == "three");
    CHECK(relay.wait(30000) == 0);
    CHECK(relay.stderr_text().find("\ntwo\n") != std::string::npos);
    CHECK(relay.stderr_text().find("follow (") != std::string::npos);
}

TEST_CASE(
    "the subject's usage in a container: exactly the processes it started, in the report and the artifact") {
    require_engine();
    container c;
    const auto r = run_process(
        {relay_binary, "run", "--json", "--env", "docker:" + c.name, "--helper", container_helper(), "--",
         "sh", "-c",
         "for i in 1 2 3 4 5 6 7 8 9 10; do /bin/true; done; head -c 20000000 /dev/zero | md5sum"},
        "", base_env(), 60000);
    REQUIRE(r.exit_code == 0);
    const auto usage = contracts::parse_object(r.out, 1 << 20).value().at("usage").as_object();
    // sh, ten /bin/true, head and md5sum: the container's PID namespace is the subject's alone.
    CHECK(usage.at("processes").to_number<std::uint64_t>() == 13);
    CHECK(usage.at("wallMs").to_number<std::uint64_t>() > 0);
    const auto file = c.exec("cat /logs/artifacts/maka-subject.usage.json");
    REQUIRE(file.exit_code == 0);
    CHECK(contracts::parse_object(file.out, 1 << 20).value() == usage);
}

TEST_CASE("an image without a shell (distroless) gets the helper through the engine's archive upload") {
    require_engine();
    // The helper image alone: no /bin/sh, no head; `session` on an open stdin keeps the container running.
    container c({"-i"}, "maka-eval-helper:test", {"session"});
    REQUIRE(docker({"exec", c.name, "/bin/sh", "-c", "true"}).exit_code != 0);
    // Harbor's /logs/agent (the scope record's directory must exist, C7), copied in: there is no mkdir.
    const auto logs =
        std::filesystem::temp_directory_path() / ("maka-e2e-logs-" + std::to_string(::getpid()));
    std::filesystem::create_directories(logs / "logs" / "agent");
    REQUIRE(docker({"cp", (logs / "logs").string(), c.name + ":/"}).exit_code == 0);
    std::filesystem::remove_all(logs);
    trial t({"--", "/.maka-eval/maka-eval-helper", "frame", "{\"distroless\":true}"}, c.relay_args());
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_success);
    CHECK(executed_of(o).at("stdout").as_string() == "{\"distroless\":true}");
    CHECK(engine_calls(o.relay_log) > 3); // the failed install exec, then the upload and the session
    trial again({"--", "/.maka-eval/maka-eval-helper", "frame", "{}"}, c.relay_args());
    CHECK(engine_calls(again.finish().relay_log) == 3);
}

TEST_CASE(
    "uid 1000, all capabilities dropped, read-only root, no network, helper mounted instead of uploaded") {
    require_engine();
    container c({"--user", "1000:1000", "--cap-drop", "ALL", "--read-only", "--network", "none", "--mount",
                 "type=tmpfs,destination=/logs,tmpfs-mode=1777", "-v",
                 container_helper() + ":/maka-eval/maka-eval-helper:ro"});
    // Harbor mounts /logs; here the capability-less container root prepares it on a tmpfs it owns.
    REQUIRE(c.exec("chmod 1777 /logs && mkdir -p /logs/agent && chmod 1777 /logs/agent", "0").exit_code == 0);
    trial t(subject({}, "id -u; \"$HELPER\" frame '{\"uid\":1000}'", "/maka-eval/maka-eval-helper"),
            c.relay_args({"--helper-in-container", "/maka-eval/maka-eval-helper"}));
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_success);
    const auto& executed = executed_of(o);
    CHECK(executed.at("stdout").as_string() == "{\"uid\":1000}");
    CHECK(executed.at("exitCode").as_int64() == 0);
    CHECK(c.exec("cat /logs/artifacts/maka-subject.stdout.txt", "1000").out.starts_with("1000\n"));
}

TEST_CASE("the result-frame matrix through a container equals the projection, exit codes included") {
    require_engine();
    container c;
    const std::string token = "0123456789abcdef0123456789abcdef";
    const std::string valid = contracts::encode_frame(token, "{\"status\":\"completed\"}").value();
    std::string bad_digest = valid;
    bad_digest.replace(bad_digest.find(contracts::sha256_hex("{\"status\":\"completed\"}")), 64,
                       std::string(64, '0'));
    const std::string big_payload(2049, 'p');
    const std::string oversize_payload = "MAKA-EVAL-RESULT-V1 " + token + " 2049 " +
                                         contracts::sha256_hex(big_payload) + " " + std::string(2732, 'c') +
                                         "\n";
    const std::string non_utf8 =
        "MAKA-EVAL-RESULT-V1 " + token + " 1 " + contracts::sha256_hex("\xff") + " _w\n";
    struct example {
        const char* name;
        std::string carrier;
        bool capture = true;
        int exit_code = 0;
    };
    const std::vector<example> cases = {
        {"valid", valid},
        {"noise", "warming up\n" + valid + "done\n"},
        {"missing", "no frame at all\n", true, 1},
        {"ambiguous", valid + valid},
        {"bad digest", bad_digest},
        {"wrong token", contracts::encode_frame(std::string(32, 'a'), "{}").value()},
        {"oversize carrier", std::string(70000, 'x')},
        {"oversize payload", oversize_payload},
        {"non-UTF-8 payload", non_utf8},
        {"non-UTF-8 noise", "caf\xe9\n" + valid},
        {"empty payload", contracts::encode_frame(token, "").value()},
        {"captureStdout false", valid, false, 3},
        {"stderr only", "", true, 2},
    };
    for (const auto& e : cases) {
        CAPTURE(e.name);
        std::vector<std::string> scenario{"-e", "CARRIER_B64=" + base64(e.carrier)};
        if (!e.capture) {
            scenario.push_back("--no-capture");
        }
        trial t(in_container(scenario, "printf '%s' \"$CARRIER_B64\" | base64 -d; echo on-stderr >&2; exit " +
                                           std::to_string(e.exit_code)),
                c.relay_args());
        const auto o = t.finish();
        // The frame is stdout's; the stderr line is noise beside a valid one (the original's merged carrier).
        contracts::carrier out;
        contracts::carrier err;
        out.feed(e.carrier);
        out.finish();
        err.feed("on-stderr\n");
        err.finish();
        const auto expected = contracts::project(out, token, e.capture, &err);
        const auto& executed = executed_of(o);
        CHECK(executed.at("exitCode").as_int64() == e.exit_code);
        CHECK(executed.at("stdout").as_string() == expected.stdout_text);
        CHECK(contracts::to_wire(executed.at("diagnostic")) ==
              contracts::to_wire(contracts::to_json(expected.diagnostic)));
    }
    // Artifacts hold stdout and stderr apart, raw.
    CHECK(c.exec("cat /logs/artifacts/maka-subject.stderr.txt").out == "on-stderr\n");
}

TEST_CASE("environment and credentials reach the subject, no credential in argv, files or docker events") {
    require_engine();
    container c;
    const std::string canary = "canary-e2e-" + std::to_string(::getpid());
    const auto since =
        std::to_string(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now()) - 1);
    auto orchestrator_env = base_env();
    orchestrator_env.push_back("API_KEY=" + canary);
    trial t(in_container(
                {"-e", "MODE=offline", "--credential", "API_KEY"},
                "test \"$MODE\" = offline && test \"$(printf %s \"$API_KEY\" | sha256sum | cut -c1-64)\" = " +
                    contracts::sha256_hex(canary) + " && sleep 1 && \"$HELPER\" frame ok"),
            c.relay_args(), base_env(), orchestrator_env);
    t.wait_running(c.scope());
    CHECK(c.exec("cat /proc/[0-9]*/cmdline").out.find(canary) == std::string::npos);
    // The probe's own command line must not hold the canary (docker events records it): it is rebuilt in sh.
    const std::string find_canary = "find / -xdev -type f -exec grep -l \"$(printf 'canary-e2e-%s' " +
                                    std::to_string(::getpid()) + ")\" {} + 2>/dev/null";
    CHECK(c.exec(find_canary).out.empty());
    const auto o = t.finish();
    CHECK(executed_of(o).at("stdout").as_string() == "ok");
    const auto until =
        std::to_string(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now()) + 1);
    const auto events = docker({"events", "--since", since, "--until", until, "--format", "{{json .}}"});
    CHECK(events.out.find("exec_create") != std::string::npos);
    CHECK(events.out.find(canary) == std::string::npos);
    CHECK(c.exec(find_canary).out.empty());
}

// Artifacts you can trust (docs/security.md): masked, the helper's own files, with a receipt.

// The receipt in container `c`, each entry checked against the file it names.
boost::json::array checked_receipt(const container& c) {
    const auto text = c.exec("cat /logs/artifacts/maka-subject.receipt.json").out;
    auto receipt = contracts::parse_object(text, 1 << 20);
    REQUIRE(receipt);
    auto artifacts = receipt->at("artifacts").as_array();
    for (const auto& entry : artifacts) {
        const auto& a = entry.as_object();
        const std::string path = "/logs/artifacts/" + std::string(a.at("name").as_string());
        CAPTURE(path);
        CHECK(c.exec("test -f " + path + " && ! test -L " + path).exit_code == 0);
        CHECK(c.exec("wc -c < " + path).out ==
              std::to_string(a.at("bytes").to_number<std::uint64_t>()) + "\n");
        CHECK(c.exec("sha256sum " + path + " | cut -c1-64").out ==
              std::string(a.at("sha256").as_string()) + "\n");
    }
    return artifacts;
}

TEST_CASE("masking: a credential the subject prints is in no artifact, the frame is decoded as before") {
    require_engine();
    container c;
    const std::string canary = "canary-mask-" + std::to_string(::getpid());
    auto orchestrator_env = base_env();
    orchestrator_env.push_back("API_KEY=" + canary);
    trial t(in_container(
                {"--credential", "API_KEY"},
                "echo \"key $API_KEY\"; echo \"$API_KEY\" >&2; printf %s \"$API_KEY\" | dd bs=1 2>/dev/null; "
                "echo; \"$HELPER\" frame ok"),
            c.relay_args(), base_env(), orchestrator_env);
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_success);
    CHECK(executed_of(o).at("stdout").as_string() == "ok");
    CHECK(c.exec("grep -r " + canary + " /logs/artifacts").exit_code != 0);
    CHECK(c.exec("cat /logs/artifacts/maka-subject.stdout.txt").out.starts_with("key ***\n***\n"));
    CHECK(c.exec("cat /logs/artifacts/maka-subject.stderr.txt").out == "***\n");
    INFO(o.relay_log);
    CHECK(o.relay_log.find("masked (") != std::string::npos);
    CHECK(o.relay_log.find("stdout=2 stderr=1") != std::string::npos);
    const auto artifacts = checked_receipt(c);
    CHECK(artifacts.size() == 3);
    CHECK(artifacts.at(0).as_object().at("complete").as_bool());
}

TEST_CASE("credentials at scale: a container limited to 64 MiB runs a trial with 200 credentials of 4 KiB, "
          "each masked in its forms, and the subject's peak memory is its own") {
    require_engine();
    container c({"--memory", "64m", "--memory-swap", "64m"});
    // Characters URL encoding changes, so every form the masker covers is a form of its own.
    const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_.~:@";
    std::uint64_t state = 20261206;
    auto next = [&state] {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<std::size_t>(state >> 33U);
    };
    auto orchestrator_env = base_env();
    std::vector<std::string> args;
    std::vector<std::string> values;
    for (int i = 0; i < 200; ++i) {
        std::string value;
        for (int k = 0; k < 4096; ++k) {
            value.push_back(alphabet[next() % alphabet.size()]);
        }
        orchestrator_env.push_back("BULK_" + std::to_string(i) + "=" + value);
        args.insert(args.end(), {"--credential", "BULK_" + std::to_string(i)});
        values.push_back(std::move(value));
    }
    // One printed as it is, one as its base64 (a Basic header's form), one inside a longer line; then the
    // frame, and the subject's own memory: a shell that holds the 800 KiB environment and little else.
    trial t(in_container(args, "echo \"$BULK_7\"; printf %s \"$BULK_42\" | base64 -w0; echo; "
                               "echo \"Authorization: Bearer $BULK_199 (sent)\"; \"$HELPER\" frame ok"),
            c.relay_args(), base_env(), orchestrator_env);
    const auto o = t.finish();
    INFO(o.relay_log.substr(0, 4000));
    REQUIRE(o.exit_code == relay::exit_success);
    CHECK(executed_of(o).at("stdout").as_string() == "ok");
    const auto printed = c.exec("cat /logs/artifacts/maka-subject.stdout.txt").out;
    CAPTURE(printed.substr(0, 200));
    // Base64 keeps what the value alone does not determine: its last character and the padding.
    const auto second = printed.find('\n', 4);
    REQUIRE(second != std::string::npos);
    CHECK(printed.starts_with("***\n***"));
    CHECK(second - 4 <= 3 + 3); // "***" and at most the undetermined character and "=="
    CHECK(printed.substr(second + 1).starts_with("Authorization: Bearer *** (sent)\n"));
    for (const auto index : {7, 42, 199}) {
        CHECK(printed.find(values[static_cast<std::size_t>(index)].substr(0, 64)) == std::string::npos);
    }
    CHECK(o.relay_log.find("stdout=3") != std::string::npos);
    const auto usage = c.exec("cat /logs/artifacts/maka-subject.usage.json");
    REQUIRE(usage.exit_code == 0);
    // Its own (a shell with an 800 KiB environment, a base64), not the supervisor's masker and request.
    CHECK(contracts::parse_object(usage.out, 1 << 20).value().at("peakRssKiB").to_number<std::uint64_t>() <
          8U * 1024);
}

TEST_CASE(
    "artifacts: a uid-1000 subject that replaces them in a 777 /logs/artifacts changes nothing on disk") {
    require_engine();
    container c({"--user", "1000:1000"});
    REQUIRE(c.exec("chmod 777 /logs/artifacts").exit_code == 0);
    trial t(in_container({},
                         "echo real-output; "
                         "ls /logs/artifacts/.maka-eval-staging-* >/dev/null 2>&1 || echo staging-refused; "
                         "echo FORGED > /logs/artifacts/maka-subject.stdout.txt; "
                         "mkdir /logs/artifacts/maka-subject.stderr.txt; "
                         "ln -s /etc/passwd /logs/artifacts/maka-subject.usage.json; "
                         "mkfifo /logs/artifacts/maka-subject.receipt.json; \"$HELPER\" frame '{}'"),
            c.relay_args());
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_success);
    INFO(o.relay_log);
    CHECK(c.exec("cat /logs/artifacts/maka-subject.stdout.txt")
              .out.starts_with("real-output\nstaging-refused\n"));
    CHECK(c.exec("stat -c '%u:%g %a' /logs/artifacts/maka-subject.stdout.txt").out == "0:1000 640\n");
    // What was planted is replaced, or moved aside when it is a directory; nothing followed.
    CHECK(c.exec("ls -d /logs/artifacts/maka-subject.stderr.txt.in-the-way-*").exit_code == 0);
    CHECK(c.exec("grep -c root: /logs/artifacts/maka-subject.usage.json").out == "0\n");
    checked_receipt(c);
    // The staging directory is gone once everything is published.
    CHECK(c.exec("ls -a /logs/artifacts | grep -c staging").out == "0\n");
    // And the next trial in the same directory starts clean.
    trial next(in_container({}, "echo second; \"$HELPER\" frame '{}'"), c.relay_args());
    CHECK(next.finish().exit_code == relay::exit_success);
    CHECK(c.exec("cat /logs/artifacts/maka-subject.stdout.txt").out.starts_with("second\n"));
    checked_receipt(c);
}

TEST_CASE("artifacts: a full disk is said in the receipt (complete: false), which is still written") {
    require_engine();
    container c({"--tmpfs", "/logs/artifacts:size=256k,mode=0755"});
    trial t(in_container({}, "head -c 2000000 /dev/zero | tr '\\0' x; echo done >&2"), c.relay_args());
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_success);
    const auto artifacts = checked_receipt(c);
    const auto& out = artifacts.at(0).as_object();
    CHECK_FALSE(out.at("complete").as_bool());
    CHECK(out.at("incomplete").as_string() == "the disk refused a write: No space left on device");
}

TEST_CASE("a plain image without /logs: the helper makes the directories, the subject really runs") {
    require_engine();
    container c;
    REQUIRE(c.exec("rm -rf /logs").exit_code == 0);
    trial t(in_container({}, "echo ran; \"$HELPER\" frame '{\"ran\":true}'"), c.relay_args());
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_success);
    CHECK(executed_of(o).at("exitCode").as_int64() == 0);
    CHECK(executed_of(o).at("stdout").as_string() == "{\"ran\":true}");
    CHECK(c.exec("cat /logs/artifacts/maka-subject.stdout.txt").out.starts_with("ran\n"));
}

TEST_CASE(
    "a directory, a FIFO or a link planted at any artifact or state name: the trial and the next complete") {
    require_engine();
    container c;
    REQUIRE(c.exec("echo untouched > /tmp/target && mkdir -p /tmp/target-dir").exit_code == 0);
    const std::string scope =
        "/logs/agent/.maka-eval-" + contracts::sha256_hex(relay_token).substr(0, 24) + ".pid";
    const std::vector<std::string> names{
        "/logs/artifacts/maka-subject.stdout.txt", "/logs/artifacts/maka-subject.stderr.txt",
        "/logs/artifacts/maka-subject.usage.json", "/logs/artifacts/maka-subject.receipt.json", scope};
    const std::vector<std::string> plants{"mkdir -p \"$n\" && touch \"$n/inside\"", "mkfifo \"$n\"",
                                          "ln -s /tmp/target \"$n\"", "ln -s /tmp/target-dir \"$n\""};
    for (const auto& name : names) {
        for (const auto& plant : plants) {
            CAPTURE(name);
            CAPTURE(plant);
            REQUIRE(c.exec("n=" + name + "; rm -rf \"$n\"* && " + plant).exit_code == 0);
            // Each trial is also the trial after the previous plant.
            trial t(in_container({}, "echo planted-run; \"$HELPER\" frame '{}'"), c.relay_args());
            const auto o = t.finish(20000);
            INFO(o.relay_log);
            CHECK(o.exit_code == relay::exit_success);
            CHECK(executed_of(o).at("exitCode").as_int64() == 0);
            // Nothing was written through the link or into the directory; the subject's output is published.
            CHECK(c.exec("cat /tmp/target; ls -A /tmp/target-dir; head -1 "
                         "/logs/artifacts/maka-subject.stdout.txt")
                      .out == "untouched\nplanted-run\n");
        }
    }
    checked_receipt(c);
    trial last(in_container({}, "\"$HELPER\" frame '{}'"), c.relay_args());
    CHECK(last.finish().exit_code == relay::exit_success);
}

TEST_CASE("the root-only state directory planted as a link, a FIFO or another user's: not used, nothing "
          "through it") {
    require_engine();
    container c({"--user", "1000:1000"}); // a subject of another user: its scope record goes there
    REQUIRE(c.exec("mkdir -p /tmp/target-dir").exit_code == 0);
    for (const std::string plant : {"ln -s /tmp/target-dir /run/maka-eval", "mkfifo /run/maka-eval",
                                    "mkdir /run/maka-eval && chown 1000 /run/maka-eval"}) {
        CAPTURE(plant);
        REQUIRE(
            c.exec("mkdir -p /run && rm -rf /run/maka-eval /tmp/.maka-eval-state && " + plant).exit_code ==
            0);
        trial t(in_container({}, "echo ran; \"$HELPER\" frame '{}'"), c.relay_args());
        const auto o = t.finish();
        INFO(o.relay_log);
        CHECK(o.exit_code == relay::exit_success);
        CHECK(executed_of(o).at("exitCode").as_int64() == 0);
        // The next candidate was used (root's, 0700), nothing went where the plant points.
        CHECK(c.exec("stat -c '%u %a' /tmp/.maka-eval-state; ls -A /tmp/target-dir").out == "0 700\n");
    }
}

TEST_CASE("a second trial while one runs in the container is refused clearly, the first unharmed") {
    require_engine();
    container c;
    trial first(in_container({}, "touch /tmp/first-running; sleep 2; echo first; \"$HELPER\" frame '{}'"),
                c.relay_args());
    REQUIRE(eventually([&] { return c.exec("test -e /tmp/first-running").exit_code == 0; }, 20000));
    trial second(in_container({}, ": > /tmp/second-ran"), c.relay_args());
    const auto refused = second.finish();
    INFO(refused.relay_log);
    CHECK(refused.exit_code == relay::exit_environment);
    CHECK(refused.relay_log.find("another trial is already running") != std::string::npos);
    CHECK(c.exec("test -e /tmp/second-ran").exit_code != 0);
    const auto o = first.finish();
    CHECK(o.exit_code == relay::exit_success);
    CHECK(executed_of(o).at("exitCode").as_int64() == 0);
    CHECK(c.exec("head -1 /logs/artifacts/maka-subject.stdout.txt").out == "first\n");
}

TEST_CASE(
    "a symbolic link at /logs, /logs/artifacts or /logs/agent is refused, nothing made where it points") {
    require_engine();
    for (const std::string dir : {"/logs", "/logs/artifacts", "/logs/agent"}) {
        CAPTURE(dir);
        container c;
        REQUIRE(c.exec("rm -rf " + dir + " && mkdir /elsewhere && ln -s /elsewhere " + dir).exit_code == 0);
        trial t(in_container({}, ": > /tmp/ran"), c.relay_args());
        const auto o = t.finish();
        INFO(o.relay_log);
        CHECK(o.exit_code == relay::exit_environment);
        CHECK(o.relay_log.find("symbolic link") != std::string::npos);
        CHECK(c.exec("ls -A /elsewhere").out.empty());
        CHECK(c.exec("test -e /tmp/ran").exit_code != 0); // the subject never ran
    }
}

// The egress gate: a sidecar holds the policy's namespace; MAKA_EVAL_EGRESS_REQUIRED=1.
struct egress_cell {
    container sidecar{{"--cap-drop", "NET_RAW"}};
    std::vector<std::string> env() const {
        auto e = base_env();
        e.push_back("MAKA_EVAL_EGRESS_REQUIRED=1");
        return e;
    }
    std::vector<std::string> relay_args(const container& subject) const {
        return subject.relay_args({"--policy-sidecar", sidecar.name});
    }
};

TEST_CASE("egress: a subject holding NET_RAW (cap-add) is refused before ready") {
    require_engine();
    egress_cell cell;
    container c({"--network", "container:" + cell.sidecar.name, "--cap-add", "NET_RAW"});
    trial t(in_container({}, "exit 0"), cell.relay_args(c), cell.env());
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_environment);
    CHECK(o.relay_log.find("the subject holds NET_RAW") != std::string::npos);
    CHECK(o.transcript.at("ready").is_null());
}

TEST_CASE("egress: NET_RAW only in the bounding set of a uid-1000 subject is refused") {
    require_engine();
    egress_cell cell;
    container c({"--network", "container:" + cell.sidecar.name, "--user", "1000:1000"});
    trial t(in_container({}, "exit 0"), cell.relay_args(c), cell.env());
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_environment);
    CHECK(o.relay_log.find("NET_RAW") != std::string::npos);
}

TEST_CASE("egress: a subject outside the sidecar's network namespace is refused") {
    require_engine();
    egress_cell cell;
    container c({"--cap-drop", "NET_RAW"});
    trial t(in_container({}, "exit 0"), cell.relay_args(c), cell.env());
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_environment);
    CHECK(o.relay_log.find("network namespace") != std::string::npos);
}

TEST_CASE("egress: a subject sharing the namespace is admitted and /etc/hosts is pinned in place") {
    require_engine();
    egress_cell cell;
    container c({"--network", "container:" + cell.sidecar.name, "--cap-drop", "NET_RAW"});
    REQUIRE(c.exec("mkdir -p /opt/maka-egress && echo 172.18.0.2 > /opt/maka-egress/proxy-ipv4").exit_code ==
            0);
    const auto inode_before = c.exec("stat -c %i /etc/hosts").out;
    trial t(in_container({}, "grep maka-eval-mitmproxy /etc/hosts"), cell.relay_args(c), cell.env());
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_success);
    CHECK(executed_of(o).at("exitCode").as_int64() == 0); // the subject saw the pin
    CHECK(c.exec("tail -1 /etc/hosts").out == "172.18.0.2 maka-eval-mitmproxy\n");
    CHECK(c.exec("stat -c %i /etc/hosts").out == inode_before);
}

TEST_CASE("egress: an unpublished proxy address fails the pin, before ready") {
    require_engine();
    egress_cell cell;
    container c({"--network", "container:" + cell.sidecar.name, "--cap-drop", "NET_RAW"});
    trial t(in_container({}, "exit 0"), cell.relay_args(c), cell.env());
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_environment);
    CHECK(o.relay_log.find("could not pin the Eval egress proxy hostname") != std::string::npos);
}

TEST_CASE("egress: a proxy address the subject could have swapped (not root's, or a link) is refused") {
    require_engine();
    egress_cell cell;
    for (const std::string plant :
         {"mkdir -p /opt/maka-egress && echo 10.9.9.9 > /opt/maka-egress/proxy-ipv4 && "
          "chown 1000 /opt/maka-egress/proxy-ipv4",
          "mkdir -p /opt/maka-egress && chmod 777 /opt/maka-egress && echo 10.9.9.9 > "
          "/opt/maka-egress/proxy-ipv4",
          "mkdir -p /opt/maka-egress && echo 10.9.9.9 > /tmp/elsewhere && ln -s /tmp/elsewhere "
          "/opt/maka-egress/proxy-ipv4"}) {
        CAPTURE(plant);
        container c({"--network", "container:" + cell.sidecar.name, "--cap-drop", "NET_RAW"});
        REQUIRE(c.exec(plant).exit_code == 0);
        trial t(in_container({}, "exit 0"), cell.relay_args(c), cell.env());
        const auto o = t.finish();
        CHECK(o.exit_code == relay::exit_environment);
        INFO(o.relay_log);
        CHECK(o.relay_log.find("the proxy's published address cannot be trusted: /opt/maka-egress") !=
              std::string::npos);
        CHECK(o.transcript.at("ready").is_null());
        CHECK(c.exec("grep -c 10.9.9.9 /etc/hosts").out == "0\n");
    }
}

TEST_CASE("cancel: SIGTERM with a TERM-respecting subject, its last frame passes through") {
    require_engine();
    container c;
    trial t(
        in_container({}, "trap '\"$HELPER\" frame \"{\\\"stopped\\\":1}\"; exit 0' TERM; sleep 3611 & wait"),
        c.relay_args());
    t.wait_running(c.scope());
    t.signal(SIGTERM);
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_cancelled);
    const auto& executed = executed_of(o);
    CHECK(executed.at("termination").as_string() == "framework_timeout");
    CHECK(executed.at("exitCode").as_int64() == 124);
    CHECK(executed.at("stdout").as_string() == "{\"stopped\":1}");
    CHECK(c.no_process_soon("sleep 3611"));
    CHECK(c.running());
}

TEST_CASE("cancel: a TERM-ignoring subject and a setsid'd daemon are both gone, the container intact") {
    require_engine();
    container c;
    cancel_settles_the_whole_tree(c, base_env(), 3612);
}

TEST_CASE("the orchestrator disconnecting mid-run settles the subject in the container") {
    require_engine();
    container c;
    trial t(in_container({"--scenario", "close-during-run", "--delay-ms", "500"}, "sleep 3614"),
            c.relay_args());
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_transport_lost);
    CHECK(o.transcript.at("executed").is_null());
    CHECK(c.no_process_soon("sleep 3614"));
}

TEST_CASE("a SIGKILLed relay leaves nothing running: the helper settles on stdin EOF") {
    require_engine();
    container c;
    killed_relay_leaves_nothing(c, base_env(), 3615);
}

// The teardown budget on the engine (docs/running.md, "The teardown budget is a promise"): a 10 s budget,
// which an orchestrator may well give, with the default 20 s TERM and 10 s KILL graces: they are fitted
// inside it, the subject is settled, nothing is destroyed, and the relay is done within the budget.

// The processes the engine counts in a container.
int container_pids(const container& c) {
    const auto r = docker({"stats", "--no-stream", "--format", "{{.PIDs}}", c.name});
    return r.exit_code == 0 && !r.out.empty() && std::isdigit(static_cast<unsigned char>(r.out[0])) != 0
               ? std::stoi(r.out)
               : 0;
}

// SIGTERM to the relay under a 10 s budget once `ready_to_stop` holds: settled without destroy, inside it.
void settled_inside_10_s(const container& c, trial& t, const std::string& marker,
                         const std::function<bool()>& ready_to_stop) {
    t.wait_running(c.scope());
    REQUIRE(eventually(ready_to_stop, 60000));
    const auto begun = std::chrono::steady_clock::now();
    t.signal(SIGTERM);
    const auto o = t.finish();
    CHECK(std::chrono::steady_clock::now() - begun < 10s);
    CHECK(o.exit_code == relay::exit_cancelled);
    CHECK(executed_of(o).at("termination").as_string() == "framework_timeout");
    INFO(o.relay_log);
    CHECK(o.relay_log.find("graces (") != std::string::npos);
    CHECK(o.relay_log.find("settled (") != std::string::npos);
    CHECK(o.relay_log.find("destroy") == std::string::npos);
    CHECK(c.running());
    CHECK(c.no_process_soon(marker));
}

TEST_CASE("budget: a TERM-ignoring subject is settled inside a 10 s budget, the default graces fitted") {
    require_engine();
    container c;
    trial t(in_container({}, "trap '' TERM; : > /tmp/trapped; exec sleep 3644"),
            c.relay_args({"--teardown-timeout-ms", "10000"}));
    settled_inside_10_s(c, t, "sleep 3644", [&] { return c.exec("test -e /tmp/trapped").exit_code == 0; });
}

TEST_CASE("budget: a fork bomb at the pids limit, TERM ignored, is settled inside a 10 s budget") {
    require_engine();
    container c({"--pids-limit", "256"});
    // Each level forks the next and becomes a TERM-ignoring sleep, until the kernel refuses forks.
    trial t(in_container({}, "trap '' TERM; b() { b & exec sleep 3640; }; b"),
            c.relay_args({"--teardown-timeout-ms", "10000"}));
    settled_inside_10_s(c, t, "sleep 3640", [&] { return container_pids(c) >= 200; });
}

TEST_CASE("budget: the helper's stream ending while settling does not extend the budget") {
    require_engine();
    container c;
    // The subject survives TERM (its trap only notes it) and names its supervisor.
    trial t(in_container({}, "echo $PPID > /tmp/supervisor; trap ': > /tmp/got-term' TERM; "
                             "while :; do sleep 3641; done"),
            c.relay_args({"--teardown-timeout-ms", "10000"}));
    t.wait_running(c.scope());
    REQUIRE(eventually([&] { return !c.exec("cat /tmp/supervisor").out.empty(); }, 10000));
    const auto begun = std::chrono::steady_clock::now();
    t.signal(SIGTERM);
    // The settle has begun (the subject got its TERM): now its supervisor vanishes.
    REQUIRE(eventually([&] { return c.exec("test -e /tmp/got-term").exit_code == 0; }, 10000));
    REQUIRE(c.exec("kill -9 \"$(cat /tmp/supervisor)\"").exit_code == 0);
    const auto o = t.finish();
    CHECK(std::chrono::steady_clock::now() - begun < 10s);
    CHECK(o.exit_code == relay::exit_cancelled);
    INFO(o.relay_log);
    CHECK(o.relay_log.find("ended without a report while settling") != std::string::npos);
    CHECK(o.relay_log.find("stopped through a fresh cancel") != std::string::npos);
    CHECK(o.relay_log.find("destroy") == std::string::npos);
    // The recovery got what the settle left of the span, not a fresh one.
    const auto left = [&](const std::string& phase) {
        const auto at = o.relay_log.find(phase + " (");
        REQUIRE(at != std::string::npos);
        const auto value = o.relay_log.find("settleLeftMs=", at);
        REQUIRE(value != std::string::npos);
        return std::stol(o.relay_log.substr(value + std::string_view("settleLeftMs=").size()));
    };
    CHECK(left("recover") < left("settle"));
    CHECK(c.running());
    CHECK(c.no_process_soon("sleep 3641"));
}

TEST_CASE("a container killed for memory is named as such") {
    require_engine();
    // Its main process waits for the subject's word, then grows past the memory limit: the kernel kills it,
    // and with it the container.
    container c({"--memory", "32m", "--memory-swap", "32m"}, "maka-eval-test-busybox:test",
                {"sh", "-c",
                 "while [ ! -e /tmp/go ]; do sleep 0.1; done; x=$(head -c 200000000 /dev/zero | tr '\\0' a); "
                 "sleep 3642"});
    trial t(in_container({}, ": > /tmp/go; sleep 3643"), c.relay_args());
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_environment);
    INFO(o.relay_log);
    CHECK(o.relay_log.find("ran out of memory") != std::string::npos);
    CHECK(o.relay_log.find("OOMKilled") != std::string::npos);
    CHECK(o.relay_log.find("destroy") == std::string::npos);
    CHECK(docker({"inspect", "-f", "{{.State.OOMKilled}}", c.name}).out == "true\n");
}

TEST_CASE("the container killed mid-run: a clear error, no hang, and the container left for inspection") {
    require_engine();
    container c;
    trial t(in_container({}, "echo evidence; sleep 3616"), c.relay_args());
    t.wait_running(c.scope());
    const auto begun = std::chrono::steady_clock::now();
    REQUIRE(docker({"kill", c.name}).exit_code == 0);
    const auto o = t.finish(20000);
    CHECK(std::chrono::steady_clock::now() - begun < 10s);
    CHECK(o.exit_code == relay::exit_environment);
    CHECK(o.relay_log.find("ended without a report") != std::string::npos);
    INFO(o.relay_log);
    CHECK(o.relay_log.find("left as it is for inspection") != std::string::npos);
    CHECK(o.relay_log.find("destroy") == std::string::npos);
    // Nothing runs any more, so nothing was destroyed: what the subject wrote is still there to look at,
    // staged (never published: its supervisor did not get to the end), and the log says where.
    CHECK(o.relay_log.find("/logs/artifacts/.maka-eval-staging-* (never published)") != std::string::npos);
    const auto copied = docker({"cp", c.name + ":/logs/artifacts", "-"});
    REQUIRE(copied.exit_code == 0);
    CHECK(copied.out.find(".maka-eval-staging-") != std::string::npos);
    CHECK(copied.out.find("evidence\n") != std::string::npos);
}

TEST_CASE("errors name the problem: a missing container, a paused one") {
    require_engine();
    trial missing(in_container({}, "exit 0"), {"--env", "docker:maka-e2e-does-not-exist"});
    auto o = missing.finish();
    CHECK(o.exit_code == relay::exit_environment);
    CHECK(o.relay_log.find("does not exist") != std::string::npos);
    container c;
    REQUIRE(docker({"pause", c.name}).exit_code == 0);
    trial paused(in_container({}, "exit 0"), c.relay_args());
    o = paused.finish();
    CHECK(o.exit_code == relay::exit_environment);
    CHECK(o.relay_log.find("paused") != std::string::npos);
    (void)docker({"unpause", c.name});
}

// The subject is hostile (docs/security.md): what it can and cannot do to its supervisor and to later trials.

TEST_CASE("security: a uid-1000 subject can neither kill nor stop its root supervisor, nor read it") {
    require_engine();
    container c({"--user", "1000:1000"});
    trial t(in_container({},
                         "id -u; kill -9 $PPID || echo kill-refused; kill -STOP $PPID || echo stop-refused; "
                         "cat /proc/$PPID/environ >/dev/null 2>&1 || echo environ-refused; "
                         "ls /proc/$PPID/fd >/dev/null 2>&1 || echo fd-refused; "
                         "ls /logs/agent; \"$HELPER\" frame '{\"ok\":1}'"),
            c.relay_args());
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_success);
    CHECK(executed_of(o).at("stdout").as_string() == "{\"ok\":1}");
    CHECK(o.relay_log.find("supervisor=root") != std::string::npos);
    const auto out = c.exec("cat /logs/artifacts/maka-subject.stdout.txt").out;
    CHECK(out.starts_with(
        "1000\nkill-refused\nstop-refused\nenviron-refused\nfd-refused\nMAKA-EVAL-RESULT-V1 "));
    // The scope record is in the root-only directory, not where the subject could delete it.
    CHECK(c.exec("ls /run/maka-eval", "1000").exit_code != 0);
}

TEST_CASE("security: a root subject that kills its supervisor is settled without destroying the container") {
    require_engine();
    container c;
    trial t(in_container({}, "sleep 3620 & kill -9 $PPID; sleep 3621"), c.relay_args());
    const auto o = t.finish(30000);
    CHECK(o.exit_code == relay::exit_environment);
    CHECK(o.relay_log.find("stopped through a fresh cancel") != std::string::npos);
    CHECK(o.relay_log.find("destroy") == std::string::npos);
    CHECK(c.running());
    CHECK(c.no_process_soon("sleep 3620"));
    CHECK(c.no_process_soon("sleep 3621"));
}

TEST_CASE("security: a root subject that stops its supervisor is noticed by the heartbeat and settled") {
    require_engine();
    container c;
    trial t(in_container({}, "sleep 3630 & kill -STOP $PPID; sleep 3631"), c.relay_args());
    const auto begun = std::chrono::steady_clock::now();
    const auto o = t.finish(30000);
    CHECK(o.exit_code == relay::exit_environment);
    CHECK(o.relay_log.find("the supervisor stopped answering") != std::string::npos);
    CHECK(o.relay_log.find("stopped through a fresh cancel") != std::string::npos);
    CHECK(o.relay_log.find("destroy") == std::string::npos);
    // Three missed 2 s beats, then the cancel: well inside the budget, not at its end.
    CHECK(std::chrono::steady_clock::now() - begun < 20s);
    CHECK(c.running());
    CHECK(c.no_process_soon("sleep 3630"));
    CHECK(c.no_process_soon("sleep 3631"));
    CHECK(c.no_process_soon(in_container_helper + " session", true));
}

TEST_CASE(
    "security: a uid-1000 subject runs with /logs/artifacts root-owned 755 or 1777, a symlink is refused") {
    require_engine();
    for (const std::string mode : {"755", "1777"}) {
        CAPTURE(mode);
        container c({"--user", "1000:1000"});
        REQUIRE(c.exec("chown 0:0 /logs/artifacts && chmod " + mode + " /logs/artifacts").exit_code == 0);
        trial t(in_container({}, "echo from-the-subject; \"$HELPER\" frame '{}'"), c.relay_args());
        const auto o = t.finish();
        CHECK(o.exit_code == relay::exit_success);
        CHECK(c.exec("cat /logs/artifacts/maka-subject.stdout.txt").out.starts_with("from-the-subject\n"));
        // Root's file, readable by the subject's group, writable by nobody else.
        CHECK(c.exec("stat -c '%u:%g %a' /logs/artifacts/maka-subject.stdout.txt").out == "0:1000 640\n");
    }
    container c({"--user", "1000:1000"});
    REQUIRE(
        c.exec("rm -rf /logs/artifacts && mkdir /elsewhere && ln -s /elsewhere /logs/artifacts").exit_code ==
        0);
    trial t(in_container({}, "exit 0"), c.relay_args());
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_environment);
    CHECK(o.relay_log.find("could not prepare subject artifact output") != std::string::npos);
    CHECK(c.exec("ls /elsewhere").out.empty());
}

TEST_CASE("security: what an earlier trial's subject left is stopped before the next one starts") {
    require_engine();
    container c;
    // Trial 1 leaves a setsid'd writer holding the old stdout artifact through the drainer.
    trial first(in_container({}, "setsid sh -c 'while :; do echo old-trial; sleep 0.1; done' & "
                                 "exec sleep 3622 >/dev/null 2>&1 & \"$HELPER\" frame '{}'"),
                c.relay_args({"--term-grace-ms", "300"}));
    CHECK(first.finish().exit_code == relay::exit_success);
    REQUIRE(c.has_process("sleep 3622"));
    // --keep-leftovers: left alone.
    trial kept(in_container({}, "\"$HELPER\" frame '{}'"), c.relay_args({"--keep-leftovers"}));
    CHECK(kept.finish().exit_code == relay::exit_success);
    CHECK(c.has_process("sleep 3622"));
    trial second(in_container({}, "\"$HELPER\" frame '{}'"), c.relay_args());
    const auto o = second.finish();
    CHECK(o.exit_code == relay::exit_success);
    CHECK(c.no_process_soon("sleep 3622"));
    CHECK(c.no_process_soon("sh -c while :; do echo old-trial; sleep 0.1; done"));
    // A fresh inode: trial 1's writer never reached trial 2's artifact.
    CHECK(c.exec("cat /logs/artifacts/maka-subject.stdout.txt").out.find("old-trial") == std::string::npos);
}

TEST_CASE("a daemon started by a subject that exits normally survives, for the verifier") {
    require_engine();
    container c;
    trial t(in_container({}, "setsid sleep 3617 >/dev/null 2>&1 & \"$HELPER\" frame '{}'"), c.relay_args());
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_success);
    CHECK(c.has_process("sleep 3617"));
}

} // namespace

// Faults from outside the subject: named for their cause, never answered by destroying the container.

TEST_CASE("faults: a container paused mid-run is waited for, the trial completes, nothing is destroyed") {
    require_engine();
    container c;
    trial t(in_container({}, "while [ ! -e /tmp/resumed ]; do sleep 0.1; done; \"$HELPER\" frame resumed"),
            c.relay_args());
    t.wait_running(c.scope());
    REQUIRE(docker({"pause", c.name}).exit_code == 0);
    // Three missed heartbeats, then the engine's word: paused, so the relay waits.
    CHECK(t.log_shows("paused ("));
    REQUIRE(docker({"unpause", c.name}).exit_code == 0);
    REQUIRE(c.exec(": > /tmp/resumed").exit_code == 0);
    const auto o = t.finish();
    INFO(o.relay_log);
    CHECK(o.exit_code == relay::exit_success);
    CHECK(executed_of(o).at("termination").as_string() == "exited");
    CHECK(executed_of(o).at("stdout").as_string() == "resumed");
    CHECK(o.relay_log.find("from inside") == std::string::npos);
    CHECK(o.relay_log.find("destroy (") == std::string::npos);
    CHECK(c.running());
}

TEST_CASE("faults: paused and then cancelled, the container is left paused, not destroyed") {
    require_engine();
    container c;
    trial t(in_container({}, "sleep 3653"), c.relay_args({"--teardown-timeout-ms", "10000"}));
    t.wait_running(c.scope());
    REQUIRE(docker({"pause", c.name}).exit_code == 0);
    t.signal(SIGTERM);
    const auto o = t.finish(40000);
    INFO(o.relay_log);
    CHECK(o.exit_code == relay::exit_cancelled);
    CHECK(o.relay_log.find("is paused (docker pause") != std::string::npos);
    CHECK(o.relay_log.find("left paused, not destroyed") != std::string::npos);
    CHECK(o.relay_log.find("destroy (") == std::string::npos);
    CHECK(docker({"inspect", "-f", "{{.State.Paused}}", c.name}).out == "true\n");
    (void)docker({"unpause", c.name});
}

TEST_CASE("faults: docker restart mid-run is named as a restart from outside, the container kept") {
    require_engine();
    container c;
    trial t(in_container({}, "sleep 3654"), c.relay_args());
    t.wait_running(c.scope());
    REQUIRE(docker({"restart", "-t", "1", c.name}).exit_code == 0);
    const auto o = t.finish(40000);
    INFO(o.relay_log);
    CHECK(o.exit_code == relay::exit_environment);
    CHECK(o.relay_log.find("restarted from outside") != std::string::npos);
    CHECK(o.relay_log.find("from inside") == std::string::npos);
    CHECK(o.relay_log.find("destroy (") == std::string::npos);
    CHECK(c.running());
}

TEST_CASE("faults: a read-only root filesystem is named as the reason the helper cannot go in") {
    require_engine();
    container c({"--read-only"});
    trial t(in_container({}, "exit 0"), c.relay_args());
    const auto o = t.finish();
    INFO(o.relay_log);
    CHECK(o.exit_code == relay::exit_environment);
    CHECK(o.relay_log.find("read-only root filesystem (HostConfig.ReadonlyRootfs") != std::string::npos);
    CHECK(o.relay_log.find("--helper-in-container") != std::string::npos);
}

TEST_CASE("an unknown --user is refused in one line with the engine's own words") {
    require_engine();
    container c;
    trial t(in_container({}, "exit 0"), c.relay_args({"--user", "ghost"}));
    const auto o = t.finish();
    INFO(o.relay_log);
    CHECK(o.exit_code == relay::exit_environment);
    CHECK(o.relay_log.find("unable to find user ghost") != std::string::npos);
    CHECK(o.relay_log.find('\r') == std::string::npos);
}

// Hardened containers: the trial runs wherever the kernel allows it, and says in which mode; where it cannot,
// one sentence names the missing capability, option or read-only path and what the operator can do.

TEST_CASE(
    "hardened: no-new-privileges with a non-root user runs same-uid and says why and --user 0 runs too") {
    require_engine();
    container c({"--security-opt", "no-new-privileges", "--user", "1000:1000"});
    {
        trial t(in_container({}, "id -u; \"$HELPER\" frame \"$(id -u)\""), c.relay_args());
        const auto o = t.finish();
        INFO(o.relay_log);
        CHECK(o.exit_code == relay::exit_success);
        CHECK(executed_of(o).at("stdout").as_string() == "1000");
        CHECK(o.relay_log.find("supervisor=same-uid") != std::string::npos);
        CHECK(
            o.relay_log.find("notRootBecause=root here lacks CAP_SETUID/CAP_SETGID (the container runs with "
                             "no-new-privileges") != std::string::npos);
    }
    // Root in an exec holds no capability here; as the subject's own identity it needs none.
    trial t(in_container({}, "\"$HELPER\" frame \"$(id -u)\""), c.relay_args({"--user", "0"}));
    const auto o = t.finish();
    INFO(o.relay_log);
    CHECK(o.exit_code == relay::exit_success);
    CHECK(executed_of(o).at("stdout").as_string() == "0");
    CHECK(o.relay_log.find("cannot probe") == std::string::npos);
}

TEST_CASE("hardened: --cap-drop ALL runs a root subject and a --user 1000 subject, and says which mode") {
    require_engine();
    container c({"--cap-drop", "ALL"});
    {
        trial t(in_container({}, "\"$HELPER\" frame \"$(id -u)\""), c.relay_args({"--user", "root"}));
        const auto o = t.finish();
        INFO(o.relay_log);
        CHECK(o.exit_code == relay::exit_success);
        CHECK(executed_of(o).at("stdout").as_string() == "0");
        CHECK(o.relay_log.find("supervisor=root-subject") != std::string::npos);
    }
    // A fresh artifacts directory: the root subject's files are not the 1000 subject's to replace.
    REQUIRE(c.exec("rm -f /logs/artifacts/*").exit_code == 0);
    trial t(in_container({}, "\"$HELPER\" frame \"$(id -u)\""), c.relay_args({"--user", "1000"}));
    const auto o = t.finish();
    INFO(o.relay_log);
    CHECK(o.exit_code == relay::exit_success);
    CHECK(executed_of(o).at("stdout").as_string() == "1000");
    CHECK(o.relay_log.find("notRootBecause=root here lacks CAP_SETUID/CAP_SETGID (the container was started "
                           "with --cap-drop)") != std::string::npos);
}

TEST_CASE("hardened: a same-uid helper that cannot replace a root trial's artifacts says whose they are") {
    require_engine();
    container c({"--security-opt", "no-new-privileges", "--user", "1000:1000"});
    {
        trial t(in_container({}, "exit 0"), c.relay_args({"--user", "0"}));
        CHECK(t.finish().exit_code == relay::exit_success);
    }
    trial t(in_container({}, "exit 0"), c.relay_args());
    const auto o = t.finish();
    INFO(o.relay_log);
    CHECK(o.exit_code == relay::exit_environment);
    CHECK(o.relay_log.find("an earlier trial's file, owned by uid 0; the directory is sticky") !=
          std::string::npos);
    CHECK(o.relay_log.find("(the helper ran as the subject's user, not as root: root here lacks") !=
          std::string::npos);
}

TEST_CASE(
    "hardened: a read-only root runs with a mounted helper and a tmpfs /logs, and names /logs without") {
    require_engine();
    const std::string mount = container_helper() + ":/maka-eval/maka-eval-helper:ro";
    {
        container c({"--read-only", "--tmpfs", "/tmp", "--tmpfs", "/logs:mode=1777", "-v", mount});
        trial t(subject({}, "\"$HELPER\" frame ro", "/maka-eval/maka-eval-helper"),
                c.relay_args({"--helper-in-container", "/maka-eval/maka-eval-helper"}));
        const auto o = t.finish();
        INFO(o.relay_log);
        CHECK(o.exit_code == relay::exit_success);
        CHECK(executed_of(o).at("stdout").as_string() == "ro");
    }
    {
        container c({"--read-only", "-v", mount});
        trial t(subject({}, "exit 0", "/maka-eval/maka-eval-helper"),
                c.relay_args({"--helper-in-container", "/maka-eval/maka-eval-helper"}));
        const auto o = t.finish();
        INFO(o.relay_log);
        CHECK(o.exit_code == relay::exit_environment);
        CHECK(o.relay_log.find("/logs/artifacts: Read-only file system (give the container a writable "
                               "/logs/artifacts") != std::string::npos);
    }
    // A tmpfs /tmp does not help the upload: Docker mounts it noexec. The message still says what does.
    container c({"--read-only", "--tmpfs", "/tmp", "--tmpfs", "/logs:mode=1777"});
    trial t(in_container({}, "exit 0"), c.relay_args());
    const auto o = t.finish();
    INFO(o.relay_log);
    CHECK(o.exit_code == relay::exit_environment);
    CHECK(o.relay_log.find("read-only root filesystem (HostConfig.ReadonlyRootfs") != std::string::npos);
}

// A reused container: no credential reaches a process that an earlier trial's root left behind, however it
// tries. Each attacker here is a root process the helper's record of leftovers does not know (started by
// `docker exec -d`, as one that escaped the record would be), in a container whose subjects are uid 1000 (so
// that the host record does not refuse the credential first: these are the defences under the refusal).

namespace {

// Starts `script` as a root process in the background of `c`, and waits until it has begun (a marker).
void start_attacker(const container& c, const std::string& script) {
    REQUIRE(docker({"exec", "-d", "-u", "0", c.name, "sh", "-c", ": > /tmp/attacker.up; " + script}, 30000,
                   c.engine)
                .exit_code == 0);
    REQUIRE(eventually([&] { return c.exec("test -e /tmp/attacker.up").exit_code == 0; }, 10000));
}

// The stdin thief: compiled with the host's C compiler (static: the image has no libc), copied in; returns
// the command that runs it.
std::string install_thief(const container& c) {
    const auto dir =
        std::filesystem::temp_directory_path() / ("maka-e2e-thief-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    {
        std::ofstream source(dir / "thief.c");
        source << R"(#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static char seen[1 << 22];
int main(void) {
    for (;;) {
        DIR* d = opendir("/proc");
        struct dirent* e;
        while (d && (e = readdir(d))) {
            int pid = atoi(e->d_name);
            if (pid <= 1 || pid >= (1 << 22) || seen[pid] || pid == getpid()) continue;
            char path[64];
            snprintf(path, sizeof path, "/proc/%d/fd/0", pid);
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            if (fd < 0) {
                if (errno != EACCES && errno != EPERM) seen[pid] = 1; /* gone, or no stdin: done with it */
                continue; /* not dumpable (yet): try again on the next pass */
            }
            seen[pid] = 1;
            if (fork() == 0) {
                char buf[65536];
                ssize_t n;
                int out = open("/tmp/stolen", O_WRONLY | O_CREAT | O_APPEND, 0644);
                while ((n = read(fd, buf, sizeof buf)) > 0) write(out, buf, (size_t)n);
                _exit(0);
            }
            close(fd);
        }
        if (d) closedir(d);
    }
}
)";
    }
    const auto built = run_process(
        {"/usr/bin/cc", "-static", "-O2", "-o", (dir / "thief").string(), (dir / "thief.c").string()});
    INFO(built.err);
    REQUIRE(built.exit_code == 0);
    REQUIRE(docker({"cp", (dir / "thief").string(), c.name + ":/tmp/thief"}, 30000, c.engine).exit_code == 0);
    std::filesystem::remove_all(dir);
    return "exec /tmp/thief";
}

// Replaces the container's /bin/sh (BusyBox: a link to busybox) with a script of `body` run by BusyBox's
// ash: a shell of the container's own that a root subject could have left.
void replace_shell(const container& c, const std::string& body) {
    const auto local = (std::filesystem::temp_directory_path() / (c.name + ".sh")).string();
    std::ofstream(local) << "#!/bin/busybox ash\n" << body << "\n";
    REQUIRE(c.exec("rm /bin/sh").exit_code == 0);
    REQUIRE(docker({"cp", local, c.name + ":/bin/sh"}, 30000, c.engine).exit_code == 0);
    std::filesystem::remove(local);
    REQUIRE(docker({"exec", "-u", "0", c.name, "/bin/busybox", "chmod", "755", "/bin/sh"}, 30000, c.engine)
                .exit_code == 0);
}

// The relay's record of installs kept somewhere new (as another host's relay would have its own): what ran
// in a container before is unknown to it. Removed at the end.
class record_elsewhere {
  public:
    explicit record_elsewhere(const std::string& name)
        : path_(std::filesystem::temp_directory_path() /
                ("maka-e2e-record-" + name + "-" + std::to_string(::getpid()))) {
        std::filesystem::create_directories(path_);
        REQUIRE(::chmod(path_.c_str(), 0700) == 0);
    }
    ~record_elsewhere() { std::filesystem::remove_all(path_); }
    record_elsewhere(const record_elsewhere&) = delete;
    record_elsewhere& operator=(const record_elsewhere&) = delete;
    [[nodiscard]] std::vector<std::string> env() const {
        auto out = base_env();
        out.push_back("XDG_RUNTIME_DIR=" + path_.string());
        return out;
    }

  private:
    std::filesystem::path path_;
};

// Runs `rounds` trials with a fresh canary credential each; every one ends in success or in a refusal that
// names the reader, and no canary is ever found in the container outside the subject's own artifacts.
void credentials_never_reach_the_attacker(const container& c, int rounds, const std::string& refusal) {
    int refused = 0;
    for (int round = 0; round < rounds; ++round) {
        CAPTURE(round);
        const std::string canary = "canary-" + std::to_string(::getpid()) + "-" + std::to_string(round);
        auto orchestrator_env = base_env();
        orchestrator_env.push_back("API_KEY=" + canary);
        trial t(in_container({"--credential", "API_KEY"}, "\"$HELPER\" frame '{}'"),
                c.relay_args({"--user", "1000"}), base_env(), orchestrator_env);
        const auto o = t.finish();
        INFO(o.relay_log);
        if (o.exit_code != relay::exit_success) {
            ++refused;
            CHECK(o.exit_code == relay::exit_environment);
            CHECK(o.relay_log.find(refusal) != std::string::npos);
        }
        const auto found =
            c.exec("grep -rl -- '" + canary + "' /tmp /run /root /.maka-eval 2>/dev/null; true");
        CHECK(found.out.empty());
    }
    MESSAGE("refused " << refused << " of " << rounds << " trials for the reader");
}

} // namespace

TEST_CASE("reused: a root leftover racing for the next helper's stdin reads no credential (x20)") {
    require_engine();
    container c({"--user", "1000:1000"});
    // A C program (static, compiled here for the BusyBox image) that opens every new process's stdin the
    // moment the kernel lets it, and copies what it reads: the window it races for is between the helper's
    // execve and main()'s first call (non-dumpable), or a cold install's shell. Whatever it opens there, the
    // relay must find holding the helper's stdin before `run`.
    start_attacker(c, install_thief(c));
    credentials_never_reach_the_attacker(c, 20, "holds the helper's stdin open");
}

TEST_CASE("reused: a root leftover swapping a forgery in at the helper's path reads no credential (x20)") {
    require_engine();
    container c({"--user", "1000:1000"});
    {
        trial first(in_container({}, "\"$HELPER\" frame '{}'"), c.relay_args({"--user", "1000"}));
        REQUIRE(first.finish().exit_code == relay::exit_success);
    }
    // The forgery passes the session through, copying it: the genuine bytes still answer hello.
    REQUIRE(c.exec("cp /.maka-eval/helper-* /tmp/genuine && printf '#!/bin/sh\\ntee -a /tmp/stolen | "
                   "/tmp/genuine \"$@\"\\n' > /tmp/forgery && chmod 755 /tmp/forgery")
                .exit_code == 0);
    start_attacker(c, "while :; do for f in /.maka-eval/helper-*; do cp /tmp/forgery $f.new 2>/dev/null && "
                      "mv -f $f.new $f; done; done");
    credentials_never_reach_the_attacker(c, 20, "nothing was sent into container");
}

TEST_CASE("reused: a container's own /bin/sh replaced, no record on this host: the cold install reads no "
          "credential") {
    require_engine();
    container c({"--user", "1000:1000"});
    // A shell that copies everything it is given, then is the shell.
    replace_shell(c, "/bin/busybox tee -a /tmp/stolen | /bin/busybox ash \"$@\"");
    // No record of this container on this host: a fresh record directory.
    const record_elsewhere record("sh");
    const auto env = record.env();
    const std::string canary = "canary-sh-" + std::to_string(::getpid());
    auto orchestrator_env = base_env();
    orchestrator_env.push_back("API_KEY=" + canary);
    trial t(in_container({"--credential", "API_KEY"}, "\"$HELPER\" frame '{}'"),
            c.relay_args({"--user", "1000"}), env, orchestrator_env);
    const auto o = t.finish();
    INFO(o.relay_log);
    CHECK(o.exit_code == relay::exit_environment);
    // Caught as what it is: the helper runs as the replaced shell's child (it pipes the session through tee).
    CHECK(o.relay_log.find("nothing was sent into container " + c.name +
                           ": the process that said hello (pid ") != std::string::npos);
    CHECK(o.relay_log.find("was not started by the engine but by `sh` in the container") !=
          std::string::npos);
    CHECK(c.exec("grep -c -- '" + canary + "' /tmp/stolen").out == "0\n");
}

TEST_CASE(
    "reused: a container with a helper in it but no record here is refused credentials, unless trusted") {
    require_engine();
    container c({"--user", "1000:1000"});
    {
        // A non-root subject's trial: this host's record knows the container, and nothing is refused.
        trial first(in_container({}, "\"$HELPER\" frame '{}'"), c.relay_args({"--user", "1000"}));
        REQUIRE(first.finish().exit_code == relay::exit_success);
    }
    auto orchestrator_env = base_env();
    orchestrator_env.push_back("API_KEY=canary-norecord");
    {
        trial known(in_container({"--credential", "API_KEY"}, "\"$HELPER\" frame '{}'"),
                    c.relay_args({"--user", "1000"}), base_env(), orchestrator_env);
        const auto o = known.finish();
        INFO(o.relay_log);
        CHECK(o.exit_code == relay::exit_success);
    }
    // Another host's relay (a record of its own, empty): the history is unknown.
    const record_elsewhere record("norecord");
    const auto env = record.env();
    {
        trial unknown(in_container({"--credential", "API_KEY"}, "\"$HELPER\" frame '{}'"),
                      c.relay_args({"--user", "1000"}), env, orchestrator_env);
        const auto o = unknown.finish();
        INFO(o.relay_log);
        CHECK(o.exit_code == relay::exit_refused);
        CHECK(o.relay_log.find("used by an earlier trial this host has no record of") != std::string::npos);
    }
    {
        trial trusted(in_container({"--credential", "API_KEY"}, "\"$HELPER\" frame '{}'"),
                      c.relay_args({"--user", "1000", "--trust-reused-container"}), env, orchestrator_env);
        const auto o = trusted.finish();
        INFO(o.relay_log);
        CHECK(o.exit_code == relay::exit_success);
        CHECK(o.relay_log.find("trusted (") != std::string::npos);
    }
}

TEST_CASE("reused: seen from afar (a remote engine's way), a first trial never runs the container's shell") {
    require_engine();
    container c({"--user", "1000:1000"});
    // A shell that marks when it is given the cold install (its script names maka-eval-incoming); the
    // subject's own `sh -c` runs it too, unmarked.
    replace_shell(c, "case \"$*\" in *maka-eval-incoming*) : > /tmp/shell-ran;; esac\n"
                     "/bin/busybox ash \"$@\"");
    const record_elsewhere record("afar");
    auto env = record.env();
    env.emplace_back(
        "MAKA_EVAL_CHECK_HELPER_THROUGH_ENGINE=1"); // the copy is looked at as on a remote engine
    trial t(in_container({}, "\"$HELPER\" frame '{}'"), c.relay_args({"--user", "1000"}), env);
    const auto o = t.finish();
    INFO(o.relay_log);
    CHECK(o.exit_code == relay::exit_success);
    // inspect, the download that finds nothing, the upload, exec create and start
    CHECK(engine_calls(o.relay_log) == 5);
    // Asked without a shell (the test's own c.exec would run the replaced one).
    CHECK(docker({"exec", c.name, "test", "-e", "/tmp/shell-ran"}).exit_code == 1);
}

namespace {

// Sets oom_score_adj of every process of container `id` on this host: `helper_adj` for the helper session,
// `other_adj` for the rest (this host's root may lower it; the container's may not).
void set_oom_adj(const std::string& id, int helper_adj, int other_adj) {
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        const auto name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos ||
            read_text((entry.path() / "cgroup").string()).find(id) == std::string::npos) {
            continue;
        }
        const bool helper =
            read_text((entry.path() / "cmdline").string()).find("session") != std::string::npos;
        std::ofstream(entry.path() / "oom_score_adj") << (helper ? helper_adj : other_adj);
    }
}

} // namespace

TEST_CASE("faults: a supervisor killed for memory in a running container is named so, not blamed inside") {
    require_engine();
    require_root("to set the container's processes' oom_score_adj from this host");
    // Three rounds: the kernel sometimes takes the whole container too (the recovery's own exec needs memory
    // while the subject still holds it), which is named as the container's OOM; the supervisor alone killed
    // must be named from the memory cgroup's count. Either way never "from inside".
    int supervisor_alone = 0;
    for (int round = 0; round < 3; ++round) {
        CAPTURE(round);
        container c({"--memory", "64m", "--memory-swap", "64m", "--shm-size", "256m"});
        // Memory the kernel cannot reclaim (tmpfs), a megabyte at a time until the supervisor is gone, then
        // given back. Made from outside the OOM killer's only choice: the supervisor +1000, the rest -1000.
        trial t(in_container({}, "while [ ! -e /tmp/go ]; do sleep 0.05; done; i=0; while kill -0 $PPID "
                                 "2>/dev/null; do head -c 1000000 /dev/zero > /dev/shm/f$i || break; "
                                 "i=$((i+1)); done; rm -f /dev/shm/f*; sleep 3657"),
                c.relay_args({"--teardown-timeout-ms", "10000"}));
        t.wait_running(c.scope());
        const auto id = docker({"inspect", "-f", "{{.Id}}", c.name}).out;
        set_oom_adj(id.substr(0, id.size() - 1), 1000, -1000);
        REQUIRE(docker({"exec", c.name, "touch", "/tmp/go"}).exit_code == 0);
        const auto o = t.finish(60000);
        INFO(o.relay_log);
        CHECK(o.exit_code == relay::exit_environment);
        const bool alone = o.relay_log.find("for memory while the subject ran (its memory cgroup's oom_kill "
                                            "count went from") != std::string::npos;
        CHECK((alone || o.relay_log.find("the environment ran out of memory") != std::string::npos));
        CHECK(o.relay_log.find("from inside") == std::string::npos);
        supervisor_alone += alone ? 1 : 0;
    }
    MESSAGE("the supervisor alone was killed in " << supervisor_alone << " of 3 rounds");
}
