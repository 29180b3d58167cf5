// Where the docker backend finds its engine: DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH and the
// selected docker context read as the docker CLI reads them, --docker-host over DOCKER_HOST, and the
// refusals (unverified TLS, plain TCP to the TLS port). The TLS files themselves are read by the backend;
// tests/e2e/docker_tls_test.cpp covers those.
#include "contracts/digest.hpp"
#include "in_container/fixture.hpp"
#include "relay/cli/options.hpp"
#include "relay/engine/engine_endpoint.hpp"

#include <fstream>
#include <map>
#include <string>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::relay;

// The environment the resolver sees (a plain function pointer cannot capture).
std::map<std::string, std::string>& environment() {
    static std::map<std::string, std::string> values;
    return values;
}
std::optional<std::string> lookup(const char* name) {
    const auto found = environment().find(name);
    return found == environment().end() ? std::nullopt : std::optional<std::string>(found->second);
}

boost::system::result<engine_endpoint, relay_error> resolve(std::map<std::string, std::string> env,
                                                            std::optional<std::string> flag = std::nullopt) {
    environment() = std::move(env);
    return resolve_engine_endpoint(flag, &lookup);
}

std::string error_of(std::map<std::string, std::string> env, std::optional<std::string> flag = std::nullopt) {
    const auto resolved = resolve(std::move(env), std::move(flag));
    return resolved ? std::string("ok: ") + resolved->url() : resolved.error().message;
}

void touch(const std::filesystem::path& path) {
    std::ofstream(path) << "x";
}

TEST_CASE("without TLS: the local socket by default, unix:// and tcp:// as given, host:port as tcp") {
    auto local = resolve({});
    REQUIRE(local.has_value());
    CHECK(local->transport == engine_transport::unix_socket);
    CHECK(local->url() == "unix:///var/run/docker.sock");

    auto socket = resolve({{"DOCKER_HOST", "unix:///run/user/1000/docker.sock"}});
    REQUIRE(socket.has_value());
    CHECK(socket->path == "/run/user/1000/docker.sock");

    auto tcp = resolve({{"DOCKER_HOST", "tcp://engine.example:2375"}});
    REQUIRE(tcp.has_value());
    CHECK(tcp->transport == engine_transport::tcp);
    CHECK(tcp->host == "engine.example");
    CHECK(tcp->port == "2375");

    // As the CLI: no scheme means tcp, no port means 2375, no host means localhost, a trailing / is fine.
    CHECK(error_of({{"DOCKER_HOST", "10.0.0.7:4243"}}) == "ok: tcp://10.0.0.7:4243");
    CHECK(error_of({{"DOCKER_HOST", "tcp://10.0.0.7"}}) == "ok: tcp://10.0.0.7:2375");
    CHECK(error_of({{"DOCKER_HOST", "tcp://:2375/"}}) == "ok: tcp://localhost:2375");
    CHECK(error_of({{"DOCKER_HOST", "tcp://[::1]:2375"}}) == "ok: tcp://[::1]:2375");
    CHECK(error_of({{"DOCKER_HOST", " tcp://10.0.0.7:1 "}}) == "ok: tcp://10.0.0.7:1");
    // An empty DOCKER_HOST is unset.
    CHECK(error_of({{"DOCKER_HOST", ""}}) == "ok: unix:///var/run/docker.sock");
}

TEST_CASE("--docker-host wins over DOCKER_HOST") {
    CHECK(error_of({{"DOCKER_HOST", "tcp://a:1"}}, "tcp://b:2") == "ok: tcp://b:2");
    CHECK(error_of({{"DOCKER_HOST", "tcp://a:1"}}, "unix:///s") == "ok: unix:///s");
}

