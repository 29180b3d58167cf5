// An engine that accepts and never answers, at the OS edge: a real unix socket whose peer reads every
// request and says nothing. The relay must neither hang on it nor keep a SIGTERM waiting.
#include "relay/support/exit_codes.hpp"
#include "relay/trial_fixture.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <poll.h>
#include <string_view>
#include <sys/socket.h>
#include <sys/un.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval;
using namespace maka_eval::test;
namespace fs = std::filesystem;

// What the peer on the socket does with a request.
enum class peer_kind {
    silent,           // reads it and never writes a byte
    not_found,        // answers HTTP 404 to everything
    pings_no_version, // 404, but "OK" to /_ping — without the Api-Version header every engine sends
};

// Listens on a unix socket, accepts every connection and reads whatever comes, answering as `kind` says.
class stalled_engine {
  public:
    explicit stalled_engine(peer_kind kind = peer_kind::silent) : kind_(kind) {
        listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        REQUIRE(listener_ >= 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        const auto text = path_.string();
        REQUIRE(text.size() < sizeof address.sun_path);
        text.copy(address.sun_path, text.size());
        // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API takes sockaddr*
        REQUIRE(::bind(listener_, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
        REQUIRE(::listen(listener_, 16) == 0);
        thread_ = std::thread([this] { serve(); });
    }
    ~stalled_engine() {
        stop_ = true;
        thread_.join();
        for (const int fd : peers_) {
            ::close(fd);
        }
        ::close(listener_);
        fs::remove(path_);
    }
    stalled_engine(const stalled_engine&) = delete;
    stalled_engine& operator=(const stalled_engine&) = delete;

    [[nodiscard]] std::string url() const { return "unix://" + path_.string(); }
    // Whether a request's bytes arrived (the relay is now waiting for an answer).
    [[nodiscard]] bool asked() const { return asked_; }

  private:
    void serve() {
        while (!stop_) {
            std::vector<pollfd> fds{{listener_, POLLIN, 0}};
            for (const int fd : peers_) {
                fds.push_back({fd, POLLIN, 0});
            }
            if (::poll(fds.data(), fds.size(), 50) <= 0) {
                continue;
            }
            if ((fds[0].revents & POLLIN) != 0) {
                const int peer = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
                if (peer >= 0) {
                    peers_.push_back(peer);
                }
            }
            for (std::size_t i = 1; i < fds.size(); ++i) {
                if ((fds[i].revents & (POLLIN | POLLHUP)) != 0) {
                    char buffer[4096];
                    const auto got = ::read(fds[i].fd, buffer, sizeof buffer);
                    if (got > 0) {
                        asked_ = true;
                        if (kind_ != peer_kind::silent) {
                            const std::string_view request(buffer, static_cast<std::size_t>(got));
                            const bool ping = kind_ == peer_kind::pings_no_version &&
                                              request.find("/_ping ") != std::string_view::npos;
                            const std::string_view reply =
                                ping ? "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nOK"
                                     : "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: "
                                       "close\r\n\r\nnot found";
                            (void)::write(fds[i].fd, reply.data(), reply.size());
                            ::shutdown(fds[i].fd, SHUT_RDWR);
                        }
                    }
                }
            }
        }
    }

    fs::path path_ = fs::temp_directory_path() / ("stalled-engine-" + std::to_string(::getpid()) + ".sock");
    int listener_ = -1;
    std::vector<int> peers_;
    peer_kind kind_;
    std::atomic<bool> stop_{false};
    std::atomic<bool> asked_{false};
    std::thread thread_;
};

TEST_CASE("an engine that never answers: the trial fails after --engine-timeout-ms, saying so") {
    const stalled_engine engine;
    const auto begun = std::chrono::steady_clock::now();
    trial t(subject({"--hold"}, "exit 0"),
            {"--env", "docker:task", "--docker-host", engine.url(), "--engine-timeout-ms", "700"});
    const auto o = t.finish();
    CHECK(std::chrono::steady_clock::now() - begun < std::chrono::seconds(10));
    CHECK(o.exit_code == relay::exit_environment);
    INFO(o.relay_log);
    CHECK(o.relay_log.find(": no answer to GET /containers/task/json within 700 ms (--engine-timeout-ms)") !=
          std::string::npos);
    CHECK(o.transcript.at("ready").is_null()); // the orchestrator never heard of a trial that cannot run
}

TEST_CASE("SIGTERM while the engine stalls: honoured at once, not after the engine's timeout") {
    const stalled_engine engine;
    trial t(subject({"--hold"}, "exit 0"),
            {"--env", "docker:task", "--docker-host", engine.url(), "--teardown-timeout-ms", "2000"});
    REQUIRE(eventually([&] { return engine.asked(); }, 10000));
    const auto begun = std::chrono::steady_clock::now();
    t.signal(SIGTERM);
    const auto o = t.finish();
    // The default engine timeout is 30 s: only the signal can end the trial this soon.
    CHECK(std::chrono::steady_clock::now() - begun < std::chrono::seconds(2));
    CHECK(o.exit_code == relay::exit_cancelled);
    INFO(o.relay_log);
    CHECK(o.relay_log.find("cancelled before the subject started") != std::string::npos);
    CHECK(o.transcript.at("executed").is_null());
}

TEST_CASE(
    "a peer that answers 404 to everything is said not to be a Docker engine, not a missing container") {
    const stalled_engine peer(peer_kind::not_found);
    trial t(subject({"--hold"}, "exit 0"), {"--env", "docker:task", "--docker-host", peer.url()});
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_environment);
    INFO(o.relay_log);
    CHECK(o.relay_log.find("is not a Docker engine (GET /_ping answered HTTP 404)") != std::string::npos);
    CHECK(o.relay_log.find("does not exist") == std::string::npos);
}

TEST_CASE("a web server that answers OK to /_ping but sends no Api-Version is not taken for an engine") {
    const stalled_engine peer(peer_kind::pings_no_version);
    trial t(subject({"--hold"}, "exit 0"), {"--env", "docker:task", "--docker-host", peer.url()});
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_environment);
    INFO(o.relay_log);
    CHECK(o.relay_log.find("is not a Docker engine (GET /_ping answered HTTP 200 without an Api-Version "
                           "header)") != std::string::npos);
    CHECK(o.relay_log.find("does not exist") == std::string::npos);
}

} // namespace
