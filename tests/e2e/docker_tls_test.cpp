// End to end on a remote-style engine reached over mutual TLS: the second dockerd of tests/e2e/tls_engine.sh
// (ctest starts it as this suite's fixture and stops it after), on 127.0.0.1 with --tlsverify and
// certificates made with `openssl`. A trial, a cancel and the dead-man switch go through it the way the
// docker CLI would reach it (DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH); the failure cases each end
// before any container work with a message that names the problem. The tests' own set-up (containers, ps)
// uses that engine's unix socket.
#include "e2e/engine_fixture.hpp"
#include "relay/support/exit_codes.hpp"
#include "relay/trial_fixture.hpp"
#include "support/process.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval;
using namespace maka_eval::test;

// The TLS engine's directory (tls_engine.sh's DIR), given by ctest.
std::filesystem::path engine_dir() {
    const char* dir = std::getenv("MAKA_EVAL_TLS_ENGINE");
    REQUIRE(dir != nullptr);
    REQUIRE(std::filesystem::exists(std::filesystem::path(dir) / "port"));
    return dir;
}

std::string first_line(const std::filesystem::path& file) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);
    return line;
}

// The CLI host of the TLS engine's own unix socket, for the tests' set-up.
std::string setup_socket() {
    return "unix://" + (engine_dir() / "docker.sock").string();
}

std::string tls_host(const std::string& address = "127.0.0.1") {
    return "tcp://" + address + ":" + first_line(engine_dir() / "port");
}

// The relay's environment for the engine at `host` with the client files of `certs` (a directory of
// tls_engine.sh: good, other-ca, expired-client, no-client; or any path).
std::vector<std::string> tls_env(const std::string& host, const std::string& certs = "good") {
    auto env = base_env();
    const auto path = certs.starts_with('/') ? std::filesystem::path(certs) : engine_dir() / certs;
    env.insert(env.end(),
               {"DOCKER_HOST=" + host, "DOCKER_TLS_VERIFY=1", "DOCKER_CERT_PATH=" + path.string()});
    return env;
}

// One `maka-eval-relay run` against container `c` with `env`: its exit code and stderr.
process_result run_against(const container& c, const std::vector<std::string>& env) {
    return run_process({relay_binary, "run", "--quiet", "--no-follow", "--env", "docker:" + c.name,
                        "--helper", container_helper(), "--", "true"},
                       "", env, 30000);
}

struct tls_container : container {
    tls_container() : container({}, "maka-eval-test-busybox:test", {}, setup_socket()) {}
};

TEST_CASE("TLS: a trial through an engine reached over mutual TLS, 3 engine calls in a fresh container") {
    require_engine();
    tls_container c;
    trial t(in_container({}, "\"$HELPER\" frame '{\"over\":\"tls\"}'"), c.relay_args(), tls_env(tls_host()));
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_success);
    CHECK(executed_of(o).at("stdout").as_string() == "{\"over\":\"tls\"}");
    CHECK(o.relay_log.find("via " + tls_host()) != std::string::npos);
    CHECK(o.relay_log.find("engineCalls=3") != std::string::npos);
    // The client key is never in the log.
    CHECK(o.relay_log.find("PRIVATE KEY") == std::string::npos);
    const auto key = read_text((engine_dir() / "good" / "key.pem").string());
    const auto body_start = key.find('\n') + 1;
    CHECK(o.relay_log.find(key.substr(body_start, 40)) == std::string::npos);
    // Once the trial is over the helper is gone too: its stdin ended with the relay's half of the connection.
    CHECK(c.no_process_soon("/.maka-eval/helper-", true));
}

TEST_CASE("TLS: a name the certificate lists (localhost) works as well as the address") {
    require_engine();
    tls_container c;
    trial t(in_container({}, "\"$HELPER\" frame '{}'"), c.relay_args(), tls_env(tls_host("localhost")));
    CHECK(t.finish().exit_code == relay::exit_success);
}

TEST_CASE("TLS: a docker context made by the docker CLI itself names the engine and its TLS files") {
    require_engine();
    tls_container c;
    scratch config;
    const auto good = engine_dir() / "good";
    const std::vector<std::string> cli_env{"PATH=/usr/bin:/bin:/usr/local/bin", "HOME=/tmp",
                                           "DOCKER_CONFIG=" + config.path().string()};
    const auto created =
        run_process({docker_cli(), "context", "create", "maka-remote", "--docker",
                     "host=" + tls_host() + ",ca=" + (good / "ca.pem").string() +
                         ",cert=" + (good / "cert.pem").string() + ",key=" + (good / "key.pem").string()},
                    "", cli_env);
    INFO(created.err);
    REQUIRE(created.exit_code == 0);
    auto env = base_env();
    env.insert(env.end(), {"DOCKER_CONFIG=" + config.path().string(), "DOCKER_CONTEXT=maka-remote"});
    trial t(in_container({}, "\"$HELPER\" frame '{\"context\":1}'"), c.relay_args(), env);
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_success);
    CHECK(executed_of(o).at("stdout").as_string() == "{\"context\":1}");
    CHECK(o.relay_log.find("via " + tls_host() + ", mutual TLS, docker context maka-remote") !=
          std::string::npos);
}