TEST_CASE("malformed or unsupported engine addresses are errors that say what to write") {
    CHECK(error_of({{"DOCKER_HOST", "ssh://me@host"}}).find("ssh:// is not supported") != std::string::npos);
    CHECK(error_of({{"DOCKER_HOST", "npipe:////./pipe/docker_engine"}}).find("not supported") !=
          std::string::npos);
    CHECK(error_of({{"DOCKER_HOST", "unix://"}}) == "DOCKER_HOST unix://: unix:// needs the socket's path");
    CHECK(
        error_of({{"DOCKER_HOST", "tcp://h:99999"}}).ends_with("the port must be a number from 1 to 65535"));
    CHECK(error_of({{"DOCKER_HOST", "tcp://h:0"}}).ends_with("the port must be a number from 1 to 65535"));
    CHECK(error_of({{"DOCKER_HOST", "tcp://h:23x"}}).ends_with("the port must be a number from 1 to 65535"));
    CHECK(error_of({{"DOCKER_HOST", "tcp://h:1/v1.41"}})
              .ends_with("a path after the address is not supported"));
    CHECK(error_of({{"DOCKER_HOST", "tcp://::1:2375"}}).find("in brackets") != std::string::npos);
    CHECK(error_of({{"DOCKER_HOST", "tcp://[::1"}}).find("closing ]") != std::string::npos);
    for (const std::string host : {"tcp://a b:1", "tcp://[abc]:1", "tcp://h@st:1", "tcp://[a%]:1"}) {
        CAPTURE(host);
        CHECK(error_of({{"DOCKER_HOST", host}})
                  .ends_with("the host must be a name, an IPv4 address, or an IPv6 address "
                             "in brackets"));
    }
}

TEST_CASE("plain TCP to port 2376 is refused with the hint to turn on TLS") {
    const auto message = error_of({{"DOCKER_HOST", "tcp://engine.example:2376"}});
    CHECK(message.starts_with("DOCKER_HOST tcp://engine.example:2376: port 2376 is the engine's TLS port"));
    CHECK(message.find("DOCKER_TLS_VERIFY=1") != std::string::npos);
    CHECK(message.find("DOCKER_CERT_PATH") != std::string::npos);
}

TEST_CASE("DOCKER_TLS_VERIFY (any value) turns on TLS with the files of DOCKER_CERT_PATH") {
    maka_eval::test::scratch certs;
    touch(certs.path() / "cert.pem");
    touch(certs.path() / "key.pem");
    for (const std::string value : {"1", "0", "yes"}) { // as the CLI: set and non-empty is on
        auto tls = resolve({{"DOCKER_HOST", "tcp://engine.example:2376"},
                            {"DOCKER_TLS_VERIFY", value},
                            {"DOCKER_CERT_PATH", certs.path().string()}});
        REQUIRE(tls.has_value());
        CHECK(tls->transport == engine_transport::tls);
        CHECK(tls->tls.ca == (certs.path() / "ca.pem").string()); // checked when read, by the backend
        CHECK(tls->tls.cert == (certs.path() / "cert.pem").string());
        CHECK(tls->tls.key == (certs.path() / "key.pem").string());
    }
    // An empty DOCKER_TLS_VERIFY is unset: plain TCP (to a port that is not 2376).
    auto plain = resolve({{"DOCKER_HOST", "tcp://e:2375"}, {"DOCKER_TLS_VERIFY", ""}});
    REQUIRE(plain.has_value());
    CHECK(plain->transport == engine_transport::tcp);
    // With TLS and no DOCKER_HOST: localhost's TLS port, as the CLI.
    CHECK(error_of({{"DOCKER_TLS_VERIFY", "1"}, {"DOCKER_CERT_PATH", certs.path().string()}}) ==
          "ok: tcp://localhost:2376");
    // A unix socket ignores the TLS settings.
    auto local = resolve({{"DOCKER_HOST", "unix:///s"}, {"DOCKER_TLS_VERIFY", "1"}});
    REQUIRE(local.has_value());
    CHECK(local->transport == engine_transport::unix_socket);
}

TEST_CASE("the certificate directory: DOCKER_CERT_PATH, else DOCKER_CONFIG, else ~/.docker") {
    const std::map<std::string, std::string> base{{"DOCKER_HOST", "tcp://e:2376"},
                                                  {"DOCKER_TLS_VERIFY", "1"}};
    auto with = [&](std::map<std::string, std::string> more) {
        more.insert(base.begin(), base.end());
        auto resolved = resolve(std::move(more));
        REQUIRE(resolved.has_value());
        return resolved->tls.ca;
    };
    CHECK(with({{"DOCKER_CERT_PATH", "/certs"}, {"DOCKER_CONFIG", "/config"}, {"HOME", "/home/u"}}) ==
          "/certs/ca.pem");
    CHECK(with({{"DOCKER_CONFIG", "/config"}, {"HOME", "/home/u"}}) == "/config/ca.pem");
    CHECK(with({{"HOME", "/home/u"}}) == "/home/u/.docker/ca.pem");
}

TEST_CASE("a client certificate that is not there is not sent (as the CLI), half of one is an error") {
    maka_eval::test::scratch certs;
    const std::map<std::string, std::string> env{{"DOCKER_HOST", "tcp://e:2376"},
                                                 {"DOCKER_TLS_VERIFY", "1"},
                                                 {"DOCKER_CERT_PATH", certs.path().string()}};
    auto none = resolve(env);
    REQUIRE(none.has_value());
    CHECK(none->tls.cert.empty());
    CHECK(none->tls.key.empty());
    touch(certs.path() / "cert.pem");
    CHECK(error_of(env).ends_with("key.pem is not: the client certificate needs both"));
}

// A docker CLI context as `docker context create NAME --docker host=HOST[,ca=…,cert=…,key=…]` writes it.
void write_context(const std::filesystem::path& config, const std::string& name, const std::string& host,
                   bool tls_files, bool skip_verify = false) {
    const auto id = maka_eval::contracts::sha256_hex(name);
    std::filesystem::create_directories(config / "contexts" / "meta" / id);
    std::ofstream(config / "contexts" / "meta" / id / "meta.json")
        << R"({"Name":")" << name << R"(","Metadata":{},"Endpoints":{"docker":{"Host":")" << host
        << R"(","SkipTLSVerify":)" << (skip_verify ? "true" : "false") << "}}}";
    if (tls_files) {
        const auto tls = config / "contexts" / "tls" / id / "docker";
        std::filesystem::create_directories(tls);
        for (const char* file : {"ca.pem", "cert.pem", "key.pem"}) {
            touch(tls / file);
        }
    }
}

TEST_CASE("the docker CLI's selected context names the engine when no host is given") {
    maka_eval::test::scratch config;
    write_context(config.path(), "engine-3", "tcp://engine-3.example:2376", true);
    write_context(config.path(), "plain", "tcp://10.1.2.3:2375", false);
    const std::string dir = config.path().string();
    const auto tls_dir =
        config.path() / "contexts" / "tls" / maka_eval::contracts::sha256_hex("engine-3") / "docker";

    auto chosen = resolve({{"DOCKER_CONFIG", dir}, {"DOCKER_CONTEXT", "engine-3"}});
    REQUIRE(chosen.has_value());
    CHECK(chosen->url() == "tcp://engine-3.example:2376");
    CHECK(chosen->transport == engine_transport::tls); // its TLS files are there: verified, client cert sent
    CHECK(chosen->tls.ca == (tls_dir / "ca.pem").string());
    CHECK(chosen->tls.key == (tls_dir / "key.pem").string());
    CHECK(chosen->context == "engine-3");

    // config.json's currentContext when DOCKER_CONTEXT is not set; a context without TLS files is plain TCP.
    std::ofstream(config.path() / "config.json") << R"({"auths":{},"currentContext":"plain"})";
    auto current = resolve({{"DOCKER_CONFIG", dir}});
    REQUIRE(current.has_value());
    CHECK(current->transport == engine_transport::tcp);
    CHECK(current->url() == "tcp://10.1.2.3:2375");

    // A host named by DOCKER_HOST or --docker-host wins; "default" is the environment's rules.
    CHECK(error_of({{"DOCKER_CONFIG", dir}, {"DOCKER_HOST", "tcp://h:1"}}) == "ok: tcp://h:1");
    CHECK(error_of({{"DOCKER_CONFIG", dir}}, "unix:///s") == "ok: unix:///s");
    CHECK(error_of({{"DOCKER_CONFIG", dir}, {"DOCKER_CONTEXT", "default"}}) ==
          "ok: unix:///var/run/docker.sock");
    // As the CLI: the TLS variables do not override a selected context.
    CHECK(error_of({{"DOCKER_CONFIG", dir}, {"DOCKER_TLS_VERIFY", "1"}}) == "ok: tcp://10.1.2.3:2375");
}