TEST_CASE("TLS: a cancel stops the subject's whole tree through the TLS engine") {
    require_engine();
    tls_container c;
    cancel_settles_the_whole_tree(c, tls_env(tls_host()), 3701);
}

TEST_CASE("TLS: a SIGKILLed relay leaves nothing running (the dead-man switch over TLS)") {
    require_engine();
    tls_container c;
    killed_relay_leaves_nothing(c, tls_env(tls_host()), 3703);
}

// A failure case: exit 5 (environment), the message, and nothing started in the container.
void refused(const container& c, const std::vector<std::string>& env, const std::string& message) {
    const auto r = run_against(c, env);
    INFO(r.err);
    CHECK(r.exit_code == relay::exit_environment);
    CHECK(r.err.find(message) != std::string::npos);
    CHECK_FALSE(c.has_process("/.maka-eval/helper-", true));
}

TEST_CASE("TLS: an engine whose certificate is not signed by ca.pem is not trusted") {
    require_engine();
    tls_container c;
    refused(c, tls_env(tls_host(), "other-ca"),
            "the Docker engine at " + tls_host() +
                " is not trusted: its certificate (/CN=server) is not signed by " +
                (engine_dir() / "other-ca" / "ca.pem").string());
}

TEST_CASE("TLS: an engine reached by an address its certificate does not list is refused") {
    require_engine();
    tls_container c;
    // The engine listens on 127.0.0.2 too; its certificate names 127.0.0.1 and localhost only.
    refused(c, tls_env(tls_host("127.0.0.2")),
            "presented a certificate (/CN=server) that does not name 127.0.0.2");
}

TEST_CASE("TLS: an engine presenting an expired certificate is refused, with the expiry") {
    require_engine();
    tls_container c;
    const auto host = "tcp://127.0.0.1:" + first_line(engine_dir() / "expired-port");
    const auto r = run_against(c, tls_env(host));
    INFO(r.err);
    CHECK(r.exit_code == relay::exit_environment);
    CHECK(r.err.find("the Docker engine at " + host +
                     " presented a certificate (/CN=expired-server) that expired on ") != std::string::npos);
    CHECK(r.err.find("must be renewed") != std::string::npos);
}

TEST_CASE("TLS: the engine refusing an expired client certificate, or none, is said so") {
    require_engine();
    tls_container c;
    refused(c, tls_env(tls_host(), "expired-client"),
            "refused the client certificate " + (engine_dir() / "expired-client" / "cert.pem").string());
    refused(c, tls_env(tls_host(), "no-client"),
            "requires a client certificate, and " + (engine_dir() / "no-client").string() +
                " has no cert.pem and key.pem");
}

TEST_CASE("TLS: a missing or unreadable certificate file fails before any connection") {
    require_engine();
    tls_container c;
    scratch empty;
    refused(c, tls_env(tls_host(), empty.path().string()),
            "cannot read the engine's CA certificate " + (empty.path() / "ca.pem").string() +
                ": No such file or directory");
    // A key that cannot be read (as root, permissions do not stop us: a directory in its place does).
    for (const char* file : {"ca.pem", "cert.pem"}) {
        std::filesystem::copy_file(engine_dir() / "good" / file, empty.path() / file);
    }
    std::filesystem::create_directory(empty.path() / "key.pem");
    refused(c, tls_env(tls_host(), empty.path().string()),
            "cannot read the client key " + (empty.path() / "key.pem").string() + ": Is a directory");
}

TEST_CASE("TLS: a key that is not the certificate's, or an encrypted one, is said so (never prompted for)") {
    require_engine();
    tls_container c;
    const auto dir = engine_dir();
    refused(c, tls_env(tls_host(), "mismatched-key"),
            (dir / "mismatched-key" / "key.pem").string() + " is not the PEM private key of " +
                (dir / "mismatched-key" / "cert.pem").string());
    // stdin is empty and there is no terminal: a passphrase prompt would fail or hang; it must not happen.
    refused(c, tls_env(tls_host(), "encrypted-key"),
            (dir / "encrypted-key" / "key.pem").string() + " is encrypted");
}

TEST_CASE("TLS: plain HTTP to the engine's TLS port names the fix") {
    require_engine();
    tls_container c;
    auto env = base_env();
    env.push_back("DOCKER_HOST=" + tls_host());
    refused(c, env, "speaks TLS on that port: set DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH");
}

} // namespace