TEST_CASE("a context that is missing, skips verification or sends plain TCP to 2376 is refused, by name") {
    maka_eval::test::scratch config;
    write_context(config.path(), "lax", "tcp://e:2376", true, true);
    write_context(config.path(), "bare", "tcp://e:2376", false);
    const std::string dir = config.path().string();
    CHECK(error_of({{"DOCKER_CONFIG", dir}, {"DOCKER_CONTEXT", "gone"}})
              .starts_with("docker context gone (selected by DOCKER_CONTEXT) does not exist"));
    std::ofstream(config.path() / "config.json") << R"({"currentContext":"gone"})";
    CHECK(error_of({{"DOCKER_CONFIG", dir}})
              .starts_with("docker context gone (selected by " + dir + "/config.json) does not exist"));
    CHECK(error_of({{"DOCKER_CONFIG", dir}, {"DOCKER_CONTEXT", "lax"}})
              .starts_with(
                  "docker context lax (SkipTLSVerify) asks for TLS without checking who the engine is"));
    CHECK(error_of({{"DOCKER_CONFIG", dir}, {"DOCKER_CONTEXT", "bare"}})
              .find("port 2376 is the engine's TLS port") != std::string::npos);
    std::ofstream(config.path() / "config.json") << "{not json";
    CHECK(error_of({{"DOCKER_CONFIG", dir}}) == dir + "/config.json is not a JSON object");
}

TEST_CASE("TLS without verification is refused: credentials go over this connection") {
    const auto message = error_of({{"DOCKER_HOST", "tcp://e:2376"}, {"DOCKER_TLS", "1"}});
    CHECK(message.starts_with("DOCKER_TLS without DOCKER_TLS_VERIFY"));
    CHECK(message.find("set DOCKER_TLS_VERIFY=1") != std::string::npos);
}

TEST_CASE("the docker backend resolves its engine when the command line is parsed, other backends never do") {
    environment() = {{"DOCKER_HOST", "tcp://e:2376"}, {"HOME", "/nonexistent-maka-eval-test-home"}};
    const std::vector<std::string_view> docker{"--env", "docker:c", "--", "true"};
    const auto refused = parse_run(docker, &lookup);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().code == relay_errc::usage);
    // The local backend does not care where an engine would be.
    const std::vector<std::string_view> local{"--", "true"};
    CHECK(parse_run(local, &lookup).has_value());
    const std::vector<std::string_view> flag{"--env",        "docker:c", "--docker-host",
                                             "tcp://f:2375", "--",       "true"};
    const auto parsed = parse_run(flag, &lookup);
    REQUIRE(parsed.has_value());
    CHECK(parsed->common.engine.url() == "tcp://f:2375");
    const std::vector<std::string_view> misplaced{"--docker-host", "tcp://f:2375", "--", "true"};
    const auto wrong = parse_run(misplaced, &lookup);
    REQUIRE_FALSE(wrong.has_value());
    CHECK(wrong.error().message.starts_with("--docker-host is for the docker backend"));
}

} // namespace
